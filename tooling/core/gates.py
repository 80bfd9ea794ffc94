"""Blast radius decides the gate. Pure.

Rules, in order (every rule that fires adds a reason):

1. no changes -> ``none``;
2. a deleted unit (destroy plan) -> ``manual``;
3. any delete or replace -> ``manual``;
4. any change to a resource matching the node/VM rules of policy.toml -> ``manual``;
5. a unit the model cannot evaluate (``model_error``) -> ``manual``, and apply
   refuses it even when approved (its gate and executor are unknown);
6. otherwise the unit's declared class (tier default, unit override): ``auto``
   only when it says exactly ``auto``; any other word (a typo such as
   ``manaul``, or a class the model could not work out) waits for a human.

Reasons are grouped: one line per action for deletes and replaces, and one
line naming every node/VM touched (:func:`node_reason`), so a unit that
changes three VMs says "touches 3 nodes/VMs: node-1, node-2, node-3" once.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # only deciding a gate reads a plan
    from tooling.core.planjson import PlanSummary
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
    from tooling.core.status import Status

    if status != Status.CHANGES or summary is None:
        return Gate("none", (f"nothing to apply ({status})",))
    reasons: list[str] = []
    if destroy:
        reasons.append("the unit was deleted: this is a destroy plan")
    for action in ("delete", "replace"):
        addresses = [c.address for c in summary.changes if c.action == action]
        if len(addresses) == 1:
            reasons.append(f"{action}s {addresses[0]}")
        elif addresses:
            reasons.append(f"{action}s {len(addresses)} resources: {', '.join(addresses)}")
    touched = _node_changes(summary, policy)
    if touched:
        reasons.append(node_reason(touched))
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
        "auto", ("no delete, no replace, no node/VM change; the unit's gate class is auto",)
    )


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
    return [
        c.address
        for c in summary.changes
        if c.action in ("create", "update") and policy.touches_node(c.type, c.address)
    ]
