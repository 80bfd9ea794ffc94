"""The apply record (``apply.json``, :class:`ApplyRecord`) and report (``apply.md``),
and what an apply's outcome means. Pure: built from the run's results, OpenTofu's
output and the earlier record; the process is :mod:`tooling.engine.apply.applier`'s, the
file :mod:`tooling.engine.plan.planfolder`'s (its one reader and one writer), what to do
with each unit :mod:`tooling.core.apply.decision`'s.

The record is merged, never overwritten: each run adds itself to ``runs`` and
updates ``units`` (the latest result per unit). The foundation's apply and the
app tier's (:mod:`tooling.commands.apptier`) write the same document.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from tooling.core.plan import fields
from tooling.core.plan.results import Result
from tooling.core.plan.status import Status
from tooling.core.plan.summary import Summary
from tooling.core.text import markdown

T = TypeVar("T")

#: plan statuses that leave nothing to apply, a failure to act on
UNPLANNED = (Status.ERROR, Status.NOT_PLANNED, Status.BLOCKED)
RESULTS = ("applied", "no-changes", "waiting-approval", "refused", "failed", "not-run")
#: in the record only, while a unit's apply runs (or if the tool was killed meanwhile)
RUNNING = "running"
#: a result's mark in the log
MARKS = {
    "applied": "✓",
    "no-changes": "=",
    "waiting-approval": "⏸",
    "refused": "✗",
    "failed": "✗",
    "not-run": "-",
}
RECORD_VERSION = 2


@dataclass(frozen=True)
class UnitApply:
    """One unit's entry in the record: what an apply did with it, and why."""

    path: str
    result: str
    reason: str
    cascaded: bool = False
    gate: str = "none"
    earlier: bool = False  # applied by an earlier run on this folder, left alone
    #: a re-plan waiting for a new approval: its text (redacted), shown in apply.md
    plan_text: str | None = field(default=None, compare=False, repr=False)
    #: the plan an approval of this unit applies when it is not the summary's: the re-plan
    #: made after its upstream applied (:class:`WaitingPlan`), shown before it is approved
    waiting_plan: WaitingPlan | None = None

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "path": self.path,
            "result": self.result,
            "reason": self.reason,
            "cascaded": self.cascaded,
            "gate": self.gate,
            "earlier": self.earlier,
        }
        if self.waiting_plan is not None:
            doc["waiting_plan"] = self.waiting_plan.to_json()
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> UnitApply:
        """The entry ``doc`` describes (read against apply.schema.json first)."""
        plan = doc.get("waiting_plan")
        return cls(
            fields.text(doc, "path"),
            fields.text(doc, "result"),
            fields.text(doc, "reason"),
            fields.flag(doc, "cascaded"),
            fields.text(doc, "gate"),
            fields.flag(doc, "earlier"),
            waiting_plan=WaitingPlan.from_json(plan) if isinstance(plan, Mapping) else None,
        )

    def waiting(self) -> WaitingPlan | None:
        """The re-plan this unit waits with, when it waits with one (checked: a file under
        ``cascade/``; ``ValueError`` otherwise); None when it waits with the summary's
        plan, or does not wait."""
        if self.result != "waiting-approval" or self.waiting_plan is None:
            return None
        return self.waiting_plan.checked()


#: where the re-plans of a folder are kept (``cascade/units/<unit>/plan.tfplan``)
REPLANS = "cascade/"


@dataclass(frozen=True)
class WaitingPlan:
    """A re-plan that waits for its approval: the file (relative to the plan folder, under
    ``cascade/``) and its SHA-256, written by the run that showed it; an approval applies
    exactly this file, or nothing."""

    plan_file: str
    plan_sha256: str
    text_file: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "plan_file": self.plan_file,
            "plan_sha256": self.plan_sha256,
            "text_file": self.text_file,
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> WaitingPlan:
        """The re-plan as the record names it (the schema bounds these fields; where they
        point is :meth:`checked` when it is used)."""
        text = doc.get("text_file")
        return cls(
            fields.text(doc, "plan_file"), fields.text(doc, "plan_sha256"), text and str(text)
        )

    def checked(self) -> WaitingPlan:
        """This re-plan, when its files are under ``cascade/units/``; ``ValueError`` naming
        the file otherwise (the record was altered)."""
        for name in (self.plan_file, self.text_file or REPLANS):
            parts = name.split("/")
            if not name.startswith(REPLANS) or ".." in parts or "" in parts[:-1]:
                raise ValueError(f"{name} is not a file under {REPLANS}units/")
        return self


