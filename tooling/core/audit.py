"""The audit trail of applies: one JSON record per ``invoke apply``. Pure.

A record says what was applied and on whose word: the commit the apply ran
at and the commit the plans were made at, each unit's plan digest (the
SHA-256 of the binary plan the reviewers saw, from ``summary.json``) and
result, whether manual units were approved, by whom and in which workflow
run. Records are never rewritten: each apply adds one object under
``audit/`` (:func:`key`), named so that listing the keys lists the records in
time order.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any

from tooling.errors import UsageError

PREFIX = "audit/"
AUDIT_VERSION = 1
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


def record(
    apply_doc: Mapping[str, Any],
    summary: Mapping[str, Any],
    *,
    at: datetime,
    env: Mapping[str, str],
) -> dict[str, Any]:
    """The audit record of the run that just ended (the last entry of ``apply_doc["runs"]``)."""
    runs = [r for r in apply_doc.get("runs") or [] if isinstance(r, Mapping)]
    this = runs[-1] if runs else {}
    digests = {
        str(u.get("path")): u.get("plan_sha256")
        for u in summary.get("units") or []
        if isinstance(u, Mapping)
    }
    units = [
        {
            "path": str(u.get("path")),
            "plan_sha256": digests.get(str(u.get("path"))),
            "result": str(u.get("result")),
            "reason": str(u.get("reason") or ""),
        }
        for u in this.get("units") or []
        if isinstance(u, Mapping)
    ]
    approve = bool(apply_doc.get("approve_manual"))
    run = run_info(env)
    approver = env.get("IAC_APPROVED_BY", "").strip() or run["actor"]
    return {
        "version": AUDIT_VERSION,
        "at": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": apply_doc.get("head"),
        "plans_head": apply_doc.get("plans_head"),
        "approve_manual": approve,
        "approved_by": approver if approve else None,
        "run": run,
        "result": overall([str(u["result"]) for u in units], bool(this.get("interrupted"))),
        "units": units,
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


def render(doc: Mapping[str, Any]) -> str:
    """One line per record: when, commit, result, approval and run, then the units."""
    run = doc.get("run") or {}
    who = f" approved by {doc['approved_by']}" if doc.get("approved_by") else ""
    where = f" run {run['id']}" if run.get("id") else ""
    units = ", ".join(f"{u['path']} {u['result']}" for u in doc.get("units") or []) or "no unit"
    return f"{doc.get('at')} {str(doc.get('commit') or '')[:12]} {doc.get('result')}{who}{where}: {units}"
