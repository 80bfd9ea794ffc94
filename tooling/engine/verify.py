"""The rule's verifier, where OpenTofu runs: before a unit is planned and before it is applied.

One call per path: :func:`before_plan` (the per-unit planner's ``prepare``, so
drift and the apply's re-plans too), :func:`verify_many` (the batch planner,
before its ``run --all``) and :func:`before_apply`. ``invoke plan`` renders all
its units first (:func:`prerender`, beside the preflight); the first two use
those renders once, otherwise each renders the unit now with the pinned
Terragrunt (:func:`before_apply` always does). Two sides per unit:

- ``terragrunt render --format json`` in the unit's folder: the configuration
  OpenTofu will run with (includes, locals, ``generate`` contents, extra
  arguments and their ``env_vars``, ``iam_*``, ``errors``, dependency mocks);
- what the root file and the files ``[check.allowed_generate]`` lists *declare*
  for this unit: worked out by the model (:func:`model_declared`), or, when the
  model cannot be exact, the same render of a file written beside the unit for
  the duration (:data:`DECLARED_CONFIG`) that includes only those files.

Nothing the verifier did not write is ever removed: :data:`DECLARED_CONFIG` is
written only where no file of that name is (one the pipeline left, recognised
by its first line, is replaced), and removed only while it still starts with
that line; a unit folder holding a file of that name that is not the
pipeline's is refused when that file would be needed, naming it. The files
``render --all --write`` leaves are named by a token of their run
(:data:`RENDERED_OUT`), so no file of a user's has their name.

:func:`tooling.core.rules.registry.verify` judges the two (pure: every rule of the
registry that runs at ``Stage.AT_EXECUTION``); a violation refuses the unit with the rule's name, ``file:line`` and the fix. A violation
found against the model's side is judged again against Terragrunt's render of
the declared file (:func:`judged`): the model never refuses a unit on its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import stat
import threading
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

from tooling.core import envsize, executors, rendergroups
from tooling.core.rules import enforce, registry
from tooling.core.rules.rule import UnitFacts
from tooling.core.rules.snapshot import Violation
from tooling.engine import preflight
from tooling.errors import ToolingError
from tooling.io import proc, terragrunt
from tooling.model.declared import declared as declared_by_root
from tooling.model.policy import CheckPolicy, Policy

#: the file written beside a unit for one render: it includes what may declare generated files
DECLARED_CONFIG = ".iac-declared.hcl"
#: the first line of every :data:`DECLARED_CONFIG` the verifier writes: a file of that
#: name without it is not the pipeline's, and is never overwritten or removed
DECLARED_HEADER = (
    "# written by the pipeline's verifier for one `terragrunt render`; removed right after"
)
_LOCK = threading.Lock()
Pair = tuple[dict[str, Any], dict[str, Any]]


def repo_root(run_dir: Path, unit_path: str) -> Path:
    """The repository a unit's run folder belongs to (its folder minus the unit's path)."""
    root = run_dir
    for _ in Path(unit_path).parts:
        root = root.parent
    return root


def declared_text(root_file: str, allowed: Sequence[Path]) -> str:
    """The configuration that declares what a unit may generate: the root file and the
    allowlisted files, included and nothing else."""
    lines = [
        "# written by the pipeline's verifier for one `terragrunt render`; removed right after",
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


def _sources(run_dir: Path, root: Path) -> dict[str, str]:
    """The unit's file and the .hcl files of the folders above it (to name lines)."""
    out: dict[str, str] = {}
    folder = run_dir
    while True:
        for f in sorted(folder.glob("*.hcl")) if folder != run_dir else [folder / "terragrunt.hcl"]:
            if f.is_file() and f.name != DECLARED_CONFIG:
                rel = f.relative_to(root).as_posix()
                out[rel] = f.read_text(encoding="utf-8", errors="replace")
        if folder == root or folder.parent == folder:
            break
        folder = folder.parent
    return out


#: the key of a declared configuration the model worked out (:func:`model_declared`)
FROM_MODEL = "iac_from_model"