@dataclass
class ApplyRun:
    """The run in progress: its entries so far, and whether it was interrupted."""

    units: list[UnitApply] = field(default_factory=list)
    interrupted: bool = False

    def by_path(self) -> dict[str, UnitApply]:
        return {u.path: u for u in self.units}


@dataclass(frozen=True)
class RunEntry:
    """One run on the folder, as ``runs`` keeps it."""

    head: str | None
    approve_manual: bool
    interrupted: bool
    units: tuple[UnitApply, ...] = ()
    started_at: str | None = None

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {} if self.started_at is None else {"started_at": self.started_at}
        return doc | {
            "head": self.head,
            "approve_manual": self.approve_manual,
            "interrupted": self.interrupted,
            "units": [u.to_json() for u in self.units],
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> RunEntry:
        started = doc.get("started_at")
        return cls(
            fields.optional(doc, "head"),
            fields.flag(doc, "approve_manual"),
            fields.flag(doc, "interrupted"),
            _entries(doc, "units"),
            started if isinstance(started, str) else None,
        )


@dataclass(frozen=True)
class ApplyRecord:
    """A plan folder's apply.json: the latest result per unit (``units``) and every run on
    the folder (``runs``). Made by :func:`record_document`, written and read by
    :mod:`tooling.engine.plan.planfolder` (the one writer and the one reader)."""

    head: str | None
    plans_head: str | None
    approve_manual: bool
    interrupted: bool
    units: tuple[UnitApply, ...] = ()
    runs: tuple[RunEntry, ...] = ()
    #: the application (``invoke app-apply``)
    app: str | None = None
    version: int = RECORD_VERSION

    def unit(self, path: str) -> UnitApply | None:
        """The latest entry of unit ``path`` (None: no run recorded it)."""
        return next((u for u in self.units if u.path == path), None)

    def last_run(self) -> RunEntry | None:
        return self.runs[-1] if self.runs else None

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {} if self.app is None else {"app": self.app}
        return doc | {
            "version": self.version,
            "head": self.head,
            "plans_head": self.plans_head,
            "approve_manual": self.approve_manual,
            "interrupted": self.interrupted,
            "units": [u.to_json() for u in self.units],
            "runs": [r.to_json() for r in self.runs],
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ApplyRecord:
        """The record ``doc`` describes (checked against apply.schema.json first: this
        raises ``ValueError`` naming the first field that is missing or of the wrong
        type, for a document that was not)."""
        runs = doc.get("runs")
        if not isinstance(runs, list) or not all(isinstance(r, Mapping) for r in runs):
            raise ValueError("runs: expected a list of objects")
        version = doc.get("version")
        if not isinstance(version, int):
            raise ValueError("version: expected a whole number")
        return cls(
            fields.optional(doc, "head"),
            fields.optional(doc, "plans_head"),
            fields.flag(doc, "approve_manual"),
            fields.flag(doc, "interrupted"),
            _entries(doc, "units"),
            tuple(RunEntry.from_json(r) for r in runs),
            fields.optional(doc, "app"),
            version,
        )


def _entries(doc: Mapping[str, Any], key: str) -> tuple[UnitApply, ...]:
    units = doc.get(key)
    if not isinstance(units, list):
        raise ValueError(f"{key}: expected a list")
    out = []
    for i, unit in enumerate(units):
        if not isinstance(unit, Mapping):
            raise ValueError(f"{key}[{i}]: expected an object")
        try:
            out.append(UnitApply.from_json(unit))
        except ValueError as exc:
            raise ValueError(f"{key}[{i}]/{exc}") from None
    return tuple(out)


def result_line(entry: UnitApply) -> str:
    """The line an apply prints for a unit once its result is recorded."""
    reason = f" ({entry.reason})" if entry.reason else ""
    return f"  {MARKS[entry.result]} {entry.path}: {entry.result}{reason}"


_LOCK_ID = re.compile(r"^[\s│]*ID:\s*(\S+)", re.M)
_LOCK_WHO = re.compile(r"^[\s│]*Who:\s*(.+)$", re.M)
_LOCK_CREATED = re.compile(
    r"^[\s│]*Created:\s*(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:\.\d+)?\s*([+-]\d{4})?", re.M
)


def lock_age(created: str, offset: str | None, now: datetime) -> str:
    """``Created: 2026-12-02 16:00:20.15 +0000 UTC`` -> "3 min ago" (relative to ``now``)."""
    try:
        taken = datetime.strptime(f"{created} {offset or '+0000'}", "%Y-%m-%d %H:%M:%S %z")
    except ValueError:
        return "age unknown"
    seconds = max(0, int((now - taken).total_seconds()))
    if seconds < 120:
        return f"{seconds} s ago"
    if seconds < 7200:
        return f"{seconds // 60} min ago"
    if seconds < 172800:
        return f"{seconds // 3600} h ago"
    return f"{seconds // 86400} days ago"


def unlock_command(unit_path: str, lock_id: str) -> str:
    """The recovery command of docs/runbooks.md ("A lock is stuck"), exactly."""
    return f"cd {unit_path} && terragrunt force-unlock -force {lock_id}"


def explain_failure(
    output: str, unit_path: str = "", now: datetime | None = None, *, summary: str
) -> tuple[str, str]:
    """(result, reason) for a failed ``apply``: stale plans, lineage and lock errors are
    named; any other failure is ``summary`` (the useful part of ``output``)."""
    if "Saved plan is stale" in output:
        return (
            "refused",
            'state changed since this plan was made (OpenTofu: "Saved plan is stale"); re-plan',
        )
    if "Saved plan does not match the given state" in output:
        return "refused", (
            'the state is not the one this plan was made against (OpenTofu: "Saved plan does not match the given '
            'state": another state lineage, e.g. a migrated or replaced state); re-plan'
        )
    if "Error acquiring the state lock" in output:
        lock_id = _LOCK_ID.search(output)
        who = _LOCK_WHO.search(output)
        created = _LOCK_CREATED.search(output)
        parts = []
        if lock_id:
            parts.append(f"lock ID {lock_id.group(1)}")
        if who:
            parts.append(f"held by {who.group(1).strip()}")
        if created:
            parts.append(
                f"taken {created.group(1)} UTC{'' if not created.group(2) or created.group(2) == '+0000' else ' ' + created.group(2)}, "
                f"{lock_age(created.group(1), created.group(2), now or datetime.now(UTC))}"
            )
        reason = "the state is locked by another run (" + ", ".join(parts) + "). "
        reason += "If that run is still going, wait: it releases the lock itself. "
        if lock_id and unit_path:
            reason += (
                'If it is gone for certain (docs/runbooks.md, "A lock is stuck"), release it with: '
                + unlock_command(unit_path, lock_id.group(1))
            )
        else:
            reason += 'See docs/runbooks.md, "A lock is stuck".'
        return "failed", reason
    return "failed", summary


#: an OpenTofu error diagnostic: ``Error: …`` at the start of a line, plain (``-no-color``)
#: or in its box (``│ Error: …``); a resource's own output is prefixed by its address
_TOFU_ERROR = re.compile(r"^(?:[│╷] ?)?Error: (?P<what>.+)$", re.M)


def tofu_errors(output: str) -> list[str]:
    """The summaries of the error diagnostics OpenTofu printed in ``output``, once each."""
    return list(dict.fromkeys(m["what"].strip() for m in _TOFU_ERROR.finditer(output)))


def applied_cleanly(output: str) -> bool:
    """Did OpenTofu finish the apply without reporting any error? Terragrunt's exit code
    alone does not say: an ``errors { ignore { … } }`` block turns a failed apply into 0."""
    return "Apply complete!" in output and not tofu_errors(output)


def outcome(
    code: int, output: str, interrupted: bool, unit_path: str = "", *, summary: str
) -> tuple[str, str]:
    """What an apply really did, from OpenTofu's exit status and its own output
    (``summary``: the useful part of a failure's output). An apply is ``applied`` only
    when the exit status is 0 *and* OpenTofu reported no error and completed."""
    if code == 0 and not applied_cleanly(output):
        errors = tofu_errors(output)
        said = (
            f"OpenTofu reported {len(errors)} error(s): {'; '.join(errors)}"
            if errors
            else 'OpenTofu did not report "Apply complete!"'
        )
        return "failed", (
            f"{said}, although Terragrunt exited 0 (an errors block may have ignored it): "
            "not recorded as applied. Resources may be half-made or tainted: fix the cause, "
            "re-plan and review what is left"
        )
    if code == 0:
        if interrupted:
            return "applied", "an interrupt arrived after OpenTofu had finished: applied"
        return "applied", ""
    if "Interrupt received" in output:
        return "failed", (
            f"interrupted: OpenTofu stopped gracefully (exit {code}) and saved the state of what it had "
            "applied; the lock was released. Re-plan to see what is left."
        )
    if interrupted:
        return (
            "failed",
            f"interrupted; OpenTofu exited with {code}: {summary}",
        )
    return explain_failure(output, unit_path, summary=summary)


def unplanned_units(units: Sequence[Result]) -> list[str]:
    """The units of a plan summary that had no plan to apply (their plan failed,
    a destroy that could not be planned among them)."""
    return [u.path for u in units if u.status in UNPLANNED]


def unplanned_error(unplanned: Sequence[str]) -> str:
    return (
        f"error: {len(unplanned)} unit(s) had no plan to apply ({', '.join(unplanned)}): "
        "fix what their plan reported, then `invoke plan` and apply again"
    )


def change_set(changes: Sequence[Mapping[str, Any]]) -> set[tuple[str, str]]:
    return {(str(c["address"]), str(c["action"])) for c in changes}


def merged_units(order: Sequence[str], now: Mapping[str, T], before: Mapping[str, T]) -> list[T]:
    """The record's ``units``: per unit of ``order``, this run's entry, else the earlier one."""
    return [entry for path in order if (entry := now.get(path) or before.get(path)) is not None]


def record_document(
    run: ApplyRun,
    *,
    order: Sequence[str],
    earlier: ApplyRecord | None,
    head: str | None,
    plans_head: str | None,
    approve_manual: bool,
    started_at: str,
    running: str | None = None,
    app: str | None = None,
) -> ApplyRecord:
    """The folder's record after (or during) ``run``: this run's entry per unit of
    ``order``, else the ``earlier`` record's; ``running`` is the unit whose apply
    has started without an outcome yet; ``runs`` gains this run."""
    now = run.by_path()
    if running and running not in now:
        now[running] = UnitApply(running, RUNNING, "apply started; no outcome recorded yet")
    before = {u.path: u for u in earlier.units} if earlier is not None else {}
    this_run = RunEntry(head, approve_manual, run.interrupted, tuple(run.units), started_at)
    return ApplyRecord(
        head,
        plans_head,
        approve_manual,
        run.interrupted,
        tuple(merged_units(order, now, before)),
        (*(earlier.runs if earlier is not None else ()), this_run),
        app,
    )


def exit_code(run: ApplyRun, unplanned: Sequence[str] = ()) -> int:
    """130 when interrupted; 1 when a unit failed or was refused, or had no plan to
    apply (``unplanned``: a failure to act on, never a success); else 0."""
    if run.interrupted:
        return 130
    bad = any(u.result in ("failed", "refused") for u in run.units)
    return 1 if bad or unplanned else 0


def report_md(run: ApplyRun, summary: Summary) -> str:
    """apply.md: the run's results, unit by unit, and each re-plan that waits."""
    counts = {r: sum(1 for u in run.units if u.result == r) for r in RESULTS}
    earlier = sum(1 for u in run.units if u.earlier)
    bad = counts["failed"] + counts["refused"]
    bad += sum(1 for u in summary.units if u.status in UNPLANNED)
    mark = "❌" if bad or run.interrupted else ("⏸" if counts["waiting-approval"] else "✅")
    lines = [
        "<!-- iac-tooling:apply-report -->",
        f"{mark} **Apply:** {counts['applied']} applied"
        + (f" ({earlier} earlier)" if earlier else "")
        + f", {counts['no-changes']} without changes, "
        f"{counts['waiting-approval']} waiting for approval, {counts['refused']} refused, {counts['failed']} failed, "
        f"{counts['not-run']} not run" + (" — **interrupted**" if run.interrupted else ""),
        "",
        f"Plans made at `{str(summary.head)[:12]}`.",
        "",
        "| unit | result | gate | reason |",
        "|---|---|---|---|",
    ]
    for u in run.units:
        tags = (" (cascaded)" if u.cascaded else "") + (" (earlier)" if u.earlier else "")
        lines.append(
            f"| {markdown.code(u.path, cell=True)} | {u.result}{tags} | {u.gate} "
            f"| {markdown.plain(u.reason)} |"
        )
    cascaded = [u.path for u in run.units if u.cascaded]
    if cascaded:
        lines += [
            "",
            "Cascaded (re-planned after their upstream applied): "
            + ", ".join(markdown.code(p) for p in cascaded),
        ]
    for u in run.units:
        if u.plan_text is not None:
            fence = markdown.fence_for(u.plan_text)
            lines += [
                "",
                f"<details><summary>New plan of <code>{html.escape(u.path)}</code>, waiting for a new "
                "approval</summary>",
                "",
                f"{fence}hcl\n{u.plan_text.rstrip()}\n{fence}",
                "",
                "</details>",
            ]
    return "\n".join(lines) + "\n"
