"""What ``invoke plan`` plans, as data. Pure: no git, no state store, no files.

:func:`select_targets` turns the head model, the affected set and the options
into :class:`Target` records, in DAG order, deleted units (planned as destroys
from the base revision) first. Whether a moved unit must wait for its state to
be migrated needs the state stores, so the caller works that out first and
passes the answer in ``blocked_moves``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from tooling.core.plan.affected import Affected
from tooling.core.text.suggest import did_you_mean
from tooling.errors import UsageError
from tooling.model.evaluator import READ_CYCLE
from tooling.model.excludes import excludes
from tooling.model.sources import parse_source
from tooling.model.units import UNRESOLVED_EXECUTOR, UNRESOLVED_GATE, Model, Unit


@dataclass(frozen=True)
class Target:
    """One unit to plan (or to report without planning)."""

    path: str
    tier: str
    executor: str
    change: str  # added | modified | deleted | moved | all | named
    run_dir: Path  # where terragrunt runs (a base worktree for deleted units)
    dependencies: tuple[str, ...] = ()
    # every unit it reads outputs from, directly or through others (DAG order)
    upstream: tuple[str, ...] = ()
    destroy: bool = False
    preset: str | None = None  # withheld | blocked | excluded | error: reported, not planned
    preset_reason: str | None = None
    source: str | None = None
    gate_class: str = "auto"
    model_error: str | None = None  # see :func:`model_refusal`


def unit_target(
    unit: Unit,
    change: str,
    run_dir: Path,
    *,
    upstream: tuple[str, ...] = (),
    preset: str | None = None,
    preset_reason: str | None = None,
    model_error: str | None = None,
) -> Target:
    """The :class:`Target` that plans the model's ``unit`` in ``run_dir``: its tier,
    executor, dependencies, module source and gate as the model reads them."""
    return Target(
        unit.path,
        unit.tier,
        unit.executor,
        change,
        run_dir,
        dependencies=unit.dependencies,
        upstream=upstream,
        preset=preset,
        preset_reason=preset_reason,
        source=unit.source,
        gate_class=unit.gate,
        model_error=model_error,
    )


def model_refusal(unit: Unit) -> str | None:
    """Why the model cannot say what ``unit`` runs, or None. Such a unit fails closed: it is
    planned (and the report says why) but never applied. Two cases: the model could not
    evaluate the unit at all (no gate, no executor), or its module source is ambiguous
    (go-getter could fetch another ref or repository than the one shown)."""
    if unit.executor == UNRESOLVED_EXECUTOR or (unit.error and unit.gate == UNRESOLVED_GATE):
        # unresolved, or routed by its folder ([layout]): planned, never applied
        return unit.error or "the model cannot evaluate the unit"
    if unit.source:
        source = parse_source(unit.source)
        if source.ambiguous:
            return f"{unit.path}: ambiguous module source: {source.note}"
    return None


def unit_arg(raw: str, *, option: str = "--unit") -> str:
    """The unit path a command-line argument names: ``./live/a/b/`` (what tab completion
    writes) is ``live/a/b``. Raises :class:`UsageError` for a path that leaves the
    repository (absolute, or through ``..``) or is empty. Pure."""
    text = raw
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if not parts:
        raise UsageError(f"{option} {raw!r}: empty; give a unit's path, e.g. live/cloud/dns")
    if text.startswith("/") or ".." in parts:
        raise UsageError(
            f"{option} {raw!r}: give the unit's path from the repository root, without '..' "
            "(e.g. live/cloud/dns; see `invoke units`)"
        )
    return "/".join(parts)


def check_options(
    *,
    all_units: bool,
    units: Sequence[str],
    executor: str | None,
    executors: Collection[str],
) -> None:
    """Refuse option combinations that cannot mean what they say. Pure."""
    if all_units and units:
        raise UsageError(
            "--all and --unit exclude each other: drop --all to plan the named units, "
            "or drop --unit to plan every unit"
        )
    if executor is not None and executor not in executors:
        known = ", ".join(sorted(executors)) or "none"
        raise UsageError(
            f"--executor {executor}: not an executor of this repository (known: {known}); "
            "see policy.toml [executors]"
        )


def select_targets(
    model: Model,
    *,
    root: Path,
    all_units: bool,
    units: Sequence[str],
    change: Affected | None,
    executor: str | None,
    on_pr: bool,
    blocked_moves: Collection[str] = (),
    base_root: Path | None = None,
    base_model: Model | None = None,
) -> list[Target]:
    """What to plan: ``--all``, the ``--unit`` paths, or the affected units, for one executor.

    A moved unit in ``blocked_moves`` is reported ``blocked`` (its state must be
    migrated first); on a pull request a unit with ``plan_on_pr = false`` is
    ``withheld``. Raises :class:`UsageError` for a ``--unit`` that is not a unit.
    """
    targets: list[Target] = []
    wanted: dict[str, str] = {}
    if all_units:
        wanted = dict.fromkeys(model.order, "all")
    elif units:
        for raw in units:
            path = unit_arg(raw)
            if path not in model.units:
                hint = did_you_mean(path, model.units) or " See `invoke units`."
                raise UsageError(f"--unit {raw}: no unit at {path}.{hint}")
            wanted[path] = "named"
    elif change is not None:
        wanted = {u.path: u.change for u in change.units if u.change != "deleted"}
    moved_from = {u.path: u.moved_from for u in change.units} if change is not None else {}
    for path in model.order:
        if path not in wanted:
            continue
        unit = model.units[path]
        if executor and unit.executor != executor:
            continue
        preset = reason = None
        if wanted[path] == "moved" and path in blocked_moves:
            old = moved_from.get(path)
            preset = "blocked"
            reason = (
                f"moved from {old}: its state key changes. Migrate the state first "
                f"(`invoke move-unit {old} {path}` does both), or this plan would destroy and recreate everything."
            )
        elif excludes(unit.exclude, "plan"):
            assert unit.exclude is not None
            preset = "excluded"
            reason = (
                f"excluded by {unit.exclude['where']} (actions: {', '.join(unit.exclude['actions'])}): "
                "Terragrunt leaves it out of `run --all plan`"
            )
        elif on_pr and not unit.plan_on_pr:
            preset = "withheld"
            reason = "plan withheld on pull requests (plan_on_pr = false: needs admin-equivalent credentials); planned on main"
        targets.append(
            unit_target(
                unit,
                wanted[path],
                root / path,
                upstream=upstream(model, path),
                preset=preset,
                preset_reason=reason,
                model_error=model_refusal(unit),
            )
        )
    _exclude_dependencies(model, targets)
    if change is not None and not all_units and not units:
        for item in change.units:
            if item.change != "deleted" or (executor and item.executor != executor):
                continue
            base_unit = base_model.units.get(item.path) if base_model else None
            targets.insert(
                0,
                Target(
                    item.path,
                    item.tier,
                    item.executor,
                    "deleted",
                    (base_root or root) / item.path,
                    destroy=True,
                    source=base_unit.source if base_unit else None,
                    gate_class="manual",
                ),
            )
    return targets


def _exclude_dependencies(model: Model, targets: list[Target]) -> None:
    """An excluded unit with ``exclude_dependencies = true`` takes its *direct* dependencies in
    the same run out of it too (as Terragrunt 1.1.3 does)."""
    index = {t.path: i for i, t in enumerate(targets)}
    for t in list(targets):
        exclude = model.units[t.path].exclude
        if t.preset != "excluded" or not exclude or not exclude.get("exclude_dependencies"):
            continue
        for dep in model.units[t.path].dependencies:
            i = index.get(dep)
            if i is not None and targets[i].preset is None:
                targets[i] = replace(
                    targets[i],
                    preset="excluded",
                    preset_reason=(
                        f"excluded: a dependency of {t.path}, whose exclude block "
                        f"({exclude['where']}) sets exclude_dependencies"
                    ),
                )


def upstream(model: Model, path: str) -> tuple[str, ...]:
    """Every unit ``path`` reads outputs from, directly or through others, in DAG order."""
    seen = model.upstream(path)
    return tuple(p for p in model.order if p in seen)


def waves(targets: Sequence[Target]) -> list[list[Target]]:
    """Split ``targets`` (in DAG order) into runs that may each go through one Terragrunt process.

    Within one ``run --all``, Terragrunt orders a unit after the units it depends
    on through a chain of units *in that run*. A unit that reads a target through
    units outside the run (gitops -> os -> vms, with only vms and gitops
    changed) is not ordered: resolving its dependencies' outputs runs OpenTofu
    in the target's working folder while the target is being planned there.
    Such a unit goes into a later wave, which starts when the earlier ones
    have finished.
    """
    members = {t.path: t for t in targets}
    wave: dict[str, int] = {}
    for t in targets:
        chained: set[str] = set()
        stack = [d for d in t.dependencies if d in members]
        while stack:
            dep = stack.pop()
            if dep not in chained:
                chained.add(dep)
                stack.extend(d for d in members[dep].dependencies if d in members)
        level = 0
        for up in t.upstream:
            if up in wave:
                level = max(level, wave[up] if up in chained else wave[up] + 1)
        wave[t.path] = level
    out: list[list[Target]] = [[] for _ in range(max(wave.values(), default=-1) + 1)]
    for t in targets:
        out[wave[t.path]].append(t)
    return out


def never_run_loops(targets: Sequence[Target], model: Model) -> list[Target]:
    """``targets``, with each unit whose files read each other in a loop (the model's
    :data:`~tooling.model.evaluator.READ_CYCLE` error) settled as an ``error`` that names
    the loop: Terragrunt would evaluate it without end, and hold up every other unit of
    the run. Its dependents are then not planned; independent units are."""
    out = []
    for t in targets:
        unit = model.units.get(t.path)
        error = unit.error if unit is not None and not t.destroy and not t.preset else None
        if error and READ_CYCLE in error:
            t = replace(t, preset="error", preset_reason=f"not run: {error}")
        out.append(t)
    return out


def tree_root(t: Target) -> Path | None:
    """The folder tree ``t`` lives in: its run folder minus the unit's path (None when
    the run folder does not end with it)."""
    parts = Path(t.path).parts
    if not parts or t.run_dir.parts[-len(parts) :] != parts:
        return None
    return t.run_dir.parents[len(parts) - 1]
