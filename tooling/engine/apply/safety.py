"""The apply's guards around state: the folder's record, a plan bound to its unit's state,
and what is left when an apply does not finish cleanly (a state OpenTofu could not
save, objects it made that its state does not record). Used by
:mod:`tooling.engine.apply.applier`; the rules are :mod:`tooling.core.apply.binding` and
:mod:`tooling.core.apply.statecheck`.
"""

from __future__ import annotations

import os
import shutil
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from tooling.core.apply import binding, encryption, statecheck
from tooling.core.apply.record import applied_cleanly
from tooling.errors import ToolingError, UsageError
from tooling.io import outdir, terragrunt
from tooling.io.ui import say

CACHE = ".terragrunt-cache"


def plan_backend(plan_file: Path) -> binding.Backend | None:
    """The backend a saved plan records (OpenTofu's plan file: a zip holding ``tfplan``)."""
    try:
        with zipfile.ZipFile(plan_file) as plan:
            data = plan.read(binding.TFPLAN_ENTRY)
        return binding.plan_backend(data)
    except (OSError, KeyError, zipfile.BadZipFile, binding.PlanFormatError) as exc:
        raise ToolingError(
            f"{plan_file}: not an OpenTofu plan file ({exc}); re-plan with `invoke plan`"
        ) from None


def unbound_plan(
    plan_file: Path, shown: str, state_key: str | None, bucket: str | None
) -> str | None:
    """Why the saved plan is not bound to the unit's state (None: it is); ``shown``: the
    plan file as the record names it; ``bucket``: this run's state bucket (None: local).

    An encrypted plan's backend cannot be read without decrypting it: such a plan is
    bound by its digest in summary.json alone (checked before this)."""
    if encryption.is_encrypted(_head(plan_file)):
        return None
    try:
        backend = plan_backend(plan_file)
    except ToolingError as exc:
        return str(exc)
    return binding.backend_problem(shown, backend, state_key, bucket)


def _head(plan_file: Path) -> bytes:
    """The bytes of a plan file, or none when it cannot be read (refused as a plan later)."""
    try:
        return plan_file.read_bytes()
    except OSError:
        return b""


def errored_states(*places: Path) -> list[Path]:
    """Every ``errored.tfstate`` under ``places`` (working copies, plan folders)."""
    found: list[Path] = []
    for place in places:
        if place.is_file() and place.name == statecheck.ERRORED_STATE:
            found.append(place)
        elif place.is_dir():
            found += sorted(place.rglob(statecheck.ERRORED_STATE))
    return found


def unsaved_state(unit_path: str, run_dir: Path, unit_folder: Path) -> str | None:
    """Refuse to apply over a state an earlier apply could not save (its
    ``errored.tfstate`` in the unit's working copy, or its copy in the plan folder)."""
    left = errored_states(run_dir / CACHE, unit_folder / statecheck.ERRORED_STATE)
    if not left:
        return None
    return (
        f"an earlier apply could not save this unit's state: {left[0]} holds it. Push it back first, "
        f"then remove it and re-plan: {statecheck.state_push_command(unit_path, str(left[0]))} "
        f"({statecheck.RUNBOOK_ERRORED})"
    )


def after_failure(
    unit_path: str,
    run_dir: Path,
    unit_folder: Path,
    output: str,
    env: Mapping[str, str],
    *,
    since_ns: int,
) -> tuple[str, bool]:
    """What a failed (or interrupted) apply left that the record must name, and whether
    that is the whole reason: a state OpenTofu could not save (copied into
    ``unit_folder``, the plan folder that is the artifact; the whole reason), else the
    objects it reported done that its state does not record ("": nothing left)."""
    written = [
        p for p in errored_states(run_dir / CACHE) if p.stat().st_mtime_ns >= since_ns - 10**9
    ]
    if written:
        kept = written[-1]
        target = unit_folder / statecheck.ERRORED_STATE
        try:
            unit_folder.mkdir(parents=True, exist_ok=True)
            shutil.copy2(kept, target)
            copy: str | None = str(target)
        except OSError:
            copy = None
        return statecheck.errored_state_reason(unit_path, copy, str(kept), output), True
    done = statecheck.reported_done(output)
    if not done:
        return "", False
    try:
        in_state = terragrunt.state_addresses(run_dir, env)
    except ToolingError as exc:
        return f"could not read the state to check what OpenTofu reported done: {exc}", False
    missing = statecheck.unrecorded(done, in_state)
    return statecheck.unrecorded_reason(unit_path, missing), False


