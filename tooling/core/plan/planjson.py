"""``tofu show -json`` plans as typed, read-only objects. Pure.

Only what the pipeline needs is kept, and never a value: addresses, actions,
reasons and counts. Attribute values (which may be sensitive) are read only to
list *which* attributes change, and only when neither side marks them
sensitive, and to fingerprint each attribute's change (:func:`value_digests`: a
SHA-256, kept in memory, never written) so that two plans of one unit can be
told apart by their values, not only by their actions.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

COUNT_KEYS = ("create", "update", "delete", "replace", "import", "move", "forget")
#: the collapsed actions the pipeline knows (:func:`action_of`); a plan with any other
#: is a change, and waits for a human (:func:`tooling.core.plan.gates.decide`)
KNOWN_ACTIONS = frozenset(
    ("create", "update", "delete", "replace", "forget", "forget+create", "read", "no-op")
)


@dataclass(frozen=True)
class ResourceChange:
    address: str
    type: str
    #: create | update | delete | replace | forget | forget+create | read | no-op
    #: (``forget``: OpenTofu drops it from the state and leaves it running, a ``removed``
    #: block with ``destroy = false``; ``forget+create``: a replacement whose old
    #: instance is left running, ``lifecycle { destroy = false }``)
    action: str
    reason: str | None = None  # action_reason from the plan, e.g. replace_because_cannot_update
    importing: bool = False
    moved_from: str | None = None
    changed_attributes: tuple[str, ...] = ()
    replace_paths: tuple[str, ...] = ()
    #: ``(attribute, digest)`` of every top-level attribute's before/after/unknown/sensitive
    #: values (:func:`value_digests`); not part of equality, never serialised
    values: tuple[tuple[str, str], ...] = field(default=(), compare=False, repr=False)

    @property
    def forgets(self) -> bool:
        """OpenTofu drops the resource from the state, and leaves it as it is."""
        return "forget" in self.action.split("+")

    @property
    def moves(self) -> bool:
        return bool(self.moved_from) and self.moved_from != self.address


@dataclass(frozen=True)
class PlanSummary:
    counts: dict[str, int]
    changes: tuple[ResourceChange, ...] = ()
    drift: tuple[ResourceChange, ...] = ()
    output_changes: tuple[str, ...] = ()
    errored: bool = False

    @property
    def has_changes(self) -> bool:
        """Anything to apply: a count, a changed output, or an action the pipeline does not
        know (fail closed: a plan is never "no changes" for an action it cannot name)."""
        return (
            any(self.counts.get(k) for k in COUNT_KEYS)
            or bool(self.output_changes)
            or bool(self.unknown_actions)
        )

    @property
    def destructive(self) -> tuple[ResourceChange, ...]:
        return tuple(c for c in self.changes if c.action in ("delete", "replace"))

    @property
    def forgotten(self) -> tuple[ResourceChange, ...]:
        """What OpenTofu drops from the state and leaves running, unmanaged."""
        return tuple(c for c in self.changes if c.forgets)

    @property
    def imported(self) -> tuple[ResourceChange, ...]:
        return tuple(c for c in self.changes if c.importing)

    @property
    def moved(self) -> tuple[ResourceChange, ...]:
        return tuple(c for c in self.changes if c.moves)

    @property
    def unknown_actions(self) -> tuple[ResourceChange, ...]:
        return tuple(c for c in self.changes if c.action not in KNOWN_ACTIONS)


def action_of(actions: Sequence[str]) -> str:
    """Collapse a plan's ``actions`` list to one word."""
    acts = list(actions)
    if acts in (["delete", "create"], ["create", "delete"]):
        return "replace"
    if len(acts) == 1 and acts[0] in ("create", "update", "delete", "read", "no-op"):
        return acts[0]
    if not acts:
        return "no-op"
    return "+".join(acts)


_REASONS = {
    "replace_because_cannot_update": "an attribute that cannot be updated in place changed",
    "replace_because_tainted": "the resource is tainted",
    "replace_by_request": "replacement was requested (-replace)",
    "replace_by_triggers": "replace_triggered_by / triggers_replace changed",
    "delete_because_no_resource_config": "the resource was removed from the configuration",
    "delete_because_no_module": "its module was removed from the configuration",
    "delete_because_wrong_repetition": "count/for_each changed shape",
    "delete_because_count_index": "its count index is gone",
    "delete_because_each_key": "its for_each key is gone",
    "delete_because_no_move_target": "the moved target does not exist",
    "forgot_because_lifecycle_destroy_in_state": (
        "its state says lifecycle destroy = false, so it is forgotten, not destroyed"
    ),
}


def reason_text(code: str | None) -> str | None:
    if not code:
        return None
    return _REASONS.get(code, code.replace("_", " "))


def _path_str(path: Sequence[Any]) -> str:
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else str(step))
    return out


def marked(mark: Any) -> bool:
    """Is any leaf of a plan's mark tree (``after_unknown``, ``*_sensitive``) ``true``?"""
    if isinstance(mark, dict):
        return any(marked(v) for v in mark.values())
    if isinstance(mark, list):
        return any(marked(v) for v in mark)
    return mark is True


