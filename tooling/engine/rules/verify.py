"""The rule's verifier: each unit's static form before its Terragrunt process starts, and
what the root file declares for it (the guard's side).

Two halves, both before any Terragrunt process of the unit:

- **the unit's static form** (:func:`static_forms`; the same one ``invoke check``
  judges: its file and the files it reads merged, literals as values, anything
  computed as its expression) judged by every rule of the registry that runs at
  ``Stage.AT_EXECUTION`` (:func:`tooling.core.rules.registry.verify`): the blocks and
  attributes that decide how Terragrunt runs OpenTofu (``generate``, ``remote_state``,
  ``extra_arguments``, ``iam_*``, ``errors``, hooks, dependency mocks,
  ``terraform_binary``...). Something computed where the rule needs a literal is
  refused, never guessed: a value that is one thing when a picture is taken and
  another when the plan runs cannot pass. One call per path: :func:`before_plan` (the
  per-unit planner's ``prepare``, so drift and the apply's re-plans too),
  :func:`verify_many` (the batch planner) and :func:`before_apply`. ``invoke plan``
  and ``drift`` work the forms out once for all their units (:func:`expect_forms`).
- **what the root file declares for the unit** (:func:`declared_sides`): its
  generated files and its state backend, which the guard compares with the working
  copy and with the backend OpenTofu recorded (:mod:`tooling.engine.rules.execguard`). The
  repository's model works it out (:func:`model_declared`); when it cannot be exact,
  ``terragrunt render`` of a file written beside the unit for that moment
  (:data:`DECLARED_CONFIG`, including only the root file and the files
  ``[check.allowed_generate]`` lists) does. That render reads none of the unit's own
  configuration.

What Terragrunt then hands to OpenTofu (its arguments, environment, working copy and
backend) is checked by the guard, right before each OpenTofu command
(docs/rules.md, "The point of execution").

Nothing the verifier did not write is ever removed: :data:`DECLARED_CONFIG` is
written only where no file of that name is (one the pipeline left, recognised by its
first line, is replaced), and removed only while it still starts with that line.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tooling.core.ci import executors
from tooling.core.plan import envsize
from tooling.core.rules import enforce, registry
from tooling.core.rules.rule import UnitRender
from tooling.core.rules.snapshot import Snapshot, Violation
from tooling.core.rules.static import static_units
from tooling.engine.rules import preflight
from tooling.errors import ToolingError
from tooling.io import proc, terragrunt
from tooling.model.declared import declared as declared_by_root
from tooling.model.policy import CheckPolicy, Policy
from tooling.model.repo import load
from tooling.model.trees import WorkTree
from tooling.model.units import Model

#: the file written beside a unit for one render: it includes what may declare generated files
DECLARED_CONFIG = ".iac-declared.hcl"
#: the first line of every :data:`DECLARED_CONFIG` the verifier writes: a file of that
#: name without it is not the pipeline's, and is never overwritten or removed
DECLARED_HEADER = (
    "# written by the pipeline's verifier for one `terragrunt render`; removed right after"
)
_LOCK = threading.Lock()


def repo_root(run_dir: Path, unit_path: str) -> Path:
    """The repository a unit's run folder belongs to (its folder minus the unit's path)."""
    root = run_dir
    for _ in Path(unit_path).parts:
        root = root.parent
    return root


# --------------------------------------------------------------------------- static forms


def _snapshot(root: Path, model: Model, paths: Iterable[str]) -> Snapshot:
    """The files the units ``paths`` read (their own and every ``.hcl`` they include)."""
    files: dict[str, None] = {}
    for path in paths:
        unit = model.units.get(path)
        if unit is None:
            continue
        files[f"{path}/terragrunt.hcl"] = None
        files.update((r, None) for r in unit.reads if r.endswith(".hcl"))
    texts: dict[str, str] = {}
    for rel in files:
        with contextlib.suppress(OSError):
            texts[rel] = (root / rel).read_text(encoding="utf-8", errors="replace")
    return Snapshot.of(texts)


def static_forms(
    root: Path, paths: Sequence[str], policy: Policy, model: Model | None = None
) -> dict[str, UnitRender]:
    """The static form of each unit of ``paths`` (both sides, as ``invoke check`` builds
    them) under ``policy``, from ``model`` (default: the model of the files under ``root``
    now); a unit the model could not read has none (the guard refuses its working copy)."""
    if model is None:
        layout = policy.layout
        model = load(WorkTree(root, layout.live, "", layout.default_tiers))
    wanted = [p for p in paths if p in model.units]
    subset = Model(
        {p: model.units[p] for p in wanted}, tuple(p for p in model.order if p in wanted)
    )
    snap = _snapshot(root, model, wanted)
    return {
        form.facts.path: form
        for form in static_units(subset, policy.check, snap, policy.layout.root_file)
    }


#: the static forms :func:`expect_forms` worked out for this run's plans, each used once
_EXPECTED: dict[Path, UnitRender] = {}


def expect_forms(
    targets: Iterable[tuple[Path, str]], model: Model, root: Path, policy: Policy
) -> dict[str, UnitRender]:
    """Work out the static form of each ``(run_dir, path)`` unit once, with the run's
    ``model``: the next :func:`before_plan` (or batch verification) of the unit uses it."""
    items = list(targets)
    forms = static_forms(root, [p for _, p in items], policy, model)
    with _LOCK:
        for run_dir, path in items:
            if path in forms:
                _EXPECTED[run_dir.resolve()] = forms[path]
    return forms


def forget_forms() -> None:
    """Drop the forms :func:`expect_forms` kept that no plan used."""
    with _LOCK:
        _EXPECTED.clear()


def _form(run_dir: Path, unit_path: str, policy: Policy) -> UnitRender | None:
    with _LOCK:
        kept = _EXPECTED.pop(run_dir.resolve(), None)
    if kept is not None:
        return kept
    if not run_dir.is_dir():  # a unit deleted since its plan: say so, not a read error
        what = "is not a folder" if run_dir.exists() else "does not exist"
        raise ToolingError(
            f"{run_dir}: the folder terragrunt was to run in {what}; "
            "restore it, or plan again from the current tree"
        )
    return static_forms(repo_root(run_dir, unit_path), [unit_path], policy).get(unit_path)


def violations(
    run_dir: Path, unit_path: str, tier: str, env: Mapping[str, str], policy: Policy
) -> list[Violation]:
    """The unit's violations of the rule, on its static form (none when the model could
    not read it: its working copy is refused by the guard). ``tier`` and ``env`` are the
    plan's: the static form reads neither (a unit's tier is the model's)."""
    form = _form(run_dir, unit_path, policy)
    if form is None:
        return []
    return registry.verify(form.rendered, form.declared, form.facts, policy.check)


