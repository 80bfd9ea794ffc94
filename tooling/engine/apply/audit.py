"""Writing the audit trail of an apply (:mod:`tooling.core.apply.audit` says what a record
holds, :class:`tooling.io.auditlog.AuditLog` where it goes).

:func:`start_audit` writes the ``started`` record before the first unit is
applied: a record that cannot be written stops the apply with nothing applied.
:func:`append_audit` writes the ``completed`` record after the last unit. Each
names the newest record under ``audit/`` when it is written (the chain), read
back for its SHA-256.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tooling.core.apply import audit
from tooling.core.apply.record import ApplyRecord
from tooling.core.plan.summary import Summary
from tooling.core.text.terminal import escape_line as escape
from tooling.errors import ToolingError
from tooling.io.auditlog import AuditLog
from tooling.io.ui import say
from tooling.io.workspace import Workspace


@dataclass(frozen=True)
class AuditStart:
    """The ``started`` record of this apply: its key, its digest and the apply's id."""

    key: str
    link: dict[str, Any]
    apply_id: str


def _previous(log: AuditLog) -> dict[str, Any] | None:
    """How the next record names the newest one (None: the trail is empty). A newest
    record that cannot be read is named without a digest (``invoke audit`` reports it)
    rather than stopping the apply."""
    keys = audit.keys_since(log.keys(), None)  # oldest first
    if not keys:
        return None
    newest = keys[-1]
    try:
        return audit.link(newest, log.read(newest))
    except ToolingError as exc:
        say(escape(f"warning: {exc}; the new audit record names it without its digest"))
        return audit.link(newest, None)


def start_audit(
    ws: Workspace, summary: Summary, *, head: str | None, approve_manual: bool
) -> AuditStart:
    """Write the ``started`` record before anything is applied (the plans of ``summary``,
    at ``head``); a record that cannot be written stops the apply here, with nothing applied."""
    log = AuditLog(ws.root, ws.settings)
    previous = _previous(log)
    now = datetime.now(UTC)  # after the listing: the key sorts after the record it names
    apply_id = uuid.uuid4().hex[:16]
    doc = audit.started(
        summary,
        apply_id=apply_id,
        head=head,
        approve_manual=approve_manual,
        at=now,
        env=os.environ,
        previous=previous,
    )
    data = audit.encode(doc)
    key = audit.key(doc, at=now, suffix=f"{apply_id}-{audit.STARTED}")
    where = log.put(key, data, done="nothing was applied")
    say(f"audit record: {where}")
    return AuditStart(key, audit.link(key, data), apply_id)


def append_audit(ws: Workspace, start: AuditStart, apply_doc: ApplyRecord, summary: Summary) -> str:
    """Write the ``completed`` record of the apply that just ended; returns where it went."""
    log = AuditLog(ws.root, ws.settings)
    previous = _previous(log)
    now = datetime.now(UTC)
    doc = audit.record(
        apply_doc,
        summary,
        at=now,
        env=os.environ,
        apply_id=start.apply_id,
        started_link=start.link,
        previous=previous,
    )
    key = audit.key(doc, at=now, suffix=f"{start.apply_id}-{audit.COMPLETED}")
    where = log.put(
        key, audit.encode(doc), done="the apply itself is done (apply.json says what it did)"
    )
    say(f"audit record: {where}")
    return where
