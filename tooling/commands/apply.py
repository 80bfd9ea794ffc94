"""``invoke apply --plans DIR``: apply exactly the reviewed plans, in DAG order, and stop
where a human must look. The mechanism (the binding checks, the order, the record) is
:class:`tooling.engine.apply.applier.Applier`."""

from __future__ import annotations

import sys
from pathlib import Path

from tooling.core.apply.record import exit_code, unplanned_error, unplanned_units
from tooling.engine.apply.applier import Applier, finish
from tooling.engine.apply.audit import append_audit, start_audit
from tooling.engine.plan import store
from tooling.engine.plan.reviewed import ReviewedPlans
from tooling.engine.rules import preflight
from tooling.errors import ToolingError
from tooling.io import outdir
from tooling.io.workspace import Workspace


def apply(
    ws: Workspace, plans_dir: Path, *, approve_manual: bool, reviewed: Path | None = None
) -> int:
    folder_path = plans_dir.resolve()
    if not (folder_path / "summary.json").is_file():
        raise ToolingError(
            f"{folder_path / 'summary.json'}: no summary.json; run `invoke plan --out {plans_dir}` first"
        )
    store.require_key(folder_path, str(plans_dir))  # encrypted plans: their key, or nothing
    # one apply per folder at a time: the record is read, merged and written under the lock
    with outdir.ReportDir.existing(folder_path, outdir.PLAN_LAYOUT, root=ws.root) as folder:
        applier = Applier(
            ws,
            folder.path,
            approve_manual=approve_manual,
            reviewed=ReviewedPlans(reviewed) if reviewed is not None else None,
        )
        ws.check_tools()  # checked by the task's preamble already: the workspace checks once
        preflight.check(
            [(u.path, u.executor) for u in applier.units], policy=ws.policy, settings=ws.settings
        )
        # the trail first: no unit is applied unless its "started" record is written
        started = start_audit(
            ws, applier.summary, head=applier.head, approve_manual=applier.approve
        )
        run = applier.execute()
        finish(folder, applier.document(), run, applier.summary)
        append_audit(ws, started, applier.document(), applier.summary)
    if run.interrupted:
        return 130
    # a unit whose plan failed (a destroy that could not be planned among them) was not
    # applied: that is a failure to act on, never a success
    unplanned = unplanned_units(applier.units)
    if unplanned:
        print(unplanned_error(unplanned), file=sys.stderr, flush=True)
    return exit_code(run, unplanned)
