"""``invoke plan``: plan the affected (or named) units and write the report; one leg of a
split matrix (``--from-matrix M --leg ID``).

The command builds the request from its options and the repository's context, claims
the report folder and runs the plan operation (:func:`tooling.engine.plan.operation.run_plan`,
which writes summary.json); what it shows of the outcome is here: comment.md, the
sticky comment, the table, the job summary, the exit code. Progress and diagnostics go
to stderr (:mod:`tooling.io.ui`); a known failure raises :class:`ToolingError`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tooling.core.ci import legs
from tooling.core.plan.affected import Affected
from tooling.core.plan.status import Status
from tooling.core.plan.targets import check_options
from tooling.core.text.terminal import escape_line
from tooling.engine.ci.legs import read_matrix
from tooling.engine.plan.operation import run_plan
from tooling.engine.plan.request import Mode, PlanContext, PlanOutcome, PlanRequest
from tooling.engine.plan.reviewed import ReviewedPlans
from tooling.errors import UsageError
from tooling.io import outdir, redacting
from tooling.io.ui import say, show
from tooling.io.workspace import Workspace
from tooling.model.units import Model

# --------------------------------------------------------------------------- plan


def parse_jobs(text: str) -> int | None:
    """``--jobs``: a whole number >= 1, or None (not given: one per CPU)."""
    if text == "":
        return None
    try:
        jobs = int(text)
    except ValueError:
        jobs = 0
    if jobs < 1:
        raise UsageError(f"--jobs {text}: give a whole number of parallel plans, 1 or more")
    return jobs


def known_executors(ws: Workspace, model: Model) -> set[str]:
    """The executors policy.toml declares and the ones the units name."""

    return set(ws.policy.executors) | {u.executor for u in model.units.values()}


def plan(
    ws: Workspace,
    *,
    base: str | None = None,
    all_units: bool = False,
    units: Sequence[str] = (),
    executor: str | None = None,
    jobs: int | None = None,
    out: Path | None = None,
    comment: bool = False,
    leg: legs.Leg | None = None,
    reviewed: Path | None = None,
) -> int:
    """``invoke plan``; ``leg``: only its units of the affected ones (:func:`legs.select`);
    ``reviewed``: the pull request's plan folder, each plan compared with it
    (:mod:`tooling.engine.plan.reviewed`)."""
    check_options(
        all_units=all_units,
        units=units,
        executor=executor,
        executors=known_executors(ws, ws.current_model),
    )
    request = PlanRequest(
        Mode.PLAN,
        out=(out or ws.root / ".iac" / "plans").resolve(),
        base=base,
        units=tuple(units),
        all_units=all_units,
        executor=executor,
        jobs=jobs,
        leg=leg,
        # read before anything is planned: a folder that is not one stops the run here
        reviewed=ReviewedPlans(reviewed) if reviewed is not None else None,
    )
    context = PlanContext.of(ws, request.mode)
    # checked and locked now; emptied only once parsing and preflight succeeded
    with outdir.ReportDir.claim(request.out, outdir.PLAN_LAYOUT, root=context.root) as folder:
        outcome = run_plan(request, context, folder)
        return _show(outcome, context, folder, comment=comment)


def _show(
    outcome: PlanOutcome, context: PlanContext, folder: outdir.ReportDir, *, comment: bool
) -> int:
    """The plan as reviewers see it: comment.md (and with ``comment`` the pull request's
    sticky comment), the table on stdout, the job summary; the exit code."""
    from tooling.core.report.comment import BUDGET, render, table

    results, change, head = list(outcome.results), outcome.change, outcome.head or ""
    page = _page_context(context, change, head, folder.path)
    settings = outcome.summary.settings if outcome.summary is not None else None

    def rendered_within(budget: int) -> str:
        return render(
            results,
            head=head,
            base=change.base if change else None,
            settings=settings,
            interrupted=outcome.interrupted,
            uncommitted=outcome.uncommitted,
            budget=budget,
            **page,
        )

    rendered = rendered_within(BUDGET)
    folder.write_text("comment.md", rendered)
    show(table(results))
    folder.job_summary(rendered)
    if comment:
        from tooling.core.report import pages
        from tooling.io import forge, githubapi

        bodies = pages.paginate("", [("", rendered_within(10**9))], budget=githubapi.MAX_BODY)
        forge.post_sticky_pages([redacting.redact(b) for b in bodies])
    say(f"wrote {folder.path / 'summary.json'} and {folder.path / 'comment.md'}")
    if outcome.interrupted:
        say("interrupted: the report above is incomplete and cannot be applied; plan again")
        return 130
    failed = [r for r in results if r.status in (Status.ERROR, Status.NOT_PLANNED, Status.BLOCKED)]
    return 1 if failed else 0


def _page_context(
    context: PlanContext, change: Affected | None, head: str, out_dir: Path
) -> dict[str, Any]:
    """What the report links and names beyond the results: the run's links (in
    Actions), the dependents re-planned after their upstream, the graph's edges,
    and the plans folder for the local approval command."""
    from tooling.core.report.review import RunLinks

    root, model = context.root, context.of_units().model
    shown = out_dir.relative_to(root) if out_dir.is_relative_to(root) else out_dir
    return {
        "links": RunLinks.from_env(os.environ, head),
        "dependents": [(d.path, d.via) for d in change.dependents] if change else [],
        "upstreams": {p: u.dependencies for p, u in model.units.items()},
        # in Actions the folder is the run's artifact, not a path a reviewer has
        "plans_dir": None if os.environ.get("GITHUB_ACTIONS") == "true" else shown.as_posix(),
    }


def plan_leg(
    ws: Workspace,
    *,
    matrix: str,
    leg: str,
    base: str | None,
    jobs: int | None,
    out: Path | None,
    executor: str | None = None,
    reviewed: Path | None = None,
) -> int:
    """Plan leg ``leg`` of ``matrix``: the affected units it lists, as its executor; the
    folder's summary.json records the leg (``leg``) for :func:`merge`."""
    if not leg:
        raise UsageError("--from-matrix needs --leg ID (a `leg` of the matrix, or an executor)")
    chosen = legs.leg_of(read_matrix(matrix), leg)
    if executor is not None and executor != chosen.executor:
        raise UsageError(
            f"--leg {escape_line(leg)} is a leg of executor {escape_line(chosen.executor)}, not {executor}: "
            f"this job runs {executor}'s legs only"
        )
    code = plan(
        ws,
        base=base,
        executor=chosen.executor,
        jobs=jobs,
        out=out,
        leg=chosen,
        reviewed=reviewed,
    )
    say(
        f"leg {leg} ({chosen.index} of {chosen.count} of executor {chosen.executor}): "
        f"{len(chosen.units)} unit(s)"
    )
    return code
