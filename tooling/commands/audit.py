"""The audit trail: every ``invoke apply`` appends one record; ``invoke audit`` lists them.

The record (:func:`tooling.core.audit.record`) goes to the state store
(:class:`tooling.io.auditlog.AuditLog`): ``s3://BUCKET/audit/…`` with
``IAC_STATE_BUCKET``, else ``.iac/state/audit/…``. Who approved: with
``--approve-manual``, ``IAC_APPROVED_BY`` when the workflow sets it (the
reviewer of the protected environment), else ``GITHUB_ACTOR`` (else ``USER``);
the run: ``GITHUB_RUN_ID``, its attempt, workflow, job and URL.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from tooling.core import audit
from tooling.io.auditlog import AuditLog
from tooling.io.ui import say, show
from tooling.io.workspace import Workspace


def append(ws: Workspace, apply_doc: Mapping[str, Any], summary: Mapping[str, Any]) -> str:
    """Write the record of the apply that just ended; returns where it went."""
    doc = audit.record(apply_doc, summary, at=datetime.now(UTC), env=os.environ)
    where = AuditLog(ws.root, ws.settings).put(audit.key(doc, suffix=uuid.uuid4().hex[:8]), doc)
    say(f"audit record: {where}")
    return where


def run(ws: Workspace, *, since: str | None = None, as_json: bool = False) -> int:
    """``invoke audit``: the records (on or after ``since``), oldest first."""
    day = audit.parse_since(since) if since else None
    say(ws.settings.describe())
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
