"""One GitHub issue kept by a hidden marker: found, opened, updated or closed.

The drift check and the runner health check each keep one issue current
(:mod:`tooling.commands.drift`, :mod:`tooling.engine.ci.runners`). The issue is
found by its hidden marker among the open issues with ``label`` (or without
it, when someone removed the label, which is then put back). What it should
say is the caller's decision: ``wanted`` (title, body) keeps it open with that
text, None closes it. An unchanged re-run sends no write at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tooling.io.githubapi import JSONObject


def find(forge: Any, marker: str, label: str) -> JSONObject | None:
    """The open issue carrying ``marker``, labelled ``label`` first, else any."""
    found: JSONObject | None = forge.find_issue(marker, labels=[label]) or forge.find_issue(marker)
    return found


def keep(
    forge: Any,
    issue: JSONObject | None,
    label: str,
    wanted: tuple[str, str] | None,
    *,
    comment: str | None = None,
) -> JSONObject:
    """Make ``issue`` (from :func:`find`) say ``wanted``, or close it when None.

    ``comment`` is posted on an existing issue before it is updated or closed
    (not on a new one: its body says it all). Returns ``{number, url, action}``,
    ``action`` one of ``created | updated | unchanged | closed | none``.
    """
    if issue is None:
        if wanted is None:
            return {"number": None, "url": None, "action": "none"}
        created = forge.create_issue(wanted[0], wanted[1], labels=[label])
        return {
            "number": int(created["number"]),
            "url": created.get("html_url"),
            "action": "created",
        }
    number = int(issue["number"])
    url = issue.get("html_url")
    labels = {
        str(item.get("name") if isinstance(item, dict) else item)
        for item in issue.get("labels") or ()
    }
    if label not in labels:
        forge.add_labels(number, [label])
    if wanted is None:
        if comment:
            forge.comment(number, comment)
        forge.update_issue(number, state="closed")
        return {"number": number, "url": url, "action": "closed"}
    if comment:
        forge.comment(number, comment)
    title, body = wanted
    if title == issue.get("title") and body == issue.get("body"):
        return {"number": number, "url": url, "action": "unchanged"}
    forge.update_issue(number, title=title, body=body)
    return {"number": number, "url": url, "action": "updated"}


def run_url_from_env(env: Mapping[str, str]) -> str | None:
    server, repo, run_id = (
        env.get(k, "").strip() for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID")
    )
    return (
        f"{server.rstrip('/')}/{repo}/actions/runs/{run_id}" if server and repo and run_id else None
    )
