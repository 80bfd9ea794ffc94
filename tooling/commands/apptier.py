"""The per-application tier: ``invoke app-plan`` and ``invoke app-apply``.

An application team owns a folder of plain OpenTofu code (``terraform/`` in its
own repository). The tooling plans and applies it with the foundation's report
(:mod:`tooling.core.report.comment`) and gates (:mod:`tooling.core.plan.gates`), but never with
Terragrunt, and never against the foundation's state:

- the state lives at ``apps/<app>/terraform.tfstate`` in the app-tier bucket
  (``IAC_APP_STATE_BUCKET``, with ``IAC_APP_STATE_REGION`` and
  ``IAC_APP_STATE_ENDPOINT``, which default to the foundation's
  ``IAC_STATE_REGION``/``IAC_STATE_ENDPOINT``), or locally under
  ``.iac/app-state/apps/<app>/`` when no bucket is set. The backend *type* is
  set by a generated override file (``zz_iac_backend_override.tf``, written
  into the folder for the run and removed after it), its settings by
  ``-backend-config`` on ``tofu init``; whatever backend the folder declares
  is replaced;
- refused before anything runs: an app name outside ``^[a-z0-9-]+$``; any
  backend configuration in the folder (``backend`` blocks, ``*.tfbackend``
  files, ``terraform_remote_state`` sources) that points at the foundation
  (a key or prefix under ``live/``, a foundation bucket) or at another app's
  ``apps/<other>/`` prefix; an app-tier bucket that is a foundation bucket; a
  resource type outside ``[apps] allowed_resource_types`` of policy.toml in
  the folder's configuration (root and local modules);
- checked again on the plan itself (``resource_changes``, which includes
  remote modules) after ``app-plan`` and once more before ``app-apply``
  applies: a plan that creates, updates or keeps a resource of a type not in
  the allowlist is refused (deleting one is allowed: it removes it).

The pure parts (name, state location, argument lists, the checks) are in
:mod:`tooling.core.apps.tier`; the app's folder is read and ``tofu`` runs in
:mod:`tooling.engine.apps.runs`; the plan is the plan operation's
(:mod:`tooling.engine.plan.app`); here are what ``app-plan`` shows of it, and the
apply's flow and record.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from tooling.core.apply.decision import Action, Facts, decide
from tooling.core.apply.record import ApplyRun, exit_code, record_document, result_line
from tooling.core.apps.tier import check_name
from tooling.core.plan.results import Result
from tooling.core.plan.status import Status
from tooling.core.plan.summary import Summary
from tooling.engine.apps import runs
from tooling.engine.plan import planfolder
from tooling.engine.plan.operation import run_plan
from tooling.engine.plan.request import Mode, PlanContext, PlanOutcome, PlanRequest
from tooling.errors import ToolingError
from tooling.io import outdir
from tooling.io.ui import say, show
from tooling.io.workspace import Workspace


def plan(ws: Workspace, *, app: str, directory: Path, out: Path | None = None) -> int:
    """``invoke app-plan``: plan the app's folder; write OUT/summary.json and OUT/comment.md."""
    request = PlanRequest(
        Mode.APP_PLAN,
        out=(out or ws.root / ".iac" / "app-plans" / check_name(app)).resolve(),
        app=app,
        app_dir=directory,
    )
    context = PlanContext.of(ws, request.mode)
    # checked and locked now; emptied only once the app's configuration passed its checks
    with outdir.ReportDir.claim(request.out, outdir.PLAN_LAYOUT, root=context.root) as folder:
        return _show(run_plan(request, context, folder), folder)


def _show(outcome: PlanOutcome, folder: outdir.ReportDir) -> int:
    """The app's plan as the report shows it (comment.md, the job summary); the exit code."""
    from tooling.core.report import comment

    results = list(outcome.results)
    rendered = comment.render(results, head=outcome.head, interrupted=outcome.interrupted)
    folder.write_text("comment.md", rendered)
    say(comment.table(results))
    folder.job_summary(rendered)
    say(f"wrote {folder.path / 'summary.json'} and {folder.path / 'comment.md'}")
    if outcome.interrupted:
        return 130
    return 1 if any(r.status == Status.ERROR for r in results) else 0


def apply(
    ws: Workspace, *, app: str, directory: Path, plans: Path, approve_manual: bool = False
) -> int:
    """``invoke app-apply``: apply exactly the reviewed plan in PLANS, behind the same gate
    and the same decision as the foundation (:func:`tooling.core.apply.decision.decide`)."""
    from tooling.engine.apply.applier import finish

    prep = runs.prepare(app, directory, root=ws.root, settings=ws.settings, policy=ws.policy)
    plans_dir = plans.resolve()
    summary_path = plans_dir / planfolder.SUMMARY
    if not summary_path.is_file():
        raise ToolingError(
            f"{summary_path}: no summary.json; run `invoke app-plan --app {prep.app} --out {plans}` first"
        )
    summary = planfolder.read_summary(summary_path)
    unit = _planned_unit(summary, prep, summary_path)
    run = ApplyRun()
    started_at = datetime.now(UTC).replace(microsecond=0).isoformat()
    folder = outdir.ReportDir.existing(plans_dir, outdir.PLAN_LAYOUT, root=ws.root)
    with folder:
        previous = planfolder.earlier_record(plans_dir, summary)
        facts = Facts(
            claimed=unit.gate.decision if unit.gate is not None else "none",
            approved=approve_manual,
            earlier=previous.unit(unit.path) if previous is not None else None,
        )
        decision = decide(unit, facts)
        entry = (
            runs.apply_one(ws, prep, plans_dir, summary, unit, facts, run)
            if decision.action is Action.VERIFY
            else decision.entry(unit.path)
        )
        run.units.append(entry)
        show(result_line(entry))
        doc = record_document(
            run,
            order=[unit.path],
            earlier=previous,
            head=runs.app_commit(prep.app_dir),
            plans_head=summary.head,
            approve_manual=approve_manual,
            started_at=started_at,
            app=prep.app,
        )
        finish(folder, doc, run, replace(summary, head=summary.head or "no-commit"))
    return exit_code(run)


def _planned_unit(summary: Summary, prep: runs.Prepared, summary_path: Path) -> Result:
    """The one unit of the app's plan folder; refused when the folder is another app's,
    or was planned against other state settings."""
    name = summary.app.name if summary.app is not None else None
    if name != prep.app:
        raise ToolingError(f"{summary_path}: these plans are for app {name!r}, not {prep.app!r}")
    state = summary.app.state if summary.app is not None else None
    if state != prep.state.to_json():
        raise ToolingError(
            f"{summary_path}: the plan was made against {state}, this run would use "
            f"{prep.state.describe()}: re-plan with the same state settings"
        )
    if len(summary.units) != 1:
        raise ToolingError(
            f"{summary_path}: expected one unit (apps/{prep.app}), found {len(summary.units)}"
        )
    return summary.units[0]
