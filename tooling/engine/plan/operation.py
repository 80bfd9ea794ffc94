"""The plan operation (:func:`run_plan`): the units a request names planned in the
report folder its command claimed, and what came of it.

Every mode runs the same steps: what to plan, the refusals and the preflight
(:func:`tooling.engine.plan.prepare.prepared`, which empties the folder once they passed),
the plans with Ctrl-C and SIGTERM forwarded to OpenTofu, whether they were
interrupted. ``plan`` gates the results and writes summary.json (once, with its leg);
``drift`` plans without the lock and keeps no plan; ``app-plan`` is
:mod:`tooling.engine.plan.app`. What the command shows of the outcome (comment.md,
drift.json, the drift issue, the exit code) is the command's.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TypeVar

from tooling.core.apply import binding
from tooling.core.apply.approval import DIFFERS, against_reviewed
from tooling.core.ci import legs
from tooling.core.plan.affected import Affected
from tooling.core.plan.results import Result, with_gates
from tooling.core.plan.status import Status
from tooling.core.plan.summary import LegRecord
from tooling.core.plan.targets import Target, never_run_loops, select_targets, unit_target
from tooling.engine.plan import planfolder, store
from tooling.engine.plan.affected import print_affected, worktree_affected
from tooling.engine.plan.batchplanner import run_batch
from tooling.engine.plan.prepare import prepared
from tooling.engine.plan.request import Mode, PlanContext, PlanOutcome, PlanRequest
from tooling.engine.plan.reviewed import ReviewedPlans
from tooling.engine.plan.unitplanner import Progress, plan_unit, run_all
from tooling.engine.rules import preflight
from tooling.io import backends, git, outdir, proc
from tooling.io.ui import say
from tooling.model.policy import Policy
from tooling.model.units import Change, Model

T = TypeVar("T")


def run_plan(request: PlanRequest, ctx: PlanContext, folder: outdir.ReportDir) -> PlanOutcome:
    """Run ``request`` in ``ctx``, writing into ``folder`` (claimed by the command, which
    writes its views there once this returns). Refusals raise :class:`ToolingError`
    before the folder is emptied; a unit's failure is its result."""
    if request.mode is Mode.APP_PLAN:
        from tooling.engine.plan.app import plan_app

        return plan_app(request, ctx, folder)
    if request.mode is Mode.DRIFT:
        return _drift(request, ctx, folder)
    return _plan(request, ctx, folder)


def _planned(
    ctx: PlanContext,
    folder: outdir.ReportDir,
    targets: Sequence[Target],
    env: Mapping[str, str],
    *,
    jobs: int,
    what: str,
    plan: Callable[[list[Target], dict[str, str]], T],
    meanwhile: AbstractContextManager[object] | None = None,
    models: Mapping[Path, Model] | None = None,
) -> tuple[list[Target], T, bool]:
    """Prepare, plan, and ask whether the run was interrupted: the targets as planned
    (their working copies guarded), what ``plan`` returned for them, and whether Ctrl-C
    or SIGTERM stopped it. ``meanwhile``: held around the plans, once prepared;
    ``models``: the model of each other checkout a target is planned in."""
    # Ctrl-C or SIGTERM from here on: OpenTofu stops gracefully (once), nothing new
    # starts, and the report says the run was interrupted (``what`` names the plans)
    with (
        prepared(ctx, targets, env, folder=folder, jobs=jobs, what=what, models=models) as (
            planned,
            planned_env,
        ),
        meanwhile or nullcontext(),
    ):
        done = plan(planned, planned_env)
    return planned, done, proc.interrupted()


# --------------------------------------------------------------------------- plan


