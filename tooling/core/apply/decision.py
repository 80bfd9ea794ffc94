"""What an apply does with one unit of a plan folder: the one decision of both tiers. Pure.

The foundation's apply (:class:`tooling.engine.apply.applier.Applier`) and the app tier's
(:func:`tooling.commands.apptier.apply`) ask :func:`decide`, so a case is worded the
same on both. It walks one chain, in order, and answers with the first step that holds:

==========================================================  =====================
the run was interrupted before this unit                    ``not-run``
the folder's record says an earlier run applied it          ``applied`` (earlier)
its plan had no changes                                     ``no-changes``
a dependency failed, was refused or did not run             ``not-run``
its plan failed, was blocked or was not planned             ``refused``
its plan was withheld or excluded                           ``not-run``
a dependency waits for approval                             ``waiting-approval``
the model cannot evaluate it (now, or when planned)         ``refused``
the record's re-plan it waits with is not under cascade/    ``refused``
nothing of the above: verify the saved plan                 (:attr:`Action.VERIFY`)
the saved plan is not the reviewed one, or may not apply    ``refused``
the saved plan changes nothing                              ``no-changes``
planned against outputs that changed since                  (:attr:`Action.CASCADE`)
its gate is manual and no approval was given                ``waiting-approval``
otherwise                                                   (:attr:`Action.APPLY`)
==========================================================  =====================

It is asked twice for a unit that gets that far: first with what the plan folder, its
record and this run say (:class:`Facts`); when nothing there settles the unit, the
answer is ``verify``, and the caller verifies the saved plan (its binding, its state,
the rules where OpenTofu runs, the plan read back, its gate recomputed from it) and
asks again with what it found (:class:`Verified`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from tooling.core.apply.record import UNPLANNED, UnitApply, WaitingPlan
from tooling.core.plan.gates import Gate, reasons_text
from tooling.core.plan.planjson import PlanSummary
from tooling.core.plan.results import Result
from tooling.core.plan.status import Status


class Action(StrEnum):
    """What the caller does next."""

    #: record :attr:`Decision.result` and go on to the next unit
    RECORD = "record"
    #: verify the saved plan, then decide again with :attr:`Facts.verified`
    VERIFY = "verify"
    #: re-plan against the upstream's real outputs first (the foundation's cascade)
    CASCADE = "cascade"
    #: apply the saved plan
    APPLY = "apply"


@dataclass(frozen=True)
class Verified:
    """What verifying a unit's saved plan found."""

    #: why the saved plan may not be applied: not the reviewed one (digest, commit,
    #: tools), another unit's state, a rule broken where OpenTofu runs, unreadable
    problems: tuple[str, ...] = ()
    #: the saved plan as OpenTofu shows it (None: not read, a problem stopped first)
    plan: PlanSummary | None = None
    #: its gate, recomputed from the saved plan and policy.toml (never summary.json's)
    gate: Gate | None = None
    #: planned against mock outputs, or outputs this run changed: re-plan first
    cascade: bool = False


@dataclass(frozen=True)
class Facts:
    """What is known of a unit before its saved plan is read."""

    #: the gate summary.json records (shown, never trusted)
    claimed: str = "none"
    #: ``--approve-manual``
    approved: bool = False
    #: this run was interrupted before the unit
    interrupted: bool = False
    #: the folder's record of the unit (an earlier run's entry)
    earlier: UnitApply | None = None
    #: an earlier run was stopped while applying it, and OpenTofu's output says it finished
    killed_applied: bool = False
    #: this run's entries of the unit's dependencies, in dependency order
    upstream: Sequence[UnitApply] = ()
    #: why the current model cannot evaluate the unit (summary.json's ``model_error``
    #: says why it could not when it was planned)
    model_error: str | None = None
    #: what verifying the saved plan found (None: not verified yet)
    verified: Verified | None = None


@dataclass(frozen=True)
class Decision:
    """What to do with a unit: a result to record now, or the next step."""

    action: Action
    #: with :attr:`Action.RECORD`: the record's result and its reason
    result: str = ""
    reason: str = ""
    gate: str = "none"
    cascaded: bool = False
    earlier: bool = False
    #: the re-plan an approval of the unit applies, when it is not the summary's plan
    waiting: WaitingPlan | None = None
    #: what follows the reason of an applied unit whose saved plan's gate is not the one
    #: summary.json records
    note: str = ""

    def entry(self, path: str, plan_text: str | None = None) -> UnitApply:
        """The record's entry of this decision for unit ``path``."""
        return UnitApply(
            path,
            self.result,
            self.reason,
            self.cascaded,
            self.gate,
            self.earlier,
            plan_text,
            self.waiting if self.result == "waiting-approval" else None,
        )


def _record(
    result: str,
    reason: str,
    gate: str,
    *,
    cascaded: bool = False,
    earlier: bool = False,
    waiting: WaitingPlan | None = None,
) -> Decision:
    return Decision(Action.RECORD, result, reason, gate, cascaded, earlier, waiting)