def roles_of(
    units: Sequence[tuple[str, str]], forms: Mapping[str, UnitRender]
) -> list[tuple[str, str, str | None]]:
    """``(path, tier, role)`` of each ``(path, tier)`` unit: the role its static form
    assumes (``iam_role``; computed: its expression, which no pattern allows)."""
    out: list[tuple[str, str, str | None]] = []
    for path, tier in units:
        form = forms.get(path)
        if form is not None:
            out.append((path, tier, shown_role(enforce.role_of(form.rendered))))
    return out


#: how a role computed when Terragrunt runs is named (no pattern allows it)
COMPUTED_ROLE = "<computed when Terragrunt runs>"


def shown_role(role: str | None) -> str | None:
    """A static form's role as a message names it: an expression is never taken on trust."""
    return COMPUTED_ROLE if role is not None and role.startswith("${") else role


def before_plan(
    run_dir: Path, unit_path: str, tier: str, env: Mapping[str, str], policy: Policy
) -> None:
    """Refuse the unit (a :class:`ToolingError` naming each violation) unless it keeps the
    rule."""
    found = violations(run_dir, unit_path, tier, env, policy)
    if found:
        raise ToolingError(enforce.refusal(unit_path, found))


def before_apply(
    run_dir: Path, unit_path: str, tier: str, env: Mapping[str, str], policy: Policy
) -> list[str]:
    """Why the unit may not be applied now (empty: it keeps the rule): its static form read
    again, and the role it would run as."""
    with _LOCK:
        _EXPECTED.pop(run_dir.resolve(), None)
    try:
        form = _form(run_dir, unit_path, policy)
        name = os.environ.get(preflight.ENV_EXECUTOR, "").strip()
        executor = (
            executors.get(policy.executors, name, what=preflight.ENV_EXECUTOR) if name else None
        )
    except ToolingError as exc:
        return [str(exc)]
    if form is None:
        return []
    found = registry.verify(form.rendered, form.declared, form.facts, policy.check)
    roles = preflight.role_problems(
        [(unit_path, tier, shown_role(enforce.role_of(form.rendered)))], executor, policy.check
    )
    return ([enforce.refusal(unit_path, found)] if found else []) + roles


