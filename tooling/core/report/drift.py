"""Drift as data: a unit's verdict, the report, and the one issue's text and state. Pure.

:mod:`tooling.commands.drift` plans the units, writes the report and keeps the
issue current through the forge; its docstring says what counts as drift.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tooling.core.plan.planjson import COUNT_KEYS
from tooling.core.plan.results import Result
from tooling.core.plan.status import Status

DRIFT_VERSION = 1
MARKER = "<!-- iac-tooling:drift-report -->"
STATE_OPEN = "<!-- iac-tooling:drift-state "
STATE_CLOSE = " -->"
LABEL = "drift"
#: addresses listed per unit in the issue (the rest is counted)
MAX_ADDRESSES = 20
#: the issue body's size budget (GitHub refuses bodies over 65,536 characters)
BODY_BUDGET = 60_000
DEFAULT_OUT = Path(".iac") / "drift"

JSONObject = dict[str, Any]


# --------------------------------------------------------------------------- one unit (pure)


@dataclass(frozen=True)
class UnitDrift:
    """The drift verdict for one unit."""

    path: str
    tier: str
    executor: str
    status: str  # drifted | in-sync | error | not-planned
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNT_KEYS, 0))
    # every address that differs: changed outside first, then planned changes
    drift: tuple[str, ...] = ()
    changed_outside: tuple[tuple[str, str], ...] = ()  # (address, action) from resource_drift
    changes: tuple[tuple[str, str], ...] = ()  # (address, action) the plan would make
    output_changes: tuple[str, ...] = ()
    exit_code: int | None = None
    error: str | None = None
    text_file: str | None = None
    log_file: str | None = None

    @property
    def drifted(self) -> bool:
        return self.status == "drifted"

    @property
    def checked(self) -> bool:
        """Planned successfully: its verdict (drifted or in sync) is known."""
        return self.status in ("drifted", "in-sync")

    def to_json(self) -> JSONObject:
        return {
            "path": self.path,
            "tier": self.tier,
            "executor": self.executor,
            "status": self.status,
            "drifted": self.drifted,
            "exit_code": self.exit_code,
            "counts": dict(self.counts),
            "drift": list(self.drift),
            "changed_outside": [{"address": a, "action": x} for a, x in self.changed_outside],
            "changes": [{"address": a, "action": x} for a, x in self.changes],
            "output_changes": list(self.output_changes),
            "error": self.error,
            "text_file": self.text_file,
            "log_file": self.log_file,
        }


def classify(result: Result) -> UnitDrift:
    """A plan result as a drift verdict."""
    base = UnitDrift(
        result.path,
        result.tier,
        result.executor,
        "error" if result.status == Status.ERROR else "not-planned",
        error=result.error,
        log_file=result.log_file,
        exit_code=result.exit_code,
    )
    summary = result.summary
    if result.status not in (Status.CHANGES, Status.NO_CHANGES) or summary is None:
        return base
    outside = tuple((c.address, c.action) for c in summary.drift)
    changes = tuple((c.address, c.action) for c in summary.changes)
    addresses = list(dict.fromkeys([a for a, _ in outside] + [a for a, _ in changes]))
    drifted = result.exit_code == 2 or summary.has_changes or bool(outside)
    return UnitDrift(
        result.path,
        result.tier,
        result.executor,
        "drifted" if drifted else "in-sync",
        counts=dict(result.counts),
        drift=tuple(addresses),
        changed_outside=outside,
        changes=changes,
        output_changes=summary.output_changes,
        exit_code=result.exit_code,
        text_file=result.text_file,
        log_file=result.log_file,
    )


# --------------------------------------------------------------------------- the report (pure)


def document(
    units: Sequence[UnitDrift],
    *,
    head: str,
    executor: str | None,
    tools: Mapping[str, str],
    checked_at: str,
    issue: Mapping[str, Any] | None = None,
) -> JSONObject:
    """``drift.json`` (docs/commands.md documents it)."""
    return {
        "version": DRIFT_VERSION,
        "head": head,
        "executor": executor,
        "checked_at": checked_at,
        "tools": dict(tools),
        "drifted": [u.path for u in units if u.drifted],
        "errors": [u.path for u in units if not u.checked],
        "units": [u.to_json() for u in units],
        "issue": dict(issue) if issue is not None else None,
    }


def _counts(c: Mapping[str, int]) -> str:
    return " | ".join(str(c.get(k, 0)) for k in ("create", "update", "delete", "replace"))


def state_words(c: Mapping[str, int]) -> str:
    """``2 to forget, 1 to import``: what the plan does to the state alone (the table's
    columns count the rest); empty when nothing."""
    return ", ".join(
        f"{c[k]} to {k}" for k in ("forget", "import", "move") if int(c.get(k, 0) or 0)
    )


def _what(words: str, listed: str) -> str:
    return f"{words}: {listed}" if words and listed else (words or listed)


def addresses_text(addresses: Sequence[str], limit: int = MAX_ADDRESSES, more: int = 0) -> str:
    """The first ``limit`` addresses in backticks, and how many more there are."""
    shown = ", ".join(f"`{a}`" for a in addresses[:limit])
    rest = max(0, len(addresses) - limit) + more
    if rest and not shown:
        return f"{rest} address(es), listed in the run's report"
    return shown + (f" … and {rest} more" if rest else "")


def verdict(units: Sequence[UnitDrift]) -> str:
    drifted = [u for u in units if u.drifted]
    failed = [u for u in units if not u.checked]
    checked = len(units) - len(failed)
    if failed:
        mark = "❌"
    elif drifted:
        mark = "⚠️"
    else:
        mark = "✅"
    text = f"{mark} **Drift:** {checked} unit(s) checked, {len(drifted)} drifted"
    if failed:
        text += f", {len(failed)} could not be planned"
    return text


def render_markdown(doc: Mapping[str, Any], units: Sequence[UnitDrift]) -> str:
    """``drift.md``: the run's report (also the job summary)."""
    where = f"executor `{doc['executor']}`" if doc.get("executor") else "every executor"
    lines = [
        "## Drift report",
        "",
        verdict(units),
        "",
        f"Planned against reality at `{str(doc['head'])[:12]}` ({where}), {doc['checked_at']}.",
        "",
        "| unit | tier / executor | + | ~ | - | ± | status | what differs |",
        "|---|---|--:|--:|--:|--:|---|---|",
    ]
    for u in units:
        if u.drifted:
            what = _what(state_words(u.counts), addresses_text(u.drift)) or (
                "outputs: " + ", ".join(f"`{o}`" for o in u.output_changes)
                if u.output_changes
                else "see the plan text"
            )
        elif u.checked:
            what = ""
        else:
            what = (u.error or "").splitlines()[0][:200] if u.error else ""
        status = {"drifted": "**drifted**", "in-sync": "in sync", "error": "**error**"}.get(
            u.status, u.status
        )
        lines.append(
            f"| `{u.path}` | {u.tier} / {u.executor} | {_counts(u.counts)} | {status} | {what} |"
        )
    outside = [(u.path, a, x) for u in units for a, x in u.changed_outside]
    if outside:
        lines += ["", "Changed outside OpenTofu (seen by the refresh):", ""]
        lines += [f"- `{path}`: `{address}` ({action})" for path, address, action in outside]
    if any(u.drifted for u in units):
        lines += [
            "",
            "Each unit's plan text is in the output folder (`units/<unit>/plan.txt`). "
            'What to do: docs/runbooks.md, "Drift was reported".',
        ]
    issue = doc.get("issue")
    if issue and issue.get("number"):
        lines += ["", f"Drift issue: #{issue['number']} ({issue['action']})."]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- the issue (pure)


