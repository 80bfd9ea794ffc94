"""The one apply decision of both tiers (:func:`tooling.core.apply.decision.decide`), as a table.

Each row is a unit of summary.json and what is known of it; the answer is what the
foundation's ``invoke apply`` and ``invoke app-apply`` both do with it, in the same
words (docs/commands.md, the table of ``invoke apply``).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from tooling.core.apply.decision import Action, Facts, Verified, decide
from tooling.core.apply.record import UnitApply, WaitingPlan
from tooling.core.plan.gates import Gate
from tooling.core.plan.planjson import COUNT_KEYS, PlanSummary, ResourceChange
from tooling.core.plan.results import Result
from tooling.core.plan.status import Status

UNIT = Result(
    "live/cloud/dns",
    "cloud",
    "hosted",
    "modified",
    Status.CHANGES,
    plan_file="units/live/cloud/dns/plan.tfplan",
    plan_sha256="a" * 64,
    gate=Gate("auto", ("no delete",)),
)
CHANGES = PlanSummary(
    {**dict.fromkeys(COUNT_KEYS, 0), "create": 1},
    (ResourceChange("terraform_data.zone", "terraform_data", "create"),),
)
NOTHING = PlanSummary(dict.fromkeys(COUNT_KEYS, 0))
AUTO, MANUAL = Gate("auto", ("no delete",)), Gate("manual", ("deletes 1 resource(s)",))
REPLAN = WaitingPlan("cascade/units/live/cloud/dns/plan.tfplan", "b" * 64)
WAITING = UnitApply("live/cloud/dns", "waiting-approval", "", gate="manual", waiting_plan=REPLAN)


def _verified(**fields: object) -> Facts:
    return Facts(claimed="auto", verified=Verified(**fields))  # type: ignore[arg-type]


ROWS = [
    # (id, unit, facts, action, result, reason fragment)
    (
        "interrupted",
        UNIT,
        Facts(claimed="auto", interrupted=True),
        Action.RECORD,
        "not-run",
        "interrupted before",
    ),
    (
        "applied-earlier",
        UNIT,
        Facts(earlier=UnitApply("live/cloud/dns", "applied", "", gate="auto")),
        Action.RECORD,
        "applied",
        "applied earlier from this folder",
    ),
    (
        "killed-after-apply",
        UNIT,
        Facts(earlier=UnitApply("live/cloud/dns", "running", ""), killed_applied=True),
        Action.RECORD,
        "applied",
        "stopped before it could record it",
    ),
    (
        "no-changes",
        replace(UNIT, status=Status.NO_CHANGES),
        Facts(),
        Action.RECORD,
        "no-changes",
        "",
    ),
    (
        "plan-error",
        replace(UNIT, status=Status.ERROR, error="boom"),
        Facts(),
        Action.RECORD,
        "refused",
        "plan status is error: boom",
    ),
    (
        "blocked",
        replace(UNIT, status=Status.BLOCKED),
        Facts(),
        Action.RECORD,
        "refused",
        "plan status is blocked",
    ),
    (
        "plan-error-after-a-failed-dependency",
        replace(UNIT, status=Status.ERROR, error="no outputs"),
        Facts(upstream=(UnitApply("live/cloud/iam", "failed", ""),)),
        Action.RECORD,
        "not-run",
        "its dependency live/cloud/iam failed",
    ),
    (
        "plan-error-with-a-waiting-dependency",
        replace(UNIT, status=Status.ERROR, error="boom"),
        Facts(upstream=(UnitApply("live/cloud/iam", "waiting-approval", ""),)),
        Action.RECORD,
        "refused",
        "plan status is error: boom",
    ),
    (
        "withheld",
        replace(UNIT, status=Status.WITHHELD),
        Facts(),
        Action.RECORD,
        "not-run",
        "plan status is withheld",
    ),
    (
        "upstream-waits",
        UNIT,
        Facts(upstream=(UnitApply("live/cloud/iam", "waiting-approval", ""),)),
        Action.RECORD,
        "waiting-approval",
        "its dependency live/cloud/iam waits for approval",
    ),
    (
        "upstream-failed",
        UNIT,
        Facts(upstream=(UnitApply("live/cloud/iam", "failed", ""),)),
        Action.RECORD,
        "not-run",
        "its dependency live/cloud/iam failed",
    ),
    (
        "model-error",
        UNIT,
        Facts(model_error="nested too deep"),
        Action.RECORD,
        "refused",
        "the model cannot evaluate this unit (nested too deep)",
    ),
    (
        "altered-replan",
        UNIT,
        Facts(earlier=replace(WAITING, waiting_plan=WaitingPlan("units/../x", "b" * 64))),
        Action.RECORD,
        "refused",
        "the record was altered",
    ),
    ("verify", UNIT, Facts(), Action.VERIFY, "", ""),
    (
        "not-bound",
        UNIT,
        _verified(problems=("plan file x does not match the reviewed plan",)),
        Action.RECORD,
        "refused",
        "does not match the reviewed plan",
    ),
    (
        "saved-plan-empty",
        UNIT,
        _verified(plan=NOTHING),
        Action.RECORD,
        "no-changes",
        "the saved plan changes nothing",
    ),
    ("cascade", UNIT, _verified(plan=CHANGES, gate=AUTO, cascade=True), Action.CASCADE, "", ""),
    (
        "manual-waits",
        UNIT,
        _verified(plan=CHANGES, gate=MANUAL),
        Action.RECORD,
        "waiting-approval",
        "manual gate: deletes 1 resource(s) (summary.json said auto; the saved plan says manual)",
    ),
    ("auto-applies", UNIT, _verified(plan=CHANGES, gate=AUTO), Action.APPLY, "", ""),
]


@pytest.mark.parametrize(
    ("unit", "facts", "action", "result", "reason"),
    [row[1:] for row in ROWS],
    ids=[row[0] for row in ROWS],
)
def test_each_case_has_one_answer_in_one_wording(
    unit: Result, facts: Facts, action: Action, result: str, reason: str
) -> None:
    decision = decide(unit, facts)
    assert decision.action is action
    assert decision.result == result
    assert reason in decision.reason


def test_the_first_step_that_holds_decides() -> None:
    # interrupted before a unit the record says was applied: the interrupt speaks first
    facts = Facts(interrupted=True, earlier=UnitApply(UNIT.path, "applied", "", gate="auto"))
    assert decide(UNIT, facts).result == "not-run"
    # a unit an earlier run applied is left alone, whatever its plan's status now
    facts = Facts(earlier=UnitApply(UNIT.path, "applied", "", gate="auto"))
    assert decide(replace(UNIT, status=Status.ERROR), facts).result == "applied"
    # a binding problem refuses before the saved plan's gate is looked at
    facts = _verified(problems=("HEAD moved",), plan=CHANGES, gate=MANUAL)
    assert decide(UNIT, facts).result == "refused"


def test_an_approval_applies_a_manual_plan_and_says_what_summary_json_claimed() -> None:
    facts = replace(_verified(plan=CHANGES, gate=MANUAL), approved=True)
    decision = decide(UNIT, facts)
    assert decision.action is Action.APPLY and decision.gate == "manual"
    assert decision.note == " (summary.json said auto; the saved plan says manual)"


def test_a_unit_waiting_with_a_replan_is_verified_and_approved_on_that_replan() -> None:
    facts = Facts(claimed="manual", earlier=WAITING)
    first = decide(UNIT, facts)
    assert first.action is Action.VERIFY and first.waiting == REPLAN
    waits = decide(UNIT, replace(facts, verified=Verified(plan=CHANGES, gate=MANUAL)))
    assert waits.result == "waiting-approval" and waits.waiting == REPLAN
    assert "(the re-plan after its upstream applied, shown below)" in waits.reason
    entry = waits.entry(UNIT.path)
    assert entry.waiting_plan == REPLAN and entry.gate == "manual"
    approved = replace(facts, approved=True, verified=Verified(plan=CHANGES, gate=MANUAL))
    assert decide(UNIT, approved).action is Action.APPLY
