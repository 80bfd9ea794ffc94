"""The plan operation for an application's folder (``invoke app-plan``,
:mod:`tooling.commands.apptier` says what the app tier guarantees): its checks, then
``tofu init`` and ``tofu plan`` with the app's own state, the plan's resource types
checked, and summary.json with the app's name, folder and state."""

from __future__ import annotations

import os
from dataclasses import replace

from tooling.core.apps.tier import APPS_PREFIX, EXECUTOR, TIER
from tooling.core.plan.outcomes import settled
from tooling.core.plan.results import with_gates
from tooling.core.plan.status import Status
from tooling.core.plan.summary import AppRecord
from tooling.core.plan.targets import Target
from tooling.engine.apps import runs
from tooling.engine.plan import planfolder, store
from tooling.engine.plan.request import PlanContext, PlanOutcome, PlanRequest
from tooling.engine.plan.unitplanner import plan_unit
from tooling.errors import ToolingError
from tooling.io import outdir, proc


def plan_app(request: PlanRequest, ctx: PlanContext, folder: outdir.ReportDir) -> PlanOutcome:
    """Check the app's name, state and folder (a refusal keeps the last report), then
    empty ``folder`` and plan; a plan that keeps or creates a resource type outside the
    allowlist is an error and its plan file is deleted."""
    if request.app_dir is None:
        raise TypeError("an app's plan needs its folder (PlanRequest.app_dir)")
    prep = runs.prepare(
        request.app, request.app_dir, root=ctx.root, settings=ctx.settings, policy=ctx.policy
    )
    folder.reset()
    out_dir = folder.path
    target = Target(
        f"{APPS_PREFIX}{prep.app}",
        TIER,
        EXECUTOR,
        "named",
        prep.app_dir,
        gate_class=prep.policy.gate,
    )
    # Pull request plans run with the app's read-only role and are never
    # applied (main re-plans): they do not take the state lock.
    command = runs.AppPlan(prep, lock=os.environ.get("GITHUB_EVENT_NAME") != "pull_request")
    try:
        with (
            runs.backend_override(prep.app_dir, prep.state.backend),
            proc.forwarding_interrupts("the app plan"),
        ):
            result = plan_unit(target, out_dir, prep.env, policy=ctx.policy, command=command)
    except ToolingError as exc:
        result = settled(target, Status.ERROR, str(exc))
    interrupted = proc.interrupted()
    if command.refused and result.status != Status.ERROR and result.plan_file:
        store.discard(store.stored(out_dir, result.plan_file))  # refused: nothing to apply
        result = replace(
            result,
            status=Status.ERROR,
            plan_file=None,
            plan_sha256=None,
            error="refused: " + "; ".join(command.refused),
        )
    policy = ctx.policy.gates
    (result,) = with_gates([result], policy)
    summary = replace(
        planfolder.summary_of(
            [result],
            base=None,
            # the app repository's commit, when its folder is in one
            head=runs.app_commit(prep.app_dir),
            executor=None,
            root=ctx.root,
            policy=policy,
            interrupted=interrupted,
        ),
        app=AppRecord(prep.app, prep.app_dir.name, prep.state.to_json()),
    )
    planfolder.write_summary(out_dir, summary)
    return PlanOutcome((result,), interrupted, summary.head, summary=summary)