def _plan(request: PlanRequest, ctx: PlanContext, folder: outdir.ReportDir) -> PlanOutcome:
    """``invoke plan``: the affected (or named, or every) unit planned, gated, and
    summary.json written."""
    units = ctx.of_units()
    root, out_dir = ctx.root, folder.path
    started = datetime.now(UTC)
    head_sha = git.rev_parse(root, "HEAD")
    # plans read the working tree: its uncommitted changes are planned, and the report says so
    pending = git.uncommitted(root, units.git_prefix)
    # before any tool runs: the files planned are these, not HEAD's when the tree is dirty
    tree_state = binding.worktree_record(
        *git.worktree_changes(root, besides=out_dir, pending=pending)
    )
    change = _affected(request, ctx, pending)
    base_root: Path | None = None
    base_model: Model | None = None
    worktree: Path | None = None
    if change is not None and any(u.change == "deleted" for u in change.units):
        # a deleted unit's destroy plan runs in the base revision's files
        worktree = git.add_worktree(
            root, root / ".iac" / "worktrees" / change.base[:12], change.base
        )
        base_root = worktree / git.prefix(root)  # the project root inside it
        base_model = units.model_at(change.base)
    on_pr = os.environ.get("GITHUB_EVENT_NAME", "") in ("pull_request", "pull_request_review")
    if change is not None and any(u.change == "moved" for u in change.units):
        preflight.check_state_backend(ctx.settings)  # a moved unit's state is looked up first
    try:
        targets = _targets(
            request, ctx, change, on_pr=on_pr, base_root=base_root, base_model=base_model
        )
        # the base revision's modules too: a deleted unit's destroy plan fetches them
        env = units.environment(t.source for t in targets if t.source) if targets else {}
        if worktree is not None:  # a deleted unit's state where its backend puts it
            top = git.toplevel(root)
            for t in targets:
                if t.destroy:
                    backends.share_repository_state(t.run_dir, worktree.resolve(), top, env)

        def plan(
            targets: list[Target], env: dict[str, str]
        ) -> tuple[list[Result], dict[str, list[str]]]:
            if not targets:
                say("nothing to plan")
            # On pull requests the plan identity is read-only: it cannot write the
            # S3 lock object, and a plan never writes state. Main takes the lock.
            results = run_batch(
                targets,
                out_dir,
                env,
                jobs=request.parallel,
                progress=Progress(len(targets)),
                lock=not on_pr,
                policy=ctx.policy,
            )
            if request.reviewed is None:
                return results, {}
            # in the working copies the plans were read in
            return results, _reviewed_differences(request.reviewed, targets, results, env)

        _, (results, differs), interrupted = _planned(
            ctx,
            folder,
            targets,
            env,
            jobs=request.parallel,
            what="the plans",
            plan=plan,
            # a deleted unit's destroy plan, and the units it reads outputs from, run in
            # the base revision's checkout: the guard is armed for them there
            models={base_root: base_model} if base_root and base_model else None,
        )
    finally:
        if worktree is not None:
            git.remove_worktree(root, worktree)
    results = _gated(results, ctx.policy, differs)
    results = _with_sources_before(units.model_at, results, change)
    summary = planfolder.summary_of(
        results,
        base=change.base if change else None,
        head=head_sha,
        executor=request.executor,
        root=root,
        policy=ctx.policy.gates,
        settings=units.run_settings,
        interrupted=interrupted,
        worktree=tree_state,
        planned_at=started,
        leg=_leg_record(request.leg),
    )
    planfolder.write_summary(out_dir, summary)
    return PlanOutcome(
        tuple(results),
        interrupted,
        head_sha,
        summary=summary,
        change=change,
        uncommitted=len(pending),
    )


def _affected(request: PlanRequest, ctx: PlanContext, pending: list[Change]) -> Affected | None:
    """What the change affects (the leg's units of it), listed on stderr; None when the
    units are named or all planned."""
    if request.all_units or request.units:
        return None
    units = ctx.of_units()
    change = worktree_affected(
        ctx.root,
        units.git_prefix,
        request.base,
        model=units.model,
        model_at=units.model_at,
        pending=pending,
    )
    change = legs.select(change, request.leg) if request.leg else change
    print_affected(change, say)
    return change


def _targets(
    request: PlanRequest,
    ctx: PlanContext,
    change: Affected | None,
    *,
    on_pr: bool,
    base_root: Path | None,
    base_model: Model | None,
) -> list[Target]:
    """The units to plan (or to report without a plan), each where Terragrunt runs it."""
    units = ctx.of_units()
    model = units.model
    targets = select_targets(
        model,
        root=ctx.root,
        all_units=request.all_units,
        units=request.units,
        change=change,
        executor=request.executor,
        on_pr=on_pr,
        blocked_moves=blocked_moves(ctx.root, model, change, request.executor, units.environment),
        base_root=base_root,
        base_model=base_model,
    )
    # a stack's generated units run in the scratch copy they were generated in
    targets = [t if t.destroy else replace(t, run_dir=units.run_dir(t.path)) for t in targets]
    return never_run_loops(targets, model)


def _gated(
    results: Sequence[Result], policy: Policy, differs: Mapping[str, list[str]]
) -> list[Result]:
    """``results`` with their gates: a lock file's error explained, the gate decided under
    ``policy.gates``, and manual where the plan ``differs`` from the reviewed one."""
    gated = with_gates(_explain_lock_errors(policy, results), policy.gates)
    return [
        replace(r, gate=against_reviewed(r.gate, differs[r.path]))
        if r.gate is not None and r.path in differs
        else r
        for r in gated
    ]


