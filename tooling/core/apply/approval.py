"""Does an approval still hold after a re-plan? Pure.

A unit planned against its upstream's mock outputs is re-planned once the
upstream has applied (apply's cascade). A reviewer approved the plan they saw,
values included (``vmbr-mock``, not the real bridge): the approval carries over
to the re-plan only when it makes the same changes (address and action) with
the same values (:func:`tooling.core.plan.planjson.value_digests`). Otherwise a
manual unit waits for a new approval, with the new plan shown.
"""

from __future__ import annotations

from tooling.core.plan.gates import Gate, reasons_text
from tooling.core.plan.planjson import PlanSummary, ResourceChange


def _other_values(old: ResourceChange, new: ResourceChange) -> list[str]:
    before, after = dict(old.values), dict(new.values)
    return sorted(n or "the resource" for n in {*before, *after} if before.get(n) != after.get(n))


def differences(
    approved: PlanSummary,
    fresh: PlanSummary,
    *,
    old_name: str = "approved plan",
    new_name: str = "re-plan",
) -> list[str]:
    """What ``fresh`` does otherwise than ``approved``, one entry per resource: another
    action (forget and the like included), an import or a move that one has and the other
    not, other values (the names of the attributes, never the values); empty when the
    two plans do the same. ``old_name``/``new_name``: how the entries name the two plans."""
    old_by = {c.address: c for c in approved.changes}
    new_by = {c.address: c for c in fresh.changes}
    out: list[str] = []
    for address in sorted({*old_by, *new_by}):
        old, new = old_by.get(address), new_by.get(address)
        if old is None and new is not None:
            out.append(f"{address}: {new.action}, not in the {old_name}")
        elif new is None and old is not None:
            out.append(f"{address}: {old.action} in the {old_name}, not in the {new_name}")
        elif old is not None and new is not None:
            if old.action != new.action:
                out.append(f"{address}: {new.action} instead of {old.action} in the {old_name}")
            elif old.importing != new.importing:
                out.append(f"{address}: {'imported' if new.importing else 'not imported'} now")
            elif old.moved_from != new.moved_from:
                out.append(f"{address}: moved from {new.moved_from or 'nowhere'} now")
            elif old.values != new.values:
                out.append(f"{address}: other values of {', '.join(_other_values(old, new))}")
    return out


def cascade_wait(
    gate: Gate, *, approved: bool, reviewed: PlanSummary, fresh: PlanSummary
) -> str | None:
    """Why a re-planned unit waits, or None when it may apply: an ``auto`` re-plan applies;
    a ``manual`` one only when a human approved (``approved``) and the re-plan makes the
    same changes with the same values as the plan they saw (``reviewed``)."""
    if gate.decision != "manual":
        return None
    if not approved:
        return "manual gate: " + reasons_text(gate)
    diff = differences(reviewed, fresh)
    if not diff:
        return None
    return (
        "the re-plan against the upstream's real outputs differs from the approved plan ("
        + "; ".join(diff)
        + "), so the approval does not carry over: review the new plan and approve it "
        "(plan again with `invoke plan`, then apply with --approve-manual)"
    )


#: the reason a unit waits when its plan is not the pull request's reviewed plan
DIFFERS = "differs from the reviewed plan: "


def reviewed_differences(reviewed: PlanSummary, fresh: PlanSummary) -> list[str]:
    """What ``fresh`` (the plan about to be applied, or the merge group's) does otherwise
    than ``reviewed`` (the pull request's last reviewed plan of the unit): the resources'
    :func:`differences`, and outputs that change in one and not the other."""
    out = differences(reviewed, fresh, old_name="reviewed plan", new_name="plan")
    old_out, new_out = set(reviewed.output_changes), set(fresh.output_changes)
    out += [f"output {n}: changes, not in the reviewed plan" for n in sorted(new_out - old_out)]
    out += [f"output {n}: changes in the reviewed plan, not now" for n in sorted(old_out - new_out)]
    return out


def against_reviewed(gate: Gate, differs: list[str] | None) -> Gate:
    """``gate``, made ``manual`` when the plan differs from the reviewed one (``differs``:
    what differs; empty or None: the same plan, the gate stands). A manual gate keeps its
    reasons and gains this one; an auto gate's reason no longer holds and is dropped."""
    if not differs:
        return gate
    reason = DIFFERS + "; ".join(differs)
    kept = gate.reasons if gate.decision == "manual" else ()
    return Gate("manual", (*kept, reason))