def changed_attributes(
    change: Mapping[str, Any], *, nested_unknown: bool = False
) -> tuple[str, ...]:
    """The top-level attributes of a resource change whose value changes, sorted.

    An attribute ``after_unknown`` marks as ``true`` counts as changing; with
    ``nested_unknown`` so does one with an unknown value anywhere inside it
    (a list or an object only partly known after apply).
    """
    before = change.get("before") or {}
    after = change.get("after") or {}
    unknown = change.get("after_unknown") or {}
    if not isinstance(before, dict) or not isinstance(after, dict):
        return ()
    names = sorted(
        set(before) | set(after) | (set(unknown) if isinstance(unknown, dict) else set())
    )

    def is_unknown(name: str) -> bool:
        if not isinstance(unknown, dict):
            return False
        return marked(unknown.get(name)) if nested_unknown else unknown.get(name) is True

    return tuple(n for n in names if before.get(n) != after.get(n) or is_unknown(n))


_VALUE_KEYS = ("before", "after", "after_unknown", "before_sensitive", "after_sensitive")


def value_digests(change: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """``(attribute, sha256)`` per top-level attribute of a resource change, over what the
    plan says of it (before, after, unknown after apply, sensitive marks), sorted. Equal
    digests: the two plans make the same change to that attribute, value for value. A
    change whose values are not objects is one entry, ``""``."""
    parts = {key: change.get(key) for key in _VALUE_KEYS}
    names = sorted({n for v in parts.values() if isinstance(v, dict) for n in v})
    if not names or not all(v is None or isinstance(v, dict | bool) for v in parts.values()):
        names, pick = [""], {"": parts}
    else:
        pick = {
            n: {k: (v.get(n) if isinstance(v, dict) else v) for k, v in parts.items()}
            for n in names
        }
    return tuple(
        (
            n,
            hashlib.sha256(
                json.dumps(pick[n], sort_keys=True, separators=(",", ":")).encode()
            ).hexdigest(),
        )
        for n in names
    )


def _resource(raw: Mapping[str, Any]) -> ResourceChange:
    change = raw.get("change") or {}
    return ResourceChange(
        address=str(raw.get("address", "?")),
        type=str(raw.get("type", "")),
        action=action_of(change.get("actions") or []),
        reason=raw.get("action_reason"),
        importing=bool(change.get("importing")),
        moved_from=raw.get("previous_address"),
        changed_attributes=changed_attributes(change),
        replace_paths=tuple(_path_str(p) for p in change.get("replace_paths") or ()),
        values=value_digests(change),
    )


def _counted(res: ResourceChange) -> dict[str, int]:
    """What one resource change adds to the counts: each part of its action
    (``forget+create`` is one create and one forget, as OpenTofu's "1 to add, 1 to
    forget"), its import, its move."""
    out = {part: 1 for part in res.action.split("+") if part in _ACTION_COUNTS}
    if res.importing:
        out["import"] = 1
    if res.moves:
        out["move"] = 1
    return out


_ACTION_COUNTS = frozenset(("create", "update", "delete", "replace", "forget"))


def summarize(plan: Mapping[str, Any]) -> PlanSummary:
    counts = dict.fromkeys(COUNT_KEYS, 0)
    changes: list[ResourceChange] = []
    for raw in plan.get("resource_changes") or ():
        if raw.get("mode") == "data":
            continue
        res = _resource(raw)
        for key, counted in _counted(res).items():
            counts[key] += counted
        if res.action != "no-op" or res.importing or res.moved_from:
            changes.append(res)
    drift = tuple(
        _resource(raw)
        for raw in plan.get("resource_drift") or ()
        if raw.get("mode") != "data"
        and action_of((raw.get("change") or {}).get("actions") or []) != "no-op"
    )
    return PlanSummary(
        counts, tuple(changes), drift, changed_outputs(plan), errored=bool(plan.get("errored"))
    )


def changed_outputs(plan: Mapping[str, Any]) -> tuple[str, ...]:
    """The names of the root module's outputs the plan changes, sorted."""
    return tuple(
        sorted(
            name
            for name, change in (plan.get("output_changes") or {}).items()
            if action_of((change or {}).get("actions") or []) != "no-op"
        )
    )


def from_stream(text: str) -> PlanSummary | None:
    """The summary of a plan from OpenTofu's machine-readable UI (``plan -json-into``,
    one JSON object a line), when that stream shows the plan changes nothing; else None.

    The stream names each planned change, drift and changed output (address, type,
    action, reason) and the counts, but holds no value. A plan that changes or
    drifts anything still needs ``show -json`` of the saved plan: the attributes
    that change and the replace paths (the report), and the values to redact (those
    a provider marks sensitive, those policy.toml declares). So this answers only
    for a plan with no planned change, no drift, no changed output, no error, and a
    ``change_summary`` of zeros; anything else, a line that is not JSON, or a
    stream cut short (no ``change_summary``), is None: read the plan instead.
    """
    finished = False
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            return None
        if not isinstance(msg, dict):
            return None
        kind = msg.get("type")
        if kind in ("planned_change", "resource_drift") or msg.get("@level") == "error":
            return None
        if kind == "outputs":
            outputs = msg.get("outputs")
            if not isinstance(outputs, dict) or any(
                not isinstance(o, dict) or o.get("action") != "noop" for o in outputs.values()
            ):
                return None
        if kind == "change_summary":
            changes = msg.get("changes")
            if (
                not isinstance(changes, dict)
                or changes.get("operation") != "plan"
                or any(v for k, v in changes.items() if k != "operation")
            ):
                return None
            finished = True
    return PlanSummary(dict.fromkeys(COUNT_KEYS, 0)) if finished else None
