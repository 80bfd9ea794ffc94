"""The apply record (``apply.json``) and report (``apply.md``), and what an apply's
outcome means. Pure: built from the run's results, OpenTofu's output and the
earlier record; the process and the files are :mod:`tooling.engine.applier`'s.

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
from typing import Any

from tooling.core import mdtext
from tooling.core.results import Result, Status
from tooling.core.targets import model_refusal
from tooling.model.units import Unit

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


@dataclass
class UnitApply:
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
    def from_entry(cls, entry: Mapping[str, Any]) -> WaitingPlan | None:
        """The waiting re-plan an earlier run recorded for a unit still waiting, or None
        (the record was read against apply.schema.json, which bounds these fields)."""
        plan = entry.get("waiting_plan")
        if entry.get("result") != "waiting-approval" or not isinstance(plan, Mapping):
            return None
        text = plan.get("text_file")
        found = cls(str(plan["plan_file"]), str(plan["plan_sha256"]), text and str(text))
        for name in (found.plan_file, found.text_file or REPLANS):
            parts = name.split("/")
            if not name.startswith(REPLANS) or ".." in parts or "" in parts[:-1]:
                raise ValueError(f"{name} is not a file under {REPLANS}units/")
        return found


@dataclass
class ApplyRun:
    units: list[UnitApply] = field(default_factory=list)
    interrupted: bool = False

    def by_path(self) -> dict[str, UnitApply]:
        return {u.path: u for u in self.units}


def binding_problems(
    unit: Result,
    *,
    plan_sha256: str | None,
    head: str,
    summary_head: str | None,
    tools_now: Mapping[str, str],
    tools_then: Mapping[str, str],
) -> list[str]:
    """Why the saved plan is not the reviewed one (empty: it is)."""
    problems: list[str] = []
    if plan_sha256 is None:
        problems.append(f"plan file {unit.plan_file} is missing")
    elif plan_sha256 != unit.plan_sha256:
        problems.append(
            f"plan file {unit.plan_file} does not match the reviewed plan "
            f"(sha256 {plan_sha256[:12]}…, reviewed {str(unit.plan_sha256)[:12]}…)"
        )
    if summary_head != head:
        problems.append(
            f"the plans were made for commit {str(summary_head)[:12]}, HEAD is {head[:12]}: re-plan"
        )
    for name, version in tools_then.items():
        if tools_now.get(name) != version:
            problems.append(f"{name} {tools_now.get(name)} now, the plan was made with {version}")
    return problems


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


def earlier_applied(
    path: str, before: Mapping[str, Any], claimed: str, *, killed_applied: bool = False
) -> UnitApply | None:
    """The entry of a unit an earlier run on this folder applied (``before`` is its entry
    in the record), left alone; ``killed_applied``: that run was stopped while applying
    it, and OpenTofu's output says it finished. None: apply it now."""
    if killed_applied:
        reason = (
            "applied by an earlier run that was stopped before it could record it "
            '(OpenTofu\'s output: "Apply complete!")'
        )
    elif before.get("result") == "applied":
        reason = "applied earlier from this folder; left alone"
    else:
        return None
    gate = str(before.get("gate") or claimed)
    return UnitApply(path, "applied", reason, bool(before.get("cascaded")), gate, earlier=True)


def upstream_block(
    dependencies: Sequence[str], done: Mapping[str, UnitApply]
) -> tuple[str, str] | None:
    """(result, reason) for a unit whose dependency this run did not apply: it waits
    with a dependency that waits for approval, and is ``not-run`` after one that
    failed, was refused or did not run. None: nothing upstream holds it."""
    for dep in dependencies:
        r = done.get(dep)
        if r is None:
            continue
        if r.result == "waiting-approval":
            return "waiting-approval", f"its dependency {dep} waits for approval"
        if r.result in ("refused", "failed", "not-run"):
            return "not-run", f"its dependency {dep} {r.result.replace('-', ' ')}"
    return None


