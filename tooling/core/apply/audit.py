"""The audit trail of applies: two JSON records per ``invoke apply``. Pure.

A record says what was applied and on whose word: the commit the apply ran
at and the commit the plans were made at, each unit's plan digest (the
SHA-256 of the binary plan the reviewers saw, from ``summary.json``) and
result, whether manual units were approved, by whom and in which workflow
run (``tooling/schemas/audit.schema.json``).

Each apply writes a ``started`` record before its first unit is applied and a
``completed`` record after the last, with the results. Records are written
once and never changed, so the completion is an object of its own: its key
carries the time it was written (listing the keys lists the records in the
order they were written) and it names its ``started`` record by key and
SHA-256. A ``started`` record no completion names is an apply that was
killed (or is still running): :func:`applies` lists it as interrupted.

The records form a hash chain: each names the record that was newest when it
was written (``previous``: its key and the SHA-256 of its bytes), so
:func:`chain_problems` reports a record that was deleted or changed after a
later record named it. Two applies at once may name the same previous record
(the chain branches there); that is not a problem.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from tooling.core.apply.record import ApplyRecord
from tooling.core.plan.summary import Summary
from tooling.core.text.terminal import escape_line as escape
from tooling.errors import UsageError

PREFIX = "audit/"
AUDIT_VERSION = 2
STARTED, COMPLETED = "started", "completed"
#: the most characters of a unit's reason a record keeps (apply.json has the whole text)
REASON_CHARS = 500
_KEY_TIME = re.compile(r"^audit/(\d{4})/(\d{2})/(\d{2})/(\d{8}T\d{6}(?:\.\d{6})?Z)-")


def run_info(env: Mapping[str, str]) -> dict[str, Any]:
    """The workflow run an apply belongs to, from GitHub Actions' variables (or a local run)."""
    server, repo, run_id = (
        env.get(k, "").strip() for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID")
    )
    return {
        "id": run_id or None,
        "attempt": env.get("GITHUB_RUN_ATTEMPT", "").strip() or None,
        "workflow": env.get("GITHUB_WORKFLOW", "").strip() or None,
        "job": env.get("GITHUB_JOB", "").strip() or None,
        "url": f"{server.rstrip('/')}/{repo}/actions/runs/{run_id}"
        if server and repo and run_id
        else None,
        "actor": env.get("GITHUB_ACTOR", "").strip() or env.get("USER", "").strip() or None,
    }


def overall(results: Sequence[str], interrupted: bool) -> str:
    """One word for the whole apply: ``interrupted``, ``failed``, ``applied`` or ``nothing``."""
    if interrupted:
        return "interrupted"
    if any(r in ("failed", "refused") for r in results):
        return "failed"
    if any(r == "applied" for r in results):
        return "applied"
    return "nothing"