def model_declared(
    root: Path, unit_path: str, env: Mapping[str, str], policy: Policy
) -> dict[str, Any] | None:
    """What the root file (and the allowlisted files) declare for the unit, worked out by
    the model (:mod:`tooling.model.declared`) instead of a second Terragrunt process;
    None when the model cannot be exact. Marked :data:`FROM_MODEL`: a unit it would
    refuse is judged again against Terragrunt's own render (:func:`judged`)."""
    if not unit_path:
        return None
    files = [policy.layout.root_file] + [
        p.relative_to(root).as_posix() for p in _allowed_files(root, policy.check)
    ]
    # Terragrunt's process sees our environment plus ``env``: the model reads the same
    found = declared_by_root(root, unit_path, files, proc.child_env(env), DECLARED_CONFIG)
    return None if found is None else {**found, FROM_MODEL: True}


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


def _render_declared(
    run_dir: Path, env: Mapping[str, str], declared: str, unit_path: str = ""
) -> dict[str, Any]:
    ref = write_declared(run_dir, declared, unit_path)
    try:
        return terragrunt.render_json(run_dir, env, ref)
    finally:
        remove_declared(ref)


def judged(
    run_dir: Path, pair: Pair, facts: UnitFacts, policy: Policy, env: Mapping[str, str]
) -> list[Violation]:
    """The unit's violations; where the declared side came from the model and finds any,
    Terragrunt renders what the root file declares and that render decides."""
    found = registry.verify(pair[0], pair[1], facts, policy.check)
    if found and pair[1].get(FROM_MODEL):
        # both sides rendered again under one environment (the unit's side may have been
        # rendered before the run armed its working-copy hook)
        root = repo_root(run_dir, facts.path)
        text = _declared_config(root, policy)
        again = (
            terragrunt.render_json(run_dir, env),
            _render_declared(run_dir, env, text, facts.path),
        )
        found = registry.verify(again[0], again[1], facts, policy.check)
    return found


def _render_pair(
    run_dir: Path,
    env: Mapping[str, str],
    declared: str,
    model: dict[str, Any] | None = None,
    unit_path: str = "",
) -> tuple[dict[str, Any], dict[str, Any]]:
    if not run_dir.is_dir():  # a unit deleted since its plan: say so, not a write error
        what = "is not a folder" if run_dir.exists() else "does not exist"
        raise ToolingError(
            f"{run_dir}: the folder terragrunt was to run in {what}; "
            "restore it, or plan again from the current tree"
        )
    if model is not None:  # the model knows what the root file declares: one render
        return terragrunt.render_json(run_dir, env), model
    ref = write_declared(run_dir, declared, unit_path)
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            mine = pool.submit(terragrunt.render_json, run_dir, env)
            theirs = pool.submit(terragrunt.render_json, run_dir, env, ref)
            return mine.result(), theirs.result()
    finally:
        remove_declared(ref)


#: renders made for this run's plans before the first one (:func:`prerender`), each used once
_PRERENDERED: dict[Path, Pair] = {}


def _units_below(folder: str, cap: int) -> int:
    """How many unit folders (holding ``terragrunt.hcl``) ``folder`` holds, counted up to
    one more than ``cap`` (enough to decide); Terragrunt's caches and hidden folders
    are not walked."""
    found = 0
    for _, subdirs, files in os.walk(folder):
        subdirs[:] = [d for d in subdirs if not d.startswith(".")]
        if "terragrunt.hcl" in files:
            found += 1
            if found > cap:
                break
    return found


def render_groups_of(dirs: Sequence[Path]) -> dict[str, list[str]]:
    """The folders one ``render --all`` each starts from (or from a folder below), with
    the unit folders of ``dirs`` (of one tree) each covers: what the verifier renders, and
    so what Terragrunt parses (the scan before Terragrunt reads every unit below them:
    :mod:`tooling.engine.inplay`)."""
    return rendergroups.render_groups(
        [d.resolve().as_posix() for d in dirs],
        partial(_units_below, cap=len(dirs) + rendergroups.SLACK),
    )


def _render_grouped(
    root: Path, dirs: Sequence[Path], env: Mapping[str, str], policy: Policy
) -> dict[Path, Pair]:
    """:func:`render_tree` from the folders :func:`rendergroups.render_groups` picks (one
    unless the common folder holds many units nobody asked for); a group whose render
    fails is left out (its units are then rendered on their own, naming the error)."""
    groups = render_groups_of(dirs)
    out: dict[Path, Pair] = {}
    for members in groups.values():
        with contextlib.suppress(ToolingError):
            out.update(render_tree(root, [Path(m) for m in members], env, policy))
    return out