def cut_short_earlier(
    unit_path: str, run_dir: Path, unit_folder: Path, env: Mapping[str, str]
) -> str | None:
    """Refuse to apply a unit again while objects an earlier apply of it reported done
    (its ``apply.log`` in the plan folder) are missing from its state: applying the
    same plan again would create them a second time. None: nothing is missing."""
    log = unit_folder / "apply.log"
    done = statecheck.reported_done(log.read_text(errors="replace")) if log.is_file() else []
    if not done:
        return None
    try:
        missing = statecheck.unrecorded(done, terragrunt.state_addresses(run_dir, env))
    except ToolingError:
        return None  # the apply itself says why the state cannot be read
    if not missing:
        return None
    return (
        "an earlier apply of this unit was cut short (if OpenTofu is still running, wait for it "
        "to finish, then apply again): "
        + statecheck.unrecorded_reason(unit_path, missing)
        + "; record them first, then re-plan"
    )


# ------------------------------------------------------------------ leave nothing behind


def holds_errored_state(path: Path) -> Path | None:
    found = errored_states(path)
    return found[0] if found else None


def clean_runner(root: Path, extra: Iterable[Path]) -> int:
    """Remove what a job leaves on a shared runner (``extra`` folders, ``ROOT/.iac`` and
    every ``.terragrunt-cache`` under ``root``), except a folder holding a state an
    apply could not save, and local state (``.iac/state``): those are kept, and said
    so. Returns how many folders holding an unsaved state were kept."""
    for folder in extra:
        refuse_foreign_plans(folder, root)
    iac = root / ".iac"
    local_state = iac / "state"
    if any(local_state.rglob("*.tfstate")):
        # local state (the embedded default) is state, not a leftover
        say(f"kept {local_state}: it holds local state")
        # and so is the folder's own .gitignore, which keeps that state out of `git status`
        inner = sorted(p for p in iac.iterdir() if p not in (local_state, iac / ".gitignore"))
    else:
        inner = [iac]
    kept = 0
    for target in [*extra, *inner, *working_copies(root)]:
        if not target.exists():
            continue
        errored = holds_errored_state(target)
        if errored is not None:
            kept += 1
            say(
                f"kept {target}: it holds {errored}, a state an apply could not save; push it back "
                f"({statecheck.RUNBOOK_ERRORED}), then remove the folder"
            )
        elif target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
            say(f"removed {target}")
        else:
            target.unlink()
            say(f"removed {target}")
    return kept


def refuse_foreign_plans(folder: Path, root: Path) -> None:
    """Only a plan folder is removed as one: never the repository, a home, a git working
    copy, nor a folder holding what a plan report does not write."""
    why = outdir.protected_reason(folder, root)
    if why is None and folder.is_dir():
        foreign = [
            e
            for e in outdir.foreign_entries(folder, outdir.PLAN_LAYOUT)
            if Path(e).name != statecheck.ERRORED_STATE
        ]
        why = f"it holds {', '.join(foreign)}, which a plan folder does not" if foreign else None
    if why:
        raise UsageError(f"--plans {folder}: {why}; nothing removed. Name the job's plan folder")


def working_copies(root: Path) -> list[Path]:
    """The ``.terragrunt-cache`` folders under ``root`` (not inside one another, nor in
    ``.git`` or ``.iac``, which is handled as a whole)."""
    found: list[Path] = []
    for folder, dirs, _files in os.walk(root):
        if CACHE in dirs:
            found.append(Path(folder) / CACHE)
        dirs[:] = [d for d in dirs if d not in (CACHE, ".git", ".iac", ".venv")]
    return sorted(found)


def settle_killed(raw: Path, default_plan: Path) -> bool:
    """An earlier run was killed while applying a unit (``raw``: OpenTofu's output file,
    whose first line names the plan): did OpenTofu finish?

    The apply kept running (its output goes to a file, it is in its own
    process group) and its output is what it really did: appended to the unit's
    ``apply.log``. True if it applied.
    """
    if not raw.is_file():
        return False
    output = raw.read_text(errors="replace")
    first = output.splitlines()[0] if output else ""
    plan_file = Path(first[len("# plan ") :]) if first.startswith("# plan ") else default_plan
    outdir.append_text(
        plan_file.parent / "apply.log",
        f"(output of an apply whose tool was stopped before it finished)\n{output}\n",
    )
    raw.unlink(missing_ok=True)
    return applied_cleanly(output)
