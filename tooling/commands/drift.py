"""``invoke drift``: plan every unit against reality and keep one GitHub issue current.

**What counts as drift.** Each unit is planned the way ``invoke plan`` plans
it (``terragrunt plan -out``, then ``tofu show -json``), with two differences:
``-detailed-exitcode`` (exit code 2 means "succeeded, with changes") and
``-lock=false``. A unit is *drifted* when its refreshed plan is not empty:
the exit code is 2, or the plan has resource or output changes, or OpenTofu's
refresh found objects changed outside OpenTofu (``resource_drift``), which a
provider may report even when the configuration ignores the difference. On
``main`` every unit is applied, so a non-empty plan means reality and the code
disagree: something changed outside the pipeline, or a merge was not applied.

**Why no lock.** A plan never writes state; the read-only identity that drift
runs with (the plan role) cannot write lock files; and a stuck or held lock
must not hide drift. A plan that races an apply may report a difference the
apply is about to remove; the next run corrects it.

**The binary plans are deleted** after the run: a drift plan is never applied
(drift is fixed through a pull request and the normal pipeline), and saved
plans hold variable values. What stays: ``drift.json``, ``drift.md`` and per
unit the plan text OpenTofu already redacted and the log.

**The issue** (``--issue``): one open issue, found by a hidden marker and the
label ``drift``, lists the drifted units. Its body ends with a hidden block
holding the listed units as JSON, so a run that plans one executor's units
(``--executor``) updates those and keeps the others. A unit whose plan failed
keeps its previous entry (it was not checked). A unit that is in sync again
is removed, with a comment; when none remain the issue gets a comment and is
closed. An unchanged re-run sends no write at all.

Exit codes: 0 when every unit was planned, drift or not (drift is reported,
not an error); 1 when a plan failed (the issue is still updated for the units
that were planned); 2 bad usage.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tooling.core.report.drift import (
    DEFAULT_OUT,
    LABEL,
    MARKER,
    JSONObject,
    UnitDrift,
    addresses_text,
    change_comment,
    classify,
    document,
    issue_body,
    issue_title,
    merge,
    parse_state,
    render_markdown,
    verdict,
)
from tooling.engine.ci import issues
from tooling.engine.ci.issues import run_url_from_env
from tooling.engine.plan.operation import run_plan
from tooling.engine.plan.request import Mode, PlanContext, PlanOutcome, PlanRequest
from tooling.errors import ToolingError, UsageError
from tooling.io import outdir
from tooling.io.ui import say, show
from tooling.io.workspace import Workspace

# --------------------------------------------------------------------------- the issue (edge)


def sync_issue(
    forge: Any,
    units: Sequence[UnitDrift],
    *,
    order: Sequence[str],
    head: str,
    executor: str | None,
    today: str,
    run_url: str | None,
) -> JSONObject:
    """Open, update or close the one drift issue; returns ``{number, url, action}``.

    ``action``: ``created | updated | unchanged | closed | none``.
    """
    issue = issues.find(forge, MARKER, LABEL)
    previous = parse_state(str(issue.get("body") or "")) if issue else {}
    merged = merge(previous, units, order=order, head=head, today=today, run_url=run_url)
    wanted = (issue_title(merged.entries), issue_body(merged.entries)) if merged.entries else None
    changed = not merged.entries or merged.added or merged.resolved or merged.gone
    comment = (
        change_comment(merged, head=head, executor=executor, run_url=run_url) if changed else None
    )
    return issues.keep(forge, issue, LABEL, wanted, comment=comment)


# --------------------------------------------------------------------------- the command


def run(
    ws: Workspace,
    *,
    executor: str | None = None,
    out: Path | None = None,
    issue: bool = False,
    jobs: int | None = None,
) -> int:
    """Plan every unit (of ``executor``), write ``OUT/drift.json`` and ``OUT/drift.md``,
    and with ``issue`` keep the drift issue current. Returns the exit code."""
    request = PlanRequest(
        Mode.DRIFT, out=(out or ws.root / DEFAULT_OUT).resolve(), executor=executor, jobs=jobs
    )
    # with stacks: their units generated, planned in the copy
    context = PlanContext.of(ws, request.mode)
    model = context.of_units().model
    executors = sorted({u.executor for u in model.units.values()})
    if executor and executor not in executors:
        raise UsageError(
            f"--executor {executor}: no unit runs on it; executors: {', '.join(executors)}"
        )
    forge = None
    if issue:
        from tooling.io.forge import Forge

        # before planning: a missing token fails in a second, not after the plans
        forge = Forge.from_env()
    with outdir.ReportDir.claim(request.out, outdir.DRIFT_LAYOUT, root=context.root) as folder:
        outcome = run_plan(request, context, folder)
        return _show(outcome, context, folder, executor=executor, forge=forge)


def _show(
    outcome: PlanOutcome,
    context: PlanContext,
    folder: outdir.ReportDir,
    *,
    executor: str | None,
    forge: Any,
) -> int:
    """drift.json and drift.md, the issue kept current (with ``forge``), the units on
    stdout; the exit code."""
    from tooling.io import toolchain

    out_dir, head = folder.path, outcome.head or ""
    units = [classify(r) for r in outcome.results]
    checked_at = datetime.now(UTC).replace(microsecond=0).isoformat()
    tools = {tool.name: version for tool, version in toolchain.read_pins(context.root)}

    def write(issue_info: Mapping[str, Any] | None) -> str:
        doc = document(
            units,
            head=head,
            executor=executor,
            tools=tools,
            checked_at=checked_at,
            issue=issue_info,
        )
        folder.write_json("drift.json", doc)
        markdown = render_markdown(doc, units)
        folder.write_text("drift.md", markdown)
        return markdown

    markdown = write(None)
    if outcome.interrupted:
        say("interrupted: the report is incomplete; the drift issue was not touched")
    elif forge is not None:
        try:
            info = sync_issue(
                forge,
                units,
                order=context.of_units().model.order,
                head=head,
                executor=executor,
                today=checked_at[:10],
                run_url=run_url_from_env(os.environ),
            )
        except ToolingError as exc:
            raise ToolingError(
                f"{exc}\n(the report was written to {out_dir}; the drift issue was not updated)"
            ) from None
        markdown = write(info)
        if info["action"] != "none":
            say(
                f"drift issue #{info['number']}: {info['action']}"
                + (f" ({info['url']})" if info.get("url") else "")
            )
        else:
            say("no drift and no open drift issue: nothing to report on GitHub")
    folder.job_summary(markdown)
    for u in units:
        detail = (
            addresses_text(u.drift, limit=5)
            if u.drifted
            else (u.error or "").splitlines()[0][:160]
            if u.error
            else ""
        )
        show(f"  {u.status:<11} {u.path}  {detail}".rstrip())
    drifted = [u.path for u in units if u.drifted]
    failed = [u.path for u in units if not u.checked]
    show(verdict(units).replace("**", ""))
    say(f"wrote {out_dir / 'drift.json'} and {out_dir / 'drift.md'}")
    if outcome.interrupted:
        return 130
    if failed:
        say(f"not checked (plan failed): {', '.join(failed)}: exit 1")
        return 1
    if drifted:
        say("drift is reported, not an error: exit 0")
    return 0