def model_block(model_unit: Unit | None, planned: Result) -> tuple[str, str] | None:
    """(``refused``, reason) for a unit the model cannot evaluate, now (the current model) or
    when it was planned (summary.json's ``model_error``): it fails closed, approved or not.
    None: the model knows the unit's gate, executor and module."""
    why = (model_refusal(model_unit) if model_unit is not None else None) or planned.model_error
    if not why:
        return None
    return (
        "refused",
        f"the model cannot evaluate this unit ({why}); nothing applied. Fix it "
        "(`invoke check` names the file and line), then plan and apply again",
    )


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


def merged_units(
    order: Sequence[str],
    now: Mapping[str, Mapping[str, Any]],
    before: Mapping[str, Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """The record's ``units``: per unit of ``order``, this run's entry, else the earlier one."""
    merged = []
    for path in order:
        entry = now.get(path) or before.get(path)
        if entry is not None:
            merged.append(dict(entry))
    return merged


def record_document(
    run: ApplyRun,
    *,
    order: Sequence[str],
    earlier: Mapping[str, Any],
    head: str | None,
    plans_head: str | None,
    approve_manual: bool,
    started_at: str,
    running: str | None = None,
) -> dict[str, Any]:
    """The folder's record after (or during) ``run``: this run's entry per unit of
    ``order``, else the ``earlier`` record's; ``running`` is the unit whose apply
    has started without an outcome yet; ``runs`` gains this run."""
    now = {u.path: u.to_json() for u in run.units}
    if running and running not in now:
        now[running] = UnitApply(
            running, RUNNING, "apply started; no outcome recorded yet"
        ).to_json()
    before = {str(u.get("path")): u for u in earlier.get("units", []) if isinstance(u, dict)}
    this_run = {
        "started_at": started_at,
        "head": head,
        "approve_manual": approve_manual,
        "interrupted": run.interrupted,
        "units": [u.to_json() for u in run.units],
    }
    runs = [r for r in earlier.get("runs", []) if isinstance(r, dict)]
    return {
        "version": RECORD_VERSION,
        "head": head,
        "plans_head": plans_head,
        "approve_manual": approve_manual,
        "interrupted": run.interrupted,
        "units": merged_units(order, now, before),
        "runs": [*runs, this_run],
    }


def exit_code(run: ApplyRun, unplanned: Sequence[str] = ()) -> int:
    """130 when interrupted; 1 when a unit failed or was refused, or had no plan to
    apply (``unplanned``: a failure to act on, never a success); else 0."""
    if run.interrupted:
        return 130
    bad = any(u.result in ("failed", "refused") for u in run.units)
    return 1 if bad or unplanned else 0


def report_md(run: ApplyRun, summary: Mapping[str, Any]) -> str:
    counts = {r: sum(1 for u in run.units if u.result == r) for r in RESULTS}
    earlier = sum(1 for u in run.units if u.earlier)
    bad = counts["failed"] + counts["refused"]
    bad += sum(1 for u in summary.get("units", []) if u.get("status") in UNPLANNED)
    mark = "❌" if bad or run.interrupted else ("⏸" if counts["waiting-approval"] else "✅")
    lines = [
        "<!-- iac-tooling:apply-report -->",
        f"{mark} **Apply:** {counts['applied']} applied"
        + (f" ({earlier} earlier)" if earlier else "")
        + f", {counts['no-changes']} without changes, "
        f"{counts['waiting-approval']} waiting for approval, {counts['refused']} refused, {counts['failed']} failed, "
        f"{counts['not-run']} not run" + (" — **interrupted**" if run.interrupted else ""),
        "",
        f"Plans made at `{str(summary.get('head'))[:12]}`.",
        "",
        "| unit | result | gate | reason |",
        "|---|---|---|---|",
    ]
    for u in run.units:
        tags = (" (cascaded)" if u.cascaded else "") + (" (earlier)" if u.earlier else "")
        lines.append(
            f"| {mdtext.code(u.path, cell=True)} | {u.result}{tags} | {u.gate} "
            f"| {mdtext.plain(u.reason)} |"
        )
    cascaded = [u.path for u in run.units if u.cascaded]
    if cascaded:
        lines += [
            "",
            "Cascaded (re-planned after their upstream applied): "
            + ", ".join(mdtext.code(p) for p in cascaded),
        ]
    for u in run.units:
        if u.plan_text is not None:
            fence = mdtext.fence_for(u.plan_text)
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