def decide(unit: Result, facts: Facts) -> Decision:
    """What to do with ``unit`` (its entry in summary.json), given ``facts`` (see the
    module's docstring for the chain)."""
    claimed = facts.claimed
    if facts.interrupted:
        return _record("not-run", "interrupted before this unit", claimed)
    kept = earlier_applied(facts.earlier, claimed, killed_applied=facts.killed_applied)
    if kept is not None:
        return _record("applied", kept.reason, kept.gate, cascaded=kept.cascaded, earlier=True)
    if unit.status == Status.NO_CHANGES:
        return _record("no-changes", "", claimed)
    # a dependency that did not apply in this run comes first: it is why its dependents
    # stop, whatever their own plans (one planned against its missing outputs failed)
    held = upstream_block(facts.upstream, "not-run")
    if held is not None:
        return _record(*held, claimed)
    if unit.status != Status.CHANGES:
        said = f"plan status is {unit.status}" + (f": {unit.error}" if unit.error else "")
        # a plan that failed leaves nothing to apply: a failure to act on
        return _record("refused" if unit.status in UNPLANNED else "not-run", said, claimed)
    held = upstream_block(facts.upstream, "waiting-approval") or model_block(
        facts.model_error or unit.model_error
    )
    if held is not None:
        return _record(*held, claimed)
    # a re-plan shown while this unit waited (made after its upstream applied) is the
    # plan its approval is for: bound to it as the summary's plan is to the summary
    try:
        waiting = facts.earlier.waiting() if facts.earlier is not None else None
    except ValueError as exc:
        return _record(
            "refused",
            f"apply.json names the re-plan this unit waits with as {exc}: the record was "
            "altered; restore it from the apply run's artifact, or plan again",
            claimed,
        )
    verified = facts.verified
    if verified is None:
        return Decision(Action.VERIFY, gate=claimed, waiting=waiting)
    return _verified(verified, claimed=claimed, approved=facts.approved, waiting=waiting)


def _verified(
    verified: Verified, *, claimed: str, approved: bool, waiting: WaitingPlan | None
) -> Decision:
    """The second half of the chain: what the saved plan itself says."""
    if verified.problems:
        return _record("refused", "; ".join(verified.problems), claimed)
    if verified.plan is None:
        raise TypeError("a verified plan without problems was read (Verified.plan)")
    if not verified.plan.has_changes:
        return _record("no-changes", "the saved plan changes nothing", "none")
    gate = verified.gate
    if gate is None:
        raise TypeError("a saved plan with changes has its gate (Verified.gate)")
    note = (
        ""
        if gate.decision == claimed or waiting is not None
        else f" (summary.json said {claimed}; the saved plan says {gate.decision})"
    )
    # an upstream applied in this run: the plan holds its mock or old outputs. Re-planned
    # before any approval is asked for, so a human approves the values that will apply
    if verified.cascade:
        return Decision(Action.CASCADE, gate=gate.decision)
    if gate.decision == "manual" and not approved:
        return _record(
            "waiting-approval",
            "manual gate: "
            + reasons_text(gate)
            + note
            + (" (the re-plan after its upstream applied, shown below)" if waiting else ""),
            gate.decision,
            waiting=waiting,
        )
    return Decision(Action.APPLY, gate=gate.decision, waiting=waiting, note=note)


def earlier_applied(
    before: UnitApply | None, claimed: str, *, killed_applied: bool = False
) -> UnitApply | None:
    """The entry of a unit an earlier run on this folder applied (``before`` is its entry
    in the record), left alone; ``killed_applied``: that run was stopped while applying
    it, and OpenTofu's output says it finished. None: apply it now."""
    if before is None:
        return None
    if killed_applied:
        reason = (
            "applied by an earlier run that was stopped before it could record it "
            '(OpenTofu\'s output: "Apply complete!")'
        )
    elif before.result == "applied":
        reason = "applied earlier from this folder; left alone"
    else:
        return None
    return UnitApply(
        before.path, "applied", reason, before.cascaded, before.gate or claimed, earlier=True
    )


def upstream_block(upstream: Sequence[UnitApply], result: str) -> tuple[str, str] | None:
    """(``result``, reason) for a unit whose dependency this run did not apply: it is
    ``not-run`` after one that failed, was refused or did not run, and waits with one
    that waits for approval. None: no dependency holds it that way."""
    for dep in upstream:
        if result == "waiting-approval" and dep.result == "waiting-approval":
            return result, f"its dependency {dep.path} waits for approval"
        if result == "not-run" and dep.result in ("refused", "failed", "not-run"):
            return result, f"its dependency {dep.path} {dep.result.replace('-', ' ')}"
    return None


def model_block(why: str | None) -> tuple[str, str] | None:
    """(``refused``, reason) for a unit the model cannot evaluate, now or when it was
    planned (``why``): it fails closed, approved or not. None: the model knows the
    unit's gate, executor and module."""
    if not why:
        return None
    return (
        "refused",
        f"the model cannot evaluate this unit ({why}); nothing applied. Fix it "
        "(`invoke check` names the file and line), then plan and apply again",
    )


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
