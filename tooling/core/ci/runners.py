"""The executors' runners and their state, from GitHub's runner list. Pure.

GitHub lists a repository's self-hosted runners (``GET
/repos/{owner}/{repo}/actions/runners``) with a ``status`` (``online`` |
``offline``), ``busy`` and their ``labels``. A job with ``runs-on: [a, b]``
goes to a runner that carries *every* label, so an executor whose
``runs_on`` names ``self-hosted`` can run only when such a runner is online;
a busy runner is online (the job waits its turn, it is not stuck). Hosted
executors (``runs_on`` without ``self-hosted``) run on GitHub's own runners,
which the list does not show: they are never "unavailable".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tooling.model.policy import Executor

SELF_HOSTED = "self-hosted"
#: the label of the "no online runner" issues (one per executor, told apart by :func:`marker`)
LABEL = "runners"


def marker(executor: str) -> str:
    """The hidden marker of executor's one "no online runner" issue."""
    return f"<!-- iac-tooling:runner-health:{executor} -->"


def is_self_hosted(executor: Executor) -> bool:
    return SELF_HOSTED in executor.runs_on


def runner_labels(runner: Mapping[str, Any]) -> list[str]:
    labels = runner.get("labels") or []
    return [
        str(label.get("name") if isinstance(label, Mapping) else label)
        for label in labels
        if label is not None
    ]


def runner_state(runner: Mapping[str, Any]) -> str:
    """``busy``, ``idle`` (both online) or ``offline``."""
    if str(runner.get("status") or "").lower() != "online":
        return "offline"
    return "busy" if runner.get("busy") is True else "idle"


def carries(runner: Mapping[str, Any], labels: Sequence[str]) -> bool:
    """Whether ``runner`` carries every label (GitHub compares them case-insensitively)."""
    have = {name.lower() for name in runner_labels(runner)}
    return all(label.lower() in have for label in labels)


def report(
    executors: Mapping[str, Executor], runners: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """``{"executors": [{"executor", "runs_on", "self_hosted", "online", "runners": [...]}]}``.

    ``online`` is the number of matching runners online (busy or idle); for a
    hosted executor it is ``null`` (GitHub's hosted runners are not listed).
    """
    out = []
    for name, executor in executors.items():
        if not is_self_hosted(executor):
            out.append(
                {
                    "executor": name,
                    "runs_on": list(executor.runs_on),
                    "self_hosted": False,
                    "online": None,
                    "runners": [],
                }
            )
            continue
        matching: list[dict[str, Any]] = [
            {
                "name": str(r.get("name") or ""),
                "id": r.get("id"),
                "state": runner_state(r),
                "labels": runner_labels(r),
            }
            for r in runners
            if carries(r, executor.runs_on)
        ]
        matching.sort(key=lambda r: str(r["name"]))
        out.append(
            {
                "executor": name,
                "runs_on": list(executor.runs_on),
                "self_hosted": True,
                "online": sum(1 for r in matching if r["state"] != "offline"),
                "runners": matching,
            }
        )
    return {"executors": out}


def unavailable(entry: Mapping[str, Any]) -> str | None:
    """The one-line reason an executor's jobs would wait forever, or None when it can run."""
    if not entry.get("self_hosted") or entry.get("online"):
        return None
    labels = ", ".join(entry.get("runs_on") or [])
    runners = entry.get("runners") or []
    seen = (
        f"{len(runners)} runner(s) carry its labels, all offline ({', '.join(r['name'] for r in runners)})"
        if runners
        else "no runner carries its labels"
    )
    return (
        f"executor {entry.get('executor')}: no online self-hosted runner with labels [{labels}] "
        f"({seen}); start the runner service on the LAN host (docs/runbooks.md, "
        f'"The LAN runner is down") and re-run the job'
    )


def render(doc: Mapping[str, Any]) -> list[str]:
    """The human listing: one line per executor, then one per runner."""
    lines: list[str] = []
    for entry in doc.get("executors") or []:
        labels = ", ".join(entry["runs_on"])
        if not entry["self_hosted"]:
            lines.append(f"{entry['executor']}: GitHub-hosted [{labels}] (not listed by the API)")
            continue
        lines.append(f"{entry['executor']}: {entry['online']} online [{labels}]")
        for runner in entry["runners"]:
            lines.append(f"  {runner['state']:<8} {runner['name']}")
        if not entry["runners"]:
            lines.append("  (no runner carries these labels)")
    return lines


def issue_title(executor: str) -> str:
    return f"No online runner for executor {executor}"


def issue_body(entry: Mapping[str, Any], *, checked_at: str, run_url: str | None) -> str:
    reason = unavailable(entry) or ""
    lines = [
        marker(str(entry["executor"])),
        f"The `{entry['executor']}` executor has no online runner (checked {checked_at}): "
        "its plans and applies fail at dispatch until one is back.",
        "",
        reason,
        "",
        'Runbook: docs/runbooks.md, "The LAN runner is down". This issue closes itself '
        "on the first scheduled check that finds a runner online.",
    ]
    if run_url:
        lines += ["", f"Checked by {run_url}"]
    return "\n".join(lines) + "\n"


def back_comment(entry: Mapping[str, Any], *, checked_at: str) -> str:
    names = ", ".join(r["name"] for r in entry["runners"] if r["state"] != "offline")
    return f"A runner for `{entry['executor']}` is online again ({names}, checked {checked_at}): closing."