def render_units(
    units: Sequence[tuple[Path, str]], env: Mapping[str, str], policy: Policy, *, jobs: int
) -> dict[Path, Pair]:
    """Both sides of each ``(run_dir, path)`` unit (its render, what the root file
    declares): one ``render --all`` per folder tree (two when the model cannot work out
    the declared side), then a unit those left without a file on its own (``jobs`` at a time). A unit
    that cannot be rendered is left out (its plan renders it again and names the error)."""
    out: dict[Path, Pair] = {}
    trees: dict[Path, list[Path]] = {}
    for run_dir, path in units:
        if run_dir.is_dir():
            trees.setdefault(repo_root(run_dir, path).resolve(), []).append(run_dir)
    alone: list[tuple[Path, Path]] = []
    for root, dirs in trees.items():
        out.update(_render_grouped(root, dirs, env, policy))
        alone += [(root, d) for d in dirs if d.resolve() not in out]

    def one(item: tuple[Path, Path]) -> tuple[Path, Pair | None]:
        root, run_dir = item
        try:
            unit_path = _unit_path(root, run_dir)
            model = model_declared(root, unit_path, env, policy)
            return run_dir.resolve(), _render_pair(
                run_dir, env, _declared_config(root, policy), model, unit_path
            )
        except ToolingError:
            return run_dir.resolve(), None

    if alone:
        with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(alone)))) as pool:
            for key, pair in pool.map(one, alone):
                if pair is not None:
                    out[key] = pair
    return out


def prerender(
    units: Sequence[tuple[Path, str]], env: Mapping[str, str], policy: Policy, *, jobs: int
) -> dict[Path, Pair]:
    """:func:`render_units`, kept for the plans of this run: each unit's next
    :func:`before_plan` (or batch verification) uses its render once instead of rendering
    again. Plans change no state, so what Terragrunt resolves is the same at the plan.
    Never used on apply, where an upstream's apply may change what a unit resolves."""
    found = render_units(units, env, policy, jobs=jobs)
    with _LOCK:
        _PRERENDERED.update(found)
    return found


def forget_prerendered() -> None:
    """Drop the renders :func:`prerender` kept that no plan used."""
    with _LOCK:
        _PRERENDERED.clear()
        _LOOPS.clear()


#: unit folders whose files read each other in a loop: Terragrunt never returns on them,
#: so no ``render --all`` runs from a folder above one (:func:`avoid_loops`)
_LOOPS: set[Path] = set()


def avoid_loops(unit_dirs: Iterable[Path]) -> None:
    """Render no folder tree holding one of ``unit_dirs`` with ``render --all`` in this run
    (each other unit is rendered on its own instead)."""
    with _LOCK:
        _LOOPS.update(d.resolve() for d in unit_dirs)


def _take(run_dir: Path) -> Pair | None:
    with _LOCK:
        return _PRERENDERED.pop(run_dir.resolve(), None)


def roles_of(
    units: Sequence[tuple[Path, str, str]], renders: Mapping[Path, Pair]
) -> list[tuple[str, str, str | None]]:
    """``(path, tier, role)`` of each rendered unit: the role Terragrunt assumes for it."""
    out: list[tuple[str, str, str | None]] = []
    for run_dir, path, tier in units:
        pair = renders.get(run_dir.resolve())
        if pair is not None:
            out.append((path, tier, enforce.role_of(pair[0])))
    return out


def _renders(
    run_dir: Path, unit_path: str, env: Mapping[str, str], policy: Policy
) -> tuple[Pair, Path]:
    """Both renders of the unit (kept by :func:`prerender`, or made now) and its repository."""
    root = repo_root(run_dir, unit_path)
    kept = _take(run_dir)
    if kept is None:
        declared = _declared_config(root, policy)
        model = model_declared(root, unit_path, env, policy) if run_dir.is_dir() else None
        kept = _render_pair(run_dir, env, declared, model, unit_path)
    return kept, root


def _unit_path(root: Path, run_dir: Path) -> str:
    """The unit's path inside ``root`` ("" when it is not below it: then no model)."""
    try:
        return run_dir.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return ""


def violations(
    run_dir: Path, unit_path: str, tier: str, env: Mapping[str, str], policy: Policy
) -> list[Violation]:
    """The unit's violations of the rule, as Terragrunt resolves its configuration now
    (or as :func:`prerender` found it before this run's first plan)."""
    return _checked(run_dir, unit_path, tier, env, policy)[0]


