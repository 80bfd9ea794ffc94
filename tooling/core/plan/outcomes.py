"""The planners' shared decisions about a unit's result, as pure functions.

Both planners (one process per unit, :mod:`tooling.engine.plan.unitplanner`, and one
process for many, :mod:`tooling.engine.plan.batchplanner`) decide the same things the
same way: a target settled without a plan (preset, or refused), a unit not planned
because a dependency failed, and the result once its saved plan has been read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from tooling.core.plan.planjson import PlanSummary
from tooling.core.plan.results import Result
from tooling.core.plan.status import Status
from tooling.core.plan.targets import Target

#: the statuses that stop a unit's dependents from being planned
FAILED = frozenset({Status.ERROR, Status.NOT_PLANNED})


def settled(
    t: Target,
    status: Status,
    error: str | None = None,
    *,
    destroy: bool = False,
    log_file: str | None = None,
) -> Result:
    """The result of ``t`` before (or without) a plan: preset, not planned, or the
    ``error`` a planner starts from and replaces once the plan is read."""
    return Result(
        t.path,
        t.tier,
        t.executor,
        t.change,
        status,
        error=error,
        log_file=log_file,
        destroy=destroy,
        source=t.source,
        gate_class=t.gate_class,
        model_error=t.model_error,
    )


def presets(targets: Sequence[Target]) -> list[Result]:
    """The results of the targets settled before planning (withheld, blocked, excluded,
    refused), in the targets' order; the others are left out."""
    return [settled(t, Status(t.preset), t.preset_reason) for t in targets if t.preset]


def failed_dependency(dependencies: Iterable[str], results: Mapping[str, Result]) -> str | None:
    """The first of ``dependencies`` whose result stops its dependents (failed or not
    planned), or None: a unit with such a dependency is not planned."""
    return next((d for d in dependencies if d in results and results[d].status in FAILED), None)


def dependency_failed(t: Target, failed: str) -> Result:
    """``t`` not planned because its dependency ``failed`` failed (or was not planned)."""
    return settled(
        t, Status.NOT_PLANNED, f"not planned: its dependency {failed} failed", destroy=t.destroy
    )


def from_plan(
    base: Result,
    summary: PlanSummary,
    *,
    plan_file: str | None = None,
    plan_sha256: str | None = None,
    text_file: str | None = None,
    plan_text: str | None = None,
    mocked_dependencies: tuple[str, ...] = (),
    exit_code: int | None = None,
) -> Result:
    """``base`` (a planner's starting ``error``) once the unit's saved plan has been read:
    ``changes`` or ``no-changes``, its counts and summary, and the files kept for it."""
    return replace(
        base,
        status=Status.CHANGES if summary.has_changes else Status.NO_CHANGES,
        counts=summary.counts,
        summary=summary,
        error=None,
        plan_file=plan_file,
        plan_sha256=plan_sha256,
        text_file=text_file,
        plan_text=plan_text,
        mocked_dependencies=mocked_dependencies,
        exit_code=exit_code,
    )


def protected_reason(path: str) -> str:
    """Why a deleted unit has no destroy plan: its own ``prevent_destroy``."""
    return (
        f"not destroyed: {path}/terragrunt.hcl sets prevent_destroy = true (at the base "
        "revision), so Terragrunt refuses to destroy it. To destroy it, first merge a change "
        "that removes prevent_destroy, apply that, then delete the unit; otherwise restore the unit"
    )