def link(key: str, data: bytes | None) -> dict[str, Any]:
    """How a record names another: its key and the SHA-256 of its bytes (None when those
    bytes could not be read)."""
    return {"key": key, "sha256": digest(data) if data is not None else None}


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def encode(doc: Mapping[str, Any]) -> bytes:
    """The bytes a record is stored as (and its successors' digests are of)."""
    return (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode("utf-8")


def _who(approve: bool, env: Mapping[str, str], run: Mapping[str, Any]) -> str | None:
    return (env.get("IAC_APPROVED_BY", "").strip() or run["actor"]) if approve else None


def started(
    summary: Summary,
    *,
    apply_id: str,
    head: str | None,
    approve_manual: bool,
    at: datetime,
    env: Mapping[str, str],
    previous: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The record written before an apply touches anything: the plans it is about to
    apply (each unit's plan digest), at which commit, on whose word."""
    run = run_info(env)
    return {
        "version": AUDIT_VERSION,
        "state": STARTED,
        "apply": apply_id,
        "at": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": head,
        "plans_head": summary.head,
        "approve_manual": approve_manual,
        "approved_by": _who(approve_manual, env, run),
        "run": run,
        "units": [
            {"path": path, "plan_sha256": sha} for path, sha in summary.plan_digests().items()
        ],
        "previous": dict(previous) if previous is not None else None,
    }


def record(
    apply_doc: ApplyRecord,
    summary: Summary,
    *,
    at: datetime,
    env: Mapping[str, str],
    apply_id: str,
    started_link: Mapping[str, Any],
    previous: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The ``completed`` record of the run that just ended (the last entry of
    ``apply_doc["runs"]``), naming its ``started`` record."""
    this = apply_doc.last_run()
    digests = summary.plan_digests()
    units = [
        {
            "path": u.path,
            "plan_sha256": digests.get(u.path),
            "result": u.result,
            "reason": u.reason[:REASON_CHARS],
        }
        for u in (this.units if this is not None else ())
    ]
    approve = apply_doc.approve_manual
    run = run_info(env)
    return {
        "version": AUDIT_VERSION,
        "state": COMPLETED,
        "apply": apply_id,
        "at": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": apply_doc.head,
        "plans_head": apply_doc.plans_head,
        "approve_manual": approve,
        "approved_by": _who(approve, env, run),
        "run": run,
        "result": overall([str(u["result"]) for u in units], this is not None and this.interrupted),
        "units": units,
        "started": dict(started_link),
        "previous": dict(previous) if previous is not None else None,
    }


def key(doc: Mapping[str, Any], *, at: datetime, suffix: str) -> str:
    """``audit/YYYY/MM/DD/YYYYMMDDTHHMMSS.ffffffZ-<commit12>-<suffix>.json``: sorted keys
    are time order, to the microsecond (two applies in one second keep their order)."""
    commit = str(doc.get("commit") or "nocommit")[:12]
    return f"{PREFIX}{at:%Y/%m/%d}/{at:%Y%m%dT%H%M%S.%f}Z-{commit}-{suffix}.json"


def parse_since(text: str) -> date:
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(f"--since {text!r}: expected a date as YYYY-MM-DD") from None


def key_date(name: str) -> date | None:
    """The day a record key was written, or None for a key that is not a record."""
    found = _KEY_TIME.match(name)
    if not found:
        return None
    return date(int(found[1]), int(found[2]), int(found[3]))


def keys_since(names: Sequence[str], since: date | None) -> list[str]:
    """The record keys written on or after ``since`` (all when None), oldest first."""
    out = [n for n in names if (d := key_date(n)) is not None and (since is None or d >= since)]
    return sorted(out)


@dataclass(frozen=True)
class Entry:
    """One key under ``audit/`` as read back: its bytes' digest (None: unreadable) and
    its record (None: damaged, ``problem`` says why)."""

    key: str
    sha256: str | None
    doc: Mapping[str, Any] | None
    problem: str | None = None


def _link(doc: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    value = doc.get(name)
    return value if isinstance(value, Mapping) else None


def linked_keys(entries: Sequence[Entry]) -> set[str]:
    """Every key the readable records name (``previous`` and ``started``)."""
    out: set[str] = set()
    for entry in entries:
        for name in ("previous", "started"):
            found = _link(entry.doc or {}, name)
            if found is not None:
                out.add(str(found.get("key")))
    return out


def chain_problems(
    entries: Sequence[Entry], present: Sequence[str], digests: Mapping[str, str | None]
) -> list[str]:
    """One line per break of the chain among ``entries`` (oldest first): a record a later
    one names that is gone (deleted) or whose bytes changed since (edited).

    ``present``: every record key in the store; ``digests``: the SHA-256 of each named
    key that was read (None: unreadable, already reported as damaged). A record with
    no previous is the start of the chain: only records before every chained one
    (the first, or firsts written at once) may be one.
    """
    keys, out = set(present), []
    chained = False
    for entry in entries:
        doc = entry.doc
        if doc is None or doc.get("version") == 1:  # damaged (named apart), or before the chain
            continue
        previous = _link(doc, "previous")
        if previous is None and chained:
            out.append(
                f"{entry.key}: names no previous record though records before it do: it was "
                "written by a tool that could not list audit/, or the records before it were "
                "replaced; compare with the workflow runs of that day"
            )
        chained = chained or previous is not None
        for name, found in (("previous", previous), ("started", _link(doc, "started"))):
            if found is None:
                continue
            target, want = str(found.get("key")), found.get("sha256")
            if target not in keys:
                out.append(
                    f"{target}: missing: {entry.key} names it as its {name} record, so it was "
                    "deleted after; restore it from the bucket's versions or a copy"
                )
            elif want is None:
                out.append(
                    f"{target}: unverified: {entry.key} names it as its {name} record but "
                    "could not read it when it was written; give the apply identity "
                    "s3:GetObject on audit/*"
                )
            elif digests.get(target) is not None and digests[target] != want:
                out.append(
                    f"{target}: changed after it was written: its SHA-256 is not the one "
                    f"{entry.key} recorded; restore it from the bucket's versions or a copy"
                )
    return out


def applies(entries: Sequence[Entry]) -> list[Mapping[str, Any]]:
    """The readable records to list, one per apply, oldest first: a ``completed`` record
    (its ``started`` one is not listed apart), a ``started`` one no completion names (the
    apply was killed, or is still running), a record from before the chain."""
    done = {
        str(s.get("key"))
        for e in entries
        if e.doc is not None and (s := _link(e.doc, "started")) is not None
    }
    return [
        e.doc
        for e in entries
        if e.doc is not None and not (e.doc.get("state") == STARTED and e.key in done)
    ]


def render(doc: Mapping[str, Any]) -> str:
    """One line per apply: when, commit, result, approval and run, then the units. What
    the record holds is shown escaped (:func:`tooling.core.text.terminal.escape`): a name or a
    path cannot move the cursor, retitle the terminal or reorder the line."""
    run = doc.get("run") or {}
    who = f" approved by {doc['approved_by']}" if doc.get("approved_by") else ""
    where = f" run {run['id']}" if run.get("id") else ""
    if doc.get("state") == STARTED:
        result = "interrupted (started, never completed: killed, or still running)"
        units = ", ".join(f"{u['path']} not completed" for u in doc.get("units") or [])
    else:
        result = str(doc.get("result"))
        units = ", ".join(f"{u['path']} {u['result']}" for u in doc.get("units") or [])
    line = f"{doc.get('at')} {str(doc.get('commit') or '')[:12]} {result}{who}{where}: {units or 'no unit'}"
    return escape(line)