@dataclass(frozen=True)
class Entry:
    """One drifted unit as the issue lists it."""

    path: str
    tier: str
    executor: str
    counts: dict[str, int]
    addresses: tuple[str, ...]
    more: int  # addresses not listed
    first_seen: str  # YYYY-MM-DD
    first_commit: str
    first_run: str | None = None

    def to_json(self) -> JSONObject:
        return {
            "path": self.path,
            "tier": self.tier,
            "executor": self.executor,
            "counts": dict(self.counts),
            "addresses": list(self.addresses),
            "more": self.more,
            "first_seen": self.first_seen,
            "first_commit": self.first_commit,
            "first_run": self.first_run,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Entry:
        counts = data.get("counts") or {}
        return cls(
            path=str(data["path"]),
            tier=str(data.get("tier", "")),
            executor=str(data.get("executor", "")),
            counts={k: int(counts.get(k, 0)) for k in COUNT_KEYS},
            addresses=tuple(str(a) for a in data.get("addresses") or ()),
            more=int(data.get("more", 0)),
            first_seen=str(data.get("first_seen", "")),
            first_commit=str(data.get("first_commit", "")),
            first_run=str(data["first_run"]) if data.get("first_run") else None,
        )


@dataclass(frozen=True)
class Merged:
    entries: tuple[Entry, ...]
    added: tuple[str, ...] = ()
    resolved: tuple[str, ...] = ()
    gone: tuple[str, ...] = ()  # listed, but no longer a unit of the repository


def parse_state(body: str) -> dict[str, Entry]:
    """The units an issue body lists (its hidden state block); empty if there is none."""
    start = body.rfind(STATE_OPEN)
    if start < 0:
        return {}
    end = body.find(STATE_CLOSE, start + len(STATE_OPEN))
    if end < 0:
        return {}
    try:
        data = json.loads(body[start + len(STATE_OPEN) : end])
        return {e.path: e for e in (Entry.from_json(item) for item in data["units"])}
    except (ValueError, KeyError, TypeError, AttributeError):
        return {}


def state_block(entries: Sequence[Entry]) -> str:
    text = json.dumps(
        {"version": DRIFT_VERSION, "units": [e.to_json() for e in entries]}, separators=(",", ":")
    )
    # never let a value end the HTML comment early
    return STATE_OPEN + text.replace(">", "\\u003e") + STATE_CLOSE


def merge(
    previous: Mapping[str, Entry],
    units: Sequence[UnitDrift],
    *,
    order: Sequence[str],
    head: str,
    today: str,
    run_url: str | None,
) -> Merged:
    """The issue's units after this run.

    Units this run checked replace their entries (drifted: listed, keeping
    when it was first seen; in sync: removed). Units it did not check (another
    executor's, or whose plan failed) keep their entries. Entries for paths
    that are no longer units (``order``: every unit of the repository) go.
    """
    entries = dict(previous)
    added: list[str] = []
    resolved: list[str] = []
    for u in units:
        if not u.checked:
            continue
        old = entries.get(u.path)
        if u.drifted:
            entries[u.path] = Entry(
                u.path,
                u.tier,
                u.executor,
                dict(u.counts),
                u.drift[:MAX_ADDRESSES],
                max(0, len(u.drift) - MAX_ADDRESSES),
                old.first_seen if old else today,
                old.first_commit if old else head[:12],
                old.first_run if old else run_url,
            )
            if old is None:
                added.append(u.path)
        elif old is not None:
            del entries[u.path]
            resolved.append(u.path)
    position = {path: i for i, path in enumerate(order)}
    gone = tuple(sorted(p for p in entries if p not in position))
    for path in gone:
        del entries[path]
    ordered = tuple(sorted(entries.values(), key=lambda e: position[e.path]))
    return Merged(ordered, tuple(added), tuple(resolved), gone)


def issue_title(entries: Sequence[Entry]) -> str:
    if len(entries) == 1:
        return f"Drift: {entries[0].path} differs from the code"
    names = ", ".join(e.path for e in entries[:3]) + (", …" if len(entries) > 3 else "")
    return f"Drift in {len(entries)} units: {names}"


def issue_body(entries: Sequence[Entry]) -> str:
    """The issue's body: fewer addresses per unit when all of them would not fit
    GitHub's limit (the counts and every unit always stay)."""
    body = ""
    for limit in (MAX_ADDRESSES, 5, 1, 0):
        body = _issue_body([_shorten(e, limit) for e in entries])
        if len(body) <= BODY_BUDGET:
            break
    return body


def _shorten(entry: Entry, limit: int) -> Entry:
    if len(entry.addresses) <= limit:
        return entry
    dropped = len(entry.addresses) - limit
    return replace(entry, addresses=entry.addresses[:limit], more=entry.more + dropped)


def _issue_body(entries: Sequence[Entry]) -> str:
    lines = [
        MARKER,
        "The scheduled drift check (`invoke drift`, `.github/workflows/drift.yml`) planned these units "
        "against reality and found differences from the code on the default branch. This issue is kept "
        "up to date by that check: a unit is added when drift appears and removed when it is gone; "
        "the issue is closed when none remain.",
        "",
        "| unit | executor | + | ~ | - | ± | since |",
        "|---|---|--:|--:|--:|--:|---|",
    ]
    for e in entries:
        since = (
            f"{e.first_seen} (`{e.first_commit}`"
            + (f", [run]({e.first_run})" if e.first_run else "")
            + ")"
        )
        lines.append(f"| `{e.path}` | {e.executor} | {_counts(e.counts)} | {since} |")
    lines.append("")
    for e in entries:
        listed = _what(state_words(e.counts), addresses_text(e.addresses, more=e.more))
        lines.append(f"- `{e.path}`: {listed or 'outputs only'}")
    lines += [
        "",
        '**What to do** (docs/runbooks.md, "Drift was reported"): read the unit\'s plan '
        "(`invoke plan --unit PATH`, or the `drift-<executor>` artifact of the run). If the change outside "
        "OpenTofu was wrong, re-apply the code through a pull request that touches the unit; if it was "
        "right, change the code to match it until the plan is empty.",
        "",
        "<sub>Each check rewrites this body (discuss in comments); "
        "the hidden block below is the check's memory.</sub>",
        "",
        state_block(entries),
    ]
    return "\n".join(lines) + "\n"


def change_comment(merged: Merged, *, head: str, executor: str | None, run_url: str | None) -> str:
    where = f" ({executor})" if executor else ""
    run = f", [run]({run_url})" if run_url else ""
    lines = [f"Drift check at `{head[:12]}`{where}{run}:"]
    by_path = {e.path: e for e in merged.entries}
    lines += [
        f"- new drift: `{p}`: {addresses_text(by_path[p].addresses, more=by_path[p].more)}"
        for p in merged.added
    ]
    lines += [f"- drift resolved: `{p}` (its plan is empty again)" for p in merged.resolved]
    lines += [f"- no longer a unit: `{p}` (removed from this issue)" for p in merged.gone]
    if not merged.entries:
        lines.append("")
        lines.append("No drift remains. Closing.")
    return "\n".join(lines) + "\n"