def _checked(
    run_dir: Path, unit_path: str, tier: str, env: Mapping[str, str], policy: Policy
) -> tuple[list[Violation], dict[str, Any]]:
    """The unit's violations and its render."""
    pair, root = _renders(run_dir, unit_path, env, policy)
    facts = UnitFacts(unit_path, tier, policy.layout.root_file, _sources(run_dir, root))
    return judged(run_dir, pair, facts, policy, env), pair[0]


def _system_limit(name: str, default: int) -> int:
    try:
        value = os.sysconf(name)
    except (ValueError, OSError):
        return default
    return value if value > 0 else default


def environment_problem(
    unit_path: str, rendered: Mapping[str, Any], env: Mapping[str, str]
) -> str | None:
    """Why the unit's inputs (``rendered``'s) cannot be passed to the processes
    Terragrunt starts for it as ``TF_VAR_*`` variables beside ``env`` (and ours), or
    None when they fit (:mod:`tooling.core.envsize`)."""
    inputs = rendered.get("inputs")
    if not isinstance(inputs, dict) or not inputs:
        return None
    # what Terragrunt starts sees ours and ``env``, an input replacing a TF_VAR_ of them
    rest = proc.child_env(env)
    environment = sum(
        envsize.size(f"{k}={v}")
        for k, v in rest.items()
        if not (k.startswith("TF_VAR_") and k.removeprefix("TF_VAR_") in inputs)
    )
    return envsize.problem(
        unit_path,
        inputs,
        environment=environment,
        arg_max=_system_limit("SC_ARG_MAX", 2 * 1024 * 1024),
        max_strlen=32 * _system_limit("SC_PAGE_SIZE", 4096),
    )


def before_plan(
    run_dir: Path, unit_path: str, tier: str, env: Mapping[str, str], policy: Policy
) -> None:
    """Refuse the unit (a :class:`ToolingError` naming each violation) unless it keeps the
    rule, and when its inputs are too large for the environment of a process."""
    found, rendered = _checked(run_dir, unit_path, tier, env, policy)
    if found:
        raise ToolingError(enforce.refusal(unit_path, found))
    too_large = environment_problem(unit_path, rendered, env)
    if too_large is not None:
        raise ToolingError(too_large)


def before_apply(
    run_dir: Path, unit_path: str, tier: str, env: Mapping[str, str], policy: Policy
) -> list[str]:
    """Why the unit may not be applied now (empty: it keeps the rule); always a new render."""
    _take(run_dir)
    try:
        pair, root = _renders(run_dir, unit_path, env, policy)
        rendered = pair[0]
        name = os.environ.get(preflight.ENV_EXECUTOR, "").strip()
        executor = (
            executors.get(policy.executors, name, what=preflight.ENV_EXECUTOR) if name else None
        )
        facts = UnitFacts(unit_path, tier, policy.layout.root_file, _sources(run_dir, root))
        found = judged(run_dir, pair, facts, policy, env)
    except ToolingError as exc:
        return [str(exc)]
    # the role the unit runs as, from this render: the executor's own or allowlisted
    roles = preflight.role_problems(
        [(unit_path, tier, enforce.role_of(rendered))], executor, policy.check
    )
    too_large = environment_problem(unit_path, rendered, env)
    return (
        ([enforce.refusal(unit_path, found)] if found else [])
        + roles
        + ([too_large] if too_large is not None else [])
    )


def verify_many(
    units: Sequence[tuple[Path, str, str]], env: Mapping[str, str], policy: Policy, *, jobs: int
) -> dict[str, str]:
    """Verify ``(run_dir, path, tier)`` units: path -> why it is refused.

    Per folder tree, two Terragrunt processes render every unit at once
    (:func:`render_tree`); a unit either render left without a file is verified
    on its own (:func:`before_plan`, ``jobs`` at a time), which names its error."""
    refused: dict[str, str] = {}
    trees: dict[Path, list[tuple[Path, str, str]]] = {}
    for item in units:
        trees.setdefault(repo_root(item[0], item[1]).resolve(), []).append(item)
    alone: list[tuple[Path, str, str]] = []
    for root, items in trees.items():
        renders = {k: v for k, v in ((i[0].resolve(), _take(i[0])) for i in items) if v}
        missing = [i[0] for i in items if i[0].resolve() not in renders]
        if missing:  # a unit left without a render is verified on its own below
            renders.update(_render_grouped(root, missing, env, policy))
        for run_dir, path, tier in items:
            pair = renders.get(run_dir.resolve())
            if pair is None:
                alone.append((run_dir, path, tier))
                continue
            facts = UnitFacts(path, tier, policy.layout.root_file, _sources(run_dir, root))
            try:
                found = judged(run_dir, pair, facts, policy, env)
            except ToolingError:
                alone.append((run_dir, path, tier))  # verified on its own, which names the error
                continue
            too_large = environment_problem(path, pair[0], env)
            if found:
                refused[path] = enforce.refusal(path, found)
            elif too_large is not None:
                refused[path] = too_large

    def one(item: tuple[Path, str, str]) -> tuple[str, str | None]:
        run_dir, path, tier = item
        try:
            before_plan(run_dir, path, tier, env, policy)
        except ToolingError as exc:
            return path, str(exc)
        return path, None

    if alone:
        workers = max(1, min(jobs, len(alone), os.cpu_count() or 1))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for path, why in pool.map(one, alone):
                if why is not None:
                    refused[path] = why
    return refused