def verify_many(
    units: Sequence[tuple[Path, str, str]], env: Mapping[str, str], policy: Policy, *, jobs: int = 1
) -> dict[str, str]:
    """Verify ``(run_dir, path, tier)`` units: path -> why it is refused (``jobs``: kept
    for the callers; judging a static form starts no process)."""
    refused: dict[str, str] = {}
    for run_dir, path, tier in units:
        try:
            before_plan(run_dir, path, tier, env, policy)
        except ToolingError as exc:
            refused[path] = str(exc)
    return refused


def _system_limit(name: str, default: int) -> int:
    try:
        value = os.sysconf(name)
    except (ValueError, OSError):
        return default
    return value if value > 0 else default


def too_large(run_dir: Path, unit_path: str, output: str, env: Mapping[str, str]) -> str | None:
    """When a process Terragrunt started for the unit could not start for ``E2BIG`` (read
    in its ``output``): why, naming the input that is too large (from ``terragrunt render``,
    on this failure only: :mod:`tooling.core.plan.envsize`); else None."""
    found = envsize.from_output(unit_path, output)
    if found is None:
        return None
    try:  # the run failed anyway: Terragrunt's render names the input (its mocks' sizes aside)
        inputs = terragrunt.render_json(run_dir, env).get("inputs")
    except ToolingError:
        return found
    if not isinstance(inputs, dict):
        return found
    rest = proc.child_env(env)
    named = envsize.problem(
        unit_path,
        inputs,
        environment=sum(
            envsize.size(f"{k}={v}")
            for k, v in rest.items()
            if k.removeprefix("TF_VAR_") not in inputs
        ),
        arg_max=_system_limit("SC_ARG_MAX", 2 * 1024 * 1024),
        max_strlen=32 * _system_limit("SC_PAGE_SIZE", 4096),
    )
    return named or found


# --------------------------------------------------------------------------- the declared side


def declared_text(root_file: str, allowed: Sequence[Path]) -> str:
    """The configuration that declares what a unit may generate: the root file and the
    allowlisted files, included and nothing else."""
    lines = [
        DECLARED_HEADER,
        f'include "root" {{\n  path = find_in_parent_folders("{root_file}")\n}}',
    ]
    for i, path in enumerate(allowed):
        lines.append(f'include "allowed_{i}" {{\n  path = "{path.as_posix()}"\n}}')
    return "\n".join(lines) + "\n"


def _allowed_files(root: Path, policy: CheckPolicy) -> list[Path]:
    found: list[Path] = []
    for pattern in sorted(policy.allowed_generate):
        found.extend(sorted(p for p in root.glob(pattern) if p.is_file()))
    return found


def _declared_config(root: Path, policy: Policy) -> str:
    """:func:`declared_text` for the repository at ``root`` under ``policy``."""
    return declared_text(policy.layout.root_file, _allowed_files(root, policy.check))


def model_declared(
    root: Path, unit_path: str, env: Mapping[str, str], policy: Policy
) -> dict[str, Any] | None:
    """What the root file (and the allowlisted files) declare for the unit, worked out by
    the model (:mod:`tooling.model.declared`) instead of a Terragrunt process; None when
    the model cannot be exact."""
    if not unit_path:
        return None
    files = [policy.layout.root_file] + [
        p.relative_to(root).as_posix() for p in _allowed_files(root, policy.check)
    ]
    # Terragrunt's process sees our environment plus ``env``: the model reads the same
    return declared_by_root(root, unit_path, files, proc.child_env(env), DECLARED_CONFIG)


