"""Runner health: each executor's runners from GitHub's API, the legs whose executor has no
online runner (the routing job), and the one "no online runner" issue per self-hosted
executor. ``invoke runners`` is :mod:`tooling.commands.runners`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from tooling.core.ci import runners
from tooling.engine.ci import issues
from tooling.errors import ToolingError, UsageError
from tooling.io.ui import say
from tooling.io.workspace import Workspace


def status(ws: Workspace, *, forge: Any = None) -> dict[str, Any]:
    """The runners document: every executor of policy.toml, with its runners."""
    from tooling.io.forge import RUNNERS_TOKEN_HELP, runners_forge_from_env

    declared = ws.policy.executors
    if not any(runners.is_self_hosted(e) for e in declared.values()):
        return runners.report(declared, [])
    client = forge if forge is not None else runners_forge_from_env()
    try:
        listed = client.list_runners()
    except ToolingError as exc:
        if "HTTP 403" in str(exc) or "HTTP 404" in str(exc):
            raise ToolingError(f"{exc} Listing runners: {RUNNERS_TOKEN_HELP}") from None
        raise
    return runners.report(declared, listed)


def entry_of(doc: Mapping[str, Any], executor: str) -> Mapping[str, Any]:
    for entry in doc["executors"]:
        if entry["executor"] == executor:
            return dict(entry)
    names = ", ".join(e["executor"] for e in doc["executors"])
    raise UsageError(f"--require {executor}: policy.toml declares no such executor ({names})")


def sync_issues(doc: Mapping[str, Any], *, forge: Any = None) -> list[dict[str, Any]]:
    """Open or close each self-hosted executor's one "no online runner" issue."""
    if forge is None:
        from tooling.io.forge import Forge

        forge = Forge.from_env()
    checked_at = datetime.now(UTC).replace(microsecond=0).isoformat()
    run_url = issues.run_url_from_env(os.environ)
    out = []
    for entry in doc["executors"]:
        if not entry["self_hosted"]:
            continue
        found = issues.find(forge, runners.marker(entry["executor"]), runners.LABEL)
        down = runners.unavailable(entry) is not None
        if down and found is not None:
            info = {"number": found["number"], "url": found.get("html_url"), "action": "kept"}
        else:
            wanted = (
                (
                    runners.issue_title(entry["executor"]),
                    runners.issue_body(entry, checked_at=checked_at, run_url=run_url),
                )
                if down
                else None
            )
            comment = None if down else runners.back_comment(entry, checked_at=checked_at)
            info = issues.keep(forge, found, runners.LABEL, wanted, comment=comment)
        if info["action"] != "none":
            say(f"runner issue for {entry['executor']}: #{info['number']} {info['action']}")
        out.append({"executor": entry["executor"], **info})
    return out


def unavailable_legs(
    ws: Workspace, legs: list[dict[str, Any]], *, forge: Any = None
) -> list[dict[str, Any]]:
    """The legs whose executor has no online runner: ``{"executor", "message"}`` each.

    GitHub's API is asked only when a leg is self-hosted."""
    declared = ws.policy.executors
    if not any(
        leg["executor"] in declared and runners.is_self_hosted(declared[leg["executor"]])
        for leg in legs
    ):
        return []
    doc = status(ws, forge=forge)
    out = []
    for leg in legs:
        reason = runners.unavailable(entry_of(doc, str(leg["executor"])))
        if reason:
            out.append({"executor": leg["executor"], "message": reason})
    return out