#: the files ``render --all --write`` leaves in every unit folder, named by a token of the
#: run (``{token}``): no earlier run's file is read, and no file of a user's is removed
RENDERED_OUT = ".iac-rendered-{token}.json"
DECLARED_OUT = ".iac-declared-{token}.json"


def render_tree(
    root: Path, run_dirs: Sequence[Path], env: Mapping[str, str], policy: Policy
) -> dict[Path, tuple[dict[str, Any], dict[str, Any]]]:
    """Both sides of every unit in ``run_dirs``: one ``terragrunt render --all`` of the
    units and what the root file declares from the model (:func:`model_declared`), or,
    when the model cannot work it out for every unit, a second ``render --all`` of the
    declared file, in parallel; from the folder holding them all: run dir -> (rendered,
    declared). Every file written for it is removed before it returns, and nothing else."""
    declared = _declared_config(root, policy)
    dirs = [d.resolve() for d in run_dirs]
    # what the root file declares per unit, from the model: then one render --all, not two
    models = {d: model_declared(root, _unit_path(root, d), env, policy) for d in dirs}
    exact = all(m is not None for m in models.values())
    base = Path(os.path.commonpath([str(d) for d in dirs]))
    with _LOCK:
        looping = [d for d in _LOOPS if d.is_relative_to(base)]
    if looping:
        raise ToolingError(
            f"not rendered at once: {looping[0]} reads itself in a loop, on which Terragrunt "
            "never returns; each unit is rendered on its own"
        )
    foreign = [p for p in map(foreign_declared, dirs) if p is not None] if not exact else []
    if foreign:
        raise ToolingError(
            f"not rendered at once: {foreign[0]} is not the pipeline's; each unit is rendered "
            "on its own"
        )
    token = secrets.token_hex(8)
    rendered_out, declared_out = RENDERED_OUT.format(token=token), DECLARED_OUT.format(token=token)
    out: dict[Path, tuple[dict[str, Any], dict[str, Any]]] = {}
    written: list[Path] = []
    try:
        if not exact:
            for d in dirs:
                written.append(write_declared(d, declared, _unit_path(root, d)))
        with ThreadPoolExecutor(max_workers=2) as pool:
            runs = [
                pool.submit(terragrunt.run, terragrunt.render_all_args(rendered_out), base, env)
            ]
            if not exact:
                runs.append(
                    pool.submit(
                        terragrunt.run,
                        terragrunt.render_all_args(declared_out, DECLARED_CONFIG),
                        base,
                        env,
                    )
                )
            for ran in runs:
                ran.result()
        for d in dirs:
            try:
                mine = json.loads((d / rendered_out).read_text(encoding="utf-8"))
                model = models[d]
                theirs = (
                    model
                    if exact and model is not None
                    else json.loads((d / declared_out).read_text(encoding="utf-8"))
                )
            except (OSError, ValueError):
                continue  # verified alone, which names the error
            out[d] = (mine, theirs)
    finally:
        for path in written:
            remove_declared(path)
        _remove_outputs(base, (rendered_out, declared_out))
    return out


def _remove_outputs(base: Path, names: Sequence[str]) -> None:
    """Remove the files named ``names`` (this run's) that a ``render --all --write`` left in
    every unit folder below ``base``."""
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in names:
            if name in filenames:
                (Path(dirpath) / name).unlink(missing_ok=True)
