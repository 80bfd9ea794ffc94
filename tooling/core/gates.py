"""Blast radius decides the gate. Pure.

Rules, in order (every rule that fires adds a reason):

1. no changes -> ``none``;
2. a deleted unit (destroy plan) -> ``manual``;
3. any delete or replace -> ``manual``;
4. any change to a resource matching the node/VM rules of policy.toml -> ``manual``;
5. otherwise the unit's declared class (tier default, unit override).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tooling.core.planjson import PlanSummary
from tooling.errors import ToolingError


@dataclass(frozen=True)
class GatePolicy:
    node_types: tuple[str, ...] = ()
    node_addresses: tuple[str, ...] = ()

    def touches_node(self, rtype: str, address: str) -> bool:
        return any(fnmatch.fnmatchcase(rtype, p) for p in self.node_types) or any(
            fnmatch.fnmatchcase(address, p) for p in self.node_addresses
        )


@dataclass(frozen=True)
class Gate:
    decision: str  # auto | manual | none
    reasons: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"decision": self.decision, "reasons": list(self.reasons)}


def parse_policy(data: Mapping[str, Any]) -> GatePolicy:
    """The ``[gates]`` section of a parsed policy.toml (missing: no node/VM rules)."""
    gates = data.get("gates", {})
    if not isinstance(gates, dict):
        raise ToolingError(
            "policy.toml: [gates] must be a table with node_types and node_addresses"
        )
    out: list[tuple[str, ...]] = []
    for key in ("node_types", "node_addresses"):
        value = gates.get(key, ())
        if not isinstance(value, list | tuple) or not all(isinstance(p, str) and p for p in value):
            raise ToolingError(f"policy.toml: [gates] {key} must be a list of patterns (strings)")
        out.append(tuple(value))
    return GatePolicy(out[0], out[1])


def decide(
    *,
    status: str,
    declared: str,
    summary: PlanSummary | None,
    destroy: bool,
    policy: GatePolicy,
) -> Gate:
    if status != "changes" or summary is None:
        return Gate("none", (f"nothing to apply ({status})",))
    reasons: list[str] = []
    if destroy:
        reasons.append("the unit was deleted: this is a destroy plan")
    for change in summary.changes:
        if change.action in ("delete", "replace"):
            reasons.append(f"{change.action}s {change.address}")
    touched = _node_changes(summary, policy)
    reasons.extend(f"touches a node/VM: {addr}" for addr in touched)
    if reasons:
        return Gate("manual", tuple(reasons))
    if declared == "manual":
        return Gate("manual", ("the unit's gate class is manual",))
    return Gate(
        "auto", ("no delete, no replace, no node/VM change; the unit's gate class is auto",)
    )


def _node_changes(summary: PlanSummary, policy: GatePolicy) -> Sequence[str]:
    return [
        c.address
        for c in summary.changes
        if c.action in ("create", "update") and policy.touches_node(c.type, c.address)
    ]
