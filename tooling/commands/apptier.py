"""The per-application tier: ``invoke app-plan`` and ``invoke app-apply``.

An application team owns a folder of plain OpenTofu code (``terraform/`` in its
own repository). The tooling plans and applies it with the foundation's report
(:mod:`tooling.core.report`) and gates (:mod:`tooling.core.gates`), but never with
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
:mod:`tooling.core.apps`; the app's folder is read and ``tofu`` runs in
:mod:`tooling.engine.appruns`; the plan is the plan operation's
(:mod:`tooling.engine.plan.app`); here are what ``app-plan`` shows of it, and the
apply's flow and record.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tooling.core.apps import (
    check_name,
)
from tooling.core.record import (
    ApplyRun,
    UnitApply,
    binding_problems,
    earlier_applied,
    exit_code,
    record_document,
)
from tooling.core.results import Result, Status
from tooling.engine import appruns, planstore
from tooling.engine.plan.operation import run_plan
from tooling.engine.plan.request import Mode, PlanContext, PlanOutcome, PlanRequest
from tooling.errors import ToolingError
from tooling.io import artifacts, outdir
from tooling.io.ui import say
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
    from tooling.core import report

    results = list(outcome.results)
    rendered = report.render(results, head=outcome.head, interrupted=outcome.interrupted)
    folder.write_text("comment.md", rendered)
    say(report.table(results))
    folder.job_summary(rendered)
    say(f"wrote {folder.path / 'summary.json'} and {folder.path / 'comment.md'}")
    if outcome.interrupted:
        return 130
    return 1 if any(r.status == Status.ERROR for r in results) else 0


def apply(
    ws: Workspace, *, app: str, directory: Path, plans: Path, approve_manual: bool = False
) -> int:
    """``invoke app-apply``: apply exactly the reviewed plan in PLANS, behind the same gate as the foundation."""
    from tooling.engine.applier import finish, read_record

    prep = appruns.prepare(app, directory, root=ws.root, settings=ws.settings, policy=ws.policy)
    plans_dir = plans.resolve()
    summary_path = plans_dir / "summary.json"
    if not summary_path.is_file():
        raise ToolingError(
            f"{summary_path}: no summary.json; run `invoke app-plan --app {prep.app} --out {plans}` first"
        )
    summary: dict[str, Any] = artifacts.read(summary_path, artifacts.SUMMARY)
    meta = summary.get("app") or {}
    if meta.get("name") != prep.app:
        raise ToolingError(
            f"{summary_path}: these plans are for app {meta.get('name')!r}, not {prep.app!r}"
        )
    if meta.get("state") != prep.state.to_json():
        raise ToolingError(
            f"{summary_path}: the plan was made against {meta.get('state')}, this run would use "
            f"{prep.state.describe()}: re-plan with the same state settings"
        )
    units = summary.get("units") or []
    if len(units) != 1:
        raise ToolingError(
            f"{summary_path}: expected one unit (apps/{prep.app}), found {len(units)}"
        )
    try:
        unit = Result.from_json(units[0])
    except (ValueError, AttributeError) as exc:
        raise ToolingError(
            f"{summary_path}: the unit is not a planned unit ({exc}); re-plan"
        ) from None
    path = unit.path
    claimed = unit.gate.decision if unit.gate is not None else "none"
    run = ApplyRun()
    started_at = datetime.now(UTC).replace(microsecond=0).isoformat()
    folder = outdir.ReportDir.existing(plans_dir, outdir.PLAN_LAYOUT, root=ws.root)
    with folder:
        previous = read_record(plans_dir, summary)

        def record(result: str, reason: str, gate: str, earlier: bool = False) -> None:
            run.units.append(UnitApply(path, result, reason, gate=gate, earlier=earlier))
            say(f"  {path}: {result}" + (f" ({reason})" if reason else ""))

        status = unit.status
        before: dict[str, Any] = next(
            (u for u in previous.get("units", []) if u.get("path") == path), {}
        )
        kept = earlier_applied(path, before, claimed)
        if kept is not None:
            record(kept.result, kept.reason, kept.gate, True)
        elif status == Status.NO_CHANGES:
            record("no-changes", "", claimed)
        elif status != Status.CHANGES:
            record(
                "refused",
                f"plan status is {status}" + (f": {unit.error}" if unit.error else ""),
                claimed,
            )
        else:
            plan_file = planstore.stored(plans_dir, unit.plan_file)
            commit = appruns.app_commit(prep.app_dir)
            problems = binding_problems(
                unit,
                plan_sha256=planstore.digest(plan_file),
                head=commit or "",
                summary_head=summary.get("head") or "",
                tools_now={t.name: t.version for t in ws.checked_tools},
                tools_then=summary.get("tools") or {},
            )
            if problems:
                record("refused", "; ".join(problems), claimed)
            else:
                appruns.apply_one(
                    ws, prep, plan_file, run, record, approve_manual=approve_manual, claimed=claimed
                )
        doc = record_document(
            run,
            order=[path],
            earlier=previous,
            head=appruns.app_commit(prep.app_dir),
            plans_head=summary.get("head"),
            approve_manual=approve_manual,
            started_at=started_at,
        )
        finish(
            folder,
            {"app": prep.app, **doc},
            run,
            {**summary, "head": summary.get("head") or "no-commit"},
        )
    return exit_code(run)