def _ours(path: Path) -> bool:
    """``path`` is a regular file (not a link) that starts with :data:`DECLARED_HEADER`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return False
        return fh.read(len(DECLARED_HEADER) + 1) == DECLARED_HEADER.encode() + b"\n"


def foreign_declared(run_dir: Path) -> Path | None:
    """The unit folder's :data:`DECLARED_CONFIG` when there is one the pipeline did not
    write (any kind of file, a link, a folder), else None."""
    path = run_dir / DECLARED_CONFIG
    return path if os.path.lexists(path) and not _ours(path) else None


def _refusal(path: Path, unit_path: str) -> str:
    shown = f"{unit_path}/{DECLARED_CONFIG}" if unit_path else str(path)
    return (
        f"{shown}: the pipeline writes a file of this name beside the unit for one "
        "`terragrunt render`, and this one is not the pipeline's; it is left as it is and "
        "the unit is not planned: rename it (the name is reserved) and plan again"
    )


def write_declared(run_dir: Path, declared: str, unit_path: str = "") -> Path:
    """Write the declared configuration ``declared`` (starting with
    :data:`DECLARED_HEADER`) as the unit folder's :data:`DECLARED_CONFIG`; a file of
    that name the pipeline did not write is a :class:`ToolingError` naming it."""
    if not declared.startswith(DECLARED_HEADER + "\n"):
        raise ValueError("a declared configuration starts with DECLARED_HEADER")
    path = run_dir / DECLARED_CONFIG
    if foreign_declared(run_dir) is not None:
        raise ToolingError(_refusal(path, unit_path))
    # one an interrupted run left is replaced; O_EXCL: a file made meanwhile is not
    path.unlink(missing_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except FileExistsError:
        raise ToolingError(_refusal(path, unit_path)) from None
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(declared)
    return path


def remove_declared(path: Path) -> None:
    """Remove a :data:`DECLARED_CONFIG` this run wrote, only while it is still the
    pipeline's (a file put in its place meanwhile is left)."""
    if _ours(path):
        with contextlib.suppress(OSError):
            path.unlink()


def rendered_declared(
    run_dir: Path, unit_path: str, env: Mapping[str, str], policy: Policy
) -> dict[str, Any]:
    """What the root file declares for the unit, as ``terragrunt render`` of a file that
    includes only the declaring files (written beside the unit for that moment)."""
    root = repo_root(run_dir, unit_path)
    ref = write_declared(run_dir, _declared_config(root, policy), unit_path)
    try:
        return terragrunt.render_json(run_dir, env, ref)
    finally:
        remove_declared(ref)


def declared_sides(
    units: Sequence[tuple[Path, str]], env: Mapping[str, str], policy: Policy, *, jobs: int = 2
) -> dict[str, tuple[dict[str, Any] | None, str | None]]:
    """Per ``(run_dir, path)`` unit: what the root file declares for it (the model's answer,
    else Terragrunt's render of the declaring files), or None and why it could not be
    worked out."""
    out: dict[str, tuple[dict[str, Any] | None, str | None]] = {}
    todo: list[tuple[Path, str]] = []
    for run_dir, path in units:
        if not run_dir.is_dir():
            out[path] = (None, f"{run_dir} does not exist")
            continue
        root = repo_root(run_dir, path)
        found = model_declared(root, path, env, policy)
        if found is not None:
            out[path] = (found, None)
        else:
            todo.append((run_dir, path))

    def one(item: tuple[Path, str]) -> tuple[str, tuple[dict[str, Any] | None, str | None]]:
        run_dir, path = item
        try:
            return path, (rendered_declared(run_dir, path, env, policy), None)
        except ToolingError as exc:
            return path, (None, str(exc))

    if todo:
        with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(todo)))) as pool:
            out.update(pool.map(one, todo))
    return out
