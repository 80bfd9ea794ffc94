"""``invoke audit``: the audit trail, one record per ``invoke apply``
(:func:`tooling.engine.applier.append_audit` appends it).

The record (:func:`tooling.core.audit.record`) goes to the state store
(:class:`tooling.io.auditlog.AuditLog`): ``s3://BUCKET/audit/…`` with
``IAC_STATE_BUCKET``, else ``.iac/state/audit/…``. Who approved: with
``--approve-manual``, ``IAC_APPROVED_BY`` when the workflow sets it (the
reviewer of the protected environment), else ``GITHUB_ACTOR`` (else ``USER``);
the run: ``GITHUB_RUN_ID``, its attempt, workflow, job and URL.
"""

from __future__ import annotations

import json

from tooling.core import audit
from tooling.io.auditlog import AuditLog
from tooling.io.ui import say, show
from tooling.io.workspace import Workspace


def run(ws: Workspace, *, since: str | None = None, as_json: bool = False) -> int:
    """``invoke audit``: the records (on or after ``since``), oldest first."""
    day = audit.parse_since(since) if since else None
    log = AuditLog(ws.root, ws.settings)
    keys = audit.keys_since(log.keys(), day)
    docs = [log.get(k) for k in keys]
    if as_json:
        show(json.dumps({"records": docs}, indent=2))
    else:
        for doc in docs:
            show(audit.render(doc))
    say(f"{len(docs)} audit record(s) in {log.describe()}" + (f" since {day}" if day else ""))
    return 0
