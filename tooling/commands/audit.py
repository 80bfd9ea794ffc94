"""``invoke audit``: the audit trail, two records per ``invoke apply``
(:func:`tooling.engine.apply.audit.start_audit` before the first unit is applied,
:func:`tooling.engine.apply.audit.append_audit` after the last).

The records (:mod:`tooling.core.apply.audit`) live in the state store
(:class:`tooling.io.auditlog.AuditLog`): ``s3://BUCKET/audit/…`` with
``IAC_STATE_BUCKET``, else ``.iac/state/audit/…``. Each is read back through
:func:`tooling.io.artifacts.parse` (size, JSON, ``audit.schema.json``): a
damaged one is named, one line, and the others are still listed. The chain
(each record names the previous one's SHA-256) is checked from the first
record listed: a record deleted or changed after a later one named it is
named too. Either makes the task exit 1, after the listing.
"""

from __future__ import annotations

import json

from tooling.core.apply import audit
from tooling.core.text.terminal import escape_line as escape
from tooling.errors import ToolingError
from tooling.io import artifacts
from tooling.io.auditlog import AuditLog
from tooling.io.ui import say, show
from tooling.io.workspace import Workspace


def _entry(log: AuditLog, key: str) -> audit.Entry:
    """One key read back: its digest and its record, or the one line saying why not."""
    try:
        data = log.read(key)
    except ToolingError as exc:
        return audit.Entry(key, None, None, str(exc))
    try:
        doc = artifacts.parse(data, artifacts.AUDIT_RECORD, source=log.describe(key))
    except ToolingError as exc:
        return audit.Entry(key, audit.digest(data), None, str(exc))
    return audit.Entry(key, audit.digest(data), doc)


def run(ws: Workspace, *, since: str | None = None, as_json: bool = False) -> int:
    """``invoke audit``: the records (on or after ``since``), oldest first; exit 1 when
    one is damaged or the chain is broken."""
    day = audit.parse_since(since) if since else None
    log = AuditLog(ws.root, ws.settings)
    present = audit.keys_since(log.keys(), None)
    entries = [_entry(log, k) for k in audit.keys_since(present, day)]
    # a record before --since that a listed one names: read for its digest
    before = [
        _entry(log, k)
        for k in sorted(audit.linked_keys(entries) - {e.key for e in entries})
        if k in present
    ]
    digests = {e.key: e.sha256 for e in [*before, *entries]}
    problems = [
        *(e.problem for e in entries if e.problem is not None),
        # a damaged record before --since still has a digest: only an unreadable one counts
        *(e.problem for e in before if e.problem is not None and e.sha256 is None),
        *audit.chain_problems(entries, present, digests),
    ]
    listed = audit.applies(entries)
    if as_json:
        records = [e.doc for e in entries if e.doc is not None]
        show(json.dumps({"records": records, "problems": problems}, indent=2))
    else:
        for doc in listed:
            show(audit.render(doc))
    where = log.describe() + (f" since {day}" if day else "")
    say(f"{len(listed)} apply(s), {len(entries)} audit record(s) in {escape(where)}")
    for problem in problems:
        say(escape(problem))
    if problems:
        say(
            f"{len(problems)} problem(s) in the audit trail: keep the records as they are "
            "for the investigation (docs/commands.md, the audit trail)"
        )
        return 1
    return 0