def _leg_record(leg: legs.Leg | None) -> LegRecord | None:
    """summary.json's ``leg``: which leg of the matrix this folder holds (for the merge)."""
    return LegRecord(leg.id, leg.index, leg.count, leg.units) if leg else None


def blocked_moves(
    root: Path,
    model: Model,
    change: Affected | None,
    executor: str | None,
    environment: Callable[[Iterable[str]], Mapping[str, str]],
) -> set[str]:
    """The moved units that must wait: their state is still at the old key (the state
    stores tell, asked in the tools' ``environment``)."""
    if change is None or not any(u.change == "moved" for u in change.units):
        return set()
    from tooling.engine.plan import moves  # the state stores: only when a unit moved

    env = environment(())
    return {
        u.path
        for u in change.units
        if u.change == "moved"
        and not (executor and u.executor != executor)
        and moves.moved_unit_blocked(root, model, change, u.path, env)
    }


def _reviewed_differences(
    reviewed: ReviewedPlans,
    targets: Sequence[Target],
    results: Sequence[Result],
    env: Mapping[str, str],
) -> dict[str, list[str]]:
    """Per unit with changes: what its plan does otherwise than the reviewed plan."""
    run_dirs = {t.path: t.run_dir for t in targets}
    out: dict[str, list[str]] = {}
    for r in results:
        if r.status == Status.CHANGES and r.summary is not None and r.path in run_dirs:
            out[r.path] = reviewed.differences(r.path, r.summary, run_dirs[r.path], env)
            if out[r.path]:
                say(f"{r.path}: {DIFFERS}{'; '.join(out[r.path])}")
    return out


def _with_sources_before(
    model_at: Callable[[str], Model], results: Sequence[Result], change: Affected | None
) -> list[Result]:
    """Each modified unit's module source at the merge base, when it differs (a bump)."""
    if change is None or not any(r.source and r.change == "modified" for r in results):
        return list(results)
    before = model_at(change.base).units
    return [
        replace(r, source_before=before[r.path].source)
        if r.change == "modified" and r.path in before and before[r.path].source != r.source
        else r
        for r in results
    ]


def _explain_lock_errors(policy: Policy, results: Sequence[Result]) -> list[Result]:
    """A plan that failed on its unit's lock file says which file, and the command that fixes it."""
    if not any(r.error for r in results):
        return list(results)
    from tooling.core.bump.locks import lock_hint
    from tooling.core.ci import executors

    platforms = executors.lock_platforms(policy.executors)
    out = []
    for result in results:
        hint = lock_hint(result.error, result.path, platforms) if result.error else None
        out.append(replace(result, error=f"{result.error}\n{hint}") if hint else result)
    return out


# --------------------------------------------------------------------------- drift


def _drift(request: PlanRequest, ctx: PlanContext, folder: outdir.ReportDir) -> PlanOutcome:
    """``invoke drift``: every unit (of the executor) planned against reality with
    ``-detailed-exitcode`` and without the state lock; the binary plans deleted."""
    units = ctx.of_units()
    model, out_dir = units.model, folder.path
    head = git.rev_parse(ctx.root, "HEAD")
    targets = [
        unit_target(u, "all", units.run_dir(path))
        for path in model.order
        for u in (model.units[path],)
        if not request.executor or u.executor == request.executor
    ]
    targets = never_run_loops(targets, model)
    say(
        f"checking {len(targets)} unit(s) for drift (plans with -detailed-exitcode, without the state lock)"
    )
    env = units.environment(()) if targets else {}
    # the attributes policy.toml declares are redacted like sensitive ones
    planner = partial(plan_unit, policy=ctx.policy, lock=False, detailed_exitcode=True)

    def plan(targets: list[Target], env: dict[str, str]) -> list[Result]:
        return run_all(
            targets,
            out_dir,
            env if targets else {},
            jobs=request.parallel,
            progress=Progress(len(targets)),
            planner=planner,
        )

    planned, results, interrupted = _planned(
        ctx,
        folder,
        targets,
        env,
        jobs=request.parallel,
        what="the drift plans",
        plan=plan,
        meanwhile=_without_github_tokens(),
    )
    for t in planned:  # a drift plan is never applied, and saved plans hold variable values
        store.discard(store.plan_path(out_dir, t.path))
    return PlanOutcome(tuple(results), interrupted, head)


@contextmanager
def _without_github_tokens() -> Iterator[None]:
    """Keep the issues token away from the plans: they run third-party modules and providers."""
    saved = {k: os.environ.pop(k) for k in ("GITHUB_TOKEN", "GH_TOKEN") if k in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)
