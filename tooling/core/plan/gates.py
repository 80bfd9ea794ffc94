"""Blast radius decides the gate. Pure.

Rules, in order (every rule that fires adds a reason):

1. no changes -> ``none``;
2. a deleted unit (destroy plan) -> ``manual``;
3. any delete or replace -> ``manual``;
4. what OpenTofu does to the state alone, the real resource left as it is: a
   forget (a ``removed`` block with ``destroy = false``, or ``lifecycle { destroy
   = false }``: the resource keeps running, unmanaged; ``forget+create`` is a
   replacement whose old instance is left so), an import (an ``import`` block)
   or a move (a ``moved`` block) -> ``manual``, unless ``[gates]
   auto_state_actions`` lists it (default: ``move`` only);
5. any change to a resource matching the node/VM rules of policy.toml -> ``manual``:
   a create or update, and a forget, import or move too, whatever
   ``auto_state_actions`` says;
6. an action the pipeline does not know (a newer OpenTofu's) -> ``manual``;
7. a unit the model cannot evaluate (``model_error``) -> ``manual``, and apply
   refuses it even when approved (its gate and executor are unknown);
8. otherwise the unit's declared class (tier default, unit override): ``auto``
   only when it says exactly ``auto``; any other word (a typo such as
   ``manaul``, or a class the model could not work out) waits for a human.

Reasons are grouped: one line per action for deletes, replaces, forgets, imports
and moves, and one line naming every node/VM touched (:func:`node_reason`), so a
unit that changes three VMs says "touches 3 nodes/VMs: node-1, node-2, node-3" once.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # only deciding a gate reads a plan
    from tooling.core.plan.planjson import PlanSummary
    from tooling.model.policy import GatePolicy


@dataclass(frozen=True)
class Gate:
    """A unit's gate: ``auto``, ``manual`` or ``none``, with every reason that decided it."""

    decision: str  # auto | manual | none
    reasons: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"decision": self.decision, "reasons": list(self.reasons)}


def decide(
    *,
    status: str,
    declared: str,
    summary: PlanSummary | None,
    destroy: bool,
    policy: GatePolicy,
    model_error: str | None = None,
) -> Gate:
    from tooling.core.plan.status import Status

    if status != Status.CHANGES or summary is None:
        return Gate("none", (f"nothing to apply ({status})",))
    reasons: list[str] = []
    if destroy:
        reasons.append("the unit was deleted: this is a destroy plan")
    for action in ("delete", "replace"):
        addresses = [c.address for c in summary.changes if c.action == action]
        if addresses:
            reasons.append(_listed(f"{action}s", addresses))
    allowed: list[str] = []
    for action, addresses in state_changes(summary).items():
        if addresses:
            (allowed if action in policy.auto_state_actions else reasons).append(
                _listed(_STATE_VERBS[action], addresses)
                + ("" if action in policy.auto_state_actions else _STATE_WHY[action])
            )
    touched = _node_changes(summary, policy)
    if touched:
        reasons.append(node_reason(touched))
    unknown = [f"{c.action} {c.address}" for c in summary.unknown_actions]
    if unknown:
        reasons.append("an action the pipeline does not know: " + ", ".join(unknown))
    if model_error:
        reasons.append(f"the model cannot evaluate the unit, so apply refuses it: {model_error}")
    if reasons:
        return Gate("manual", tuple(reasons))
    if declared == "manual":
        return Gate("manual", ("the unit's gate class is manual",))
    if declared != "auto":
        return Gate(
            "manual",
            (
                f"the unit's gate class is {declared!r}, neither auto nor manual: it waits for "
                "a human (`invoke check` names the file)",
            ),
        )
    return Gate(
        "auto",
        (
            "no delete, no replace, no node/VM change; "
            + "".join(f"{a} ([gates] auto_state_actions); " for a in allowed)
            + "the unit's gate class is auto",
        ),
    )


#: how a gate's reason names each state action, and why it waits when it does
_STATE_VERBS = {"forget": "forgets", "import": "imports", "move": "moves"}
_STATE_WHY = {
    "forget": " (left in place, no longer managed by OpenTofu)",
    "import": " (brought under this unit's management)",
    "move": " (a new address in the state)",
}


def state_changes(summary: PlanSummary) -> dict[str, list[str]]:
    """The addresses each state action (:data:`tooling.model.policy.STATE_ACTIONS`) of ``summary`` touches: a
    forget by the address forgotten, a move as ``OLD -> NEW``."""
    return {
        "forget": [c.address for c in summary.forgotten],
        "import": [c.address for c in summary.imported],
        "move": [f"{c.moved_from} -> {c.address}" for c in summary.moved],
    }


def _listed(verb: str, addresses: Sequence[str]) -> str:
    """``forgets terraform_data.a``; ``forgets 2 resources: a, b``."""
    if len(addresses) == 1:
        return f"{verb} {addresses[0]}"
    return f"{verb} {len(addresses)} resources: {', '.join(addresses)}"


def _instance(address: str) -> tuple[str, str | None]:
    """``terraform_data.vm["node-1"]`` -> ``("terraform_data.vm", "node-1")``; no key: ``(address, None)``."""
    match = re.fullmatch(_INDEXED, address)
    if match is None:
        return address, None
    return match["resource"], match["key"].strip('"')


#: an instance address keyed by node (a pattern: compiled by ``re`` when a gate is decided)
_INDEXED = r"(?P<resource>.+)\[(?P<key>[^\[\]]+)\]"


def node_reason(addresses: Sequence[str]) -> str:
    """One reason for every node/VM change of a unit, naming each node once.

    ``touches 3 nodes/VMs: node-1, node-2, node-3 (terraform_data.vm, terraform_data.disk)``
    when the addresses are instances keyed by node; else every address.
    """
    if len(addresses) == 1:
        return f"touches a node/VM: {addresses[0]}"
    split = [_instance(a) for a in addresses]
    keyed = [(resource, key) for resource, key in split if key is not None]
    unkeyed = [resource for resource, key in split if key is None]
    if not keyed:
        return f"touches {len(addresses)} node/VM resources: {', '.join(addresses)}"
    names = list(dict.fromkeys(key for _, key in keyed))
    resources = list(dict.fromkeys(resource for resource, _ in keyed))
    noun = "node/VM" if len(names) == 1 else "nodes/VMs"
    text = f"touches {len(names)} {noun}: {', '.join(names)} ({', '.join(resources)})"
    return text + (f", and {', '.join(unkeyed)}" if unkeyed else "")


def reasons_text(gate: Gate) -> str:
    """Every reason of ``gate`` on one line: never cut (a cut hid the VM reasons behind others)."""
    return "; ".join(gate.reasons)


def _node_changes(summary: PlanSummary, policy: GatePolicy) -> Sequence[str]:
    """Every node/VM the plan creates, updates, forgets, imports or moves (a delete or a
    replace has its own reason); a move is looked up by its old address too."""
    return [
        c.address
        for c in summary.changes
        if (c.action not in ("delete", "replace", "no-op", "read") or c.importing or c.moves)
        and (
            policy.touches_node(c.type, c.address)
            or (c.moves and policy.touches_node(c.type, c.moved_from or ""))
        )
    ]
