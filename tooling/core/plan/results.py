"""The outcome of planning one unit: what the report, the gates and apply read. Pure data.

A :class:`Result` carries everything the reviewer report shows: the plan's
summary, its gate (once decided, :func:`with_gates`) and its plan text (already
redacted, the same text as ``plan.txt``), so the report reads no file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tooling.core.plan import fields
from tooling.core.plan.gates import Gate, decide
from tooling.core.plan.planjson import COUNT_KEYS, PlanSummary, ResourceChange
from tooling.core.plan.status import Status
from tooling.model.policy import GatePolicy


@dataclass(frozen=True)
class Result:
    path: str
    tier: str
    executor: str
    change: str
    status: Status
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNT_KEYS, 0))
    plan_file: str | None = None
    plan_sha256: str | None = None
    error: str | None = None
    summary: PlanSummary | None = None
    text_file: str | None = None
    log_file: str | None = None
    seconds: float = 0.0
    destroy: bool = False
    source: str | None = None
    source_before: str | None = None  # the module source at the merge base, when it changed
    gate_class: str = "auto"
    #: why the model cannot evaluate the unit (:func:`tooling.core.plan.targets.model_refusal`):
    #: planned, shown, never applied
    model_error: str | None = None
    mocked_dependencies: tuple[str, ...] = ()
    exit_code: int | None = (
        None  # terragrunt plan's exit code (2 = changes, with -detailed-exitcode)
    )
    gate: Gate | None = None  # decided from the plan by :func:`with_gates`
    plan_text: str | None = field(default=None, repr=False)  # redacted, as in text_file

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "tier": self.tier,
            "executor": self.executor,
            "change": self.change,
            "status": str(self.status),
            "counts": dict(self.counts),
            "plan_file": self.plan_file,
            "plan_sha256": self.plan_sha256,
            "text_file": self.text_file,
            "log_file": self.log_file,
            "seconds": round(self.seconds, 3),
            "destroy": self.destroy,
            "source": self.source,
            "source_before": self.source_before,
            "error": self.error,
            "model_error": self.model_error,
            "mocked_dependencies": list(self.mocked_dependencies),
            "output_changes": list(self.summary.output_changes) if self.summary else [],
            "changes": [_change_json(c) for c in self.summary.changes] if self.summary else [],
            **({"gate": self.gate.to_json()} if self.gate is not None else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Result:
        """The result a summary.json unit describes (the inverse of :meth:`to_json`; the
        plan's summary holds what the document keeps: counts, addresses and actions,
        output names). Raises ``ValueError`` naming the first key that is missing or of
        the wrong type."""
        changes = tuple(_change_from(c) for c in _items(data, "changes"))
        outputs = tuple(str(o) for o in _items(data, "output_changes"))
        counts = data.get("counts")
        if not isinstance(counts, Mapping) or not all(
            isinstance(counts.get(k), int) for k in COUNT_KEYS
        ):
            raise ValueError(f"counts: expected {', '.join(COUNT_KEYS)} as whole numbers")
        status = Status(fields.text(data, "status"))
        gate = data.get("gate")
        return cls(
            path=fields.text(data, "path"),
            tier=fields.text(data, "tier"),
            executor=fields.text(data, "executor"),
            change=fields.text(data, "change"),
            status=status,
            counts={str(k): int(v) for k, v in counts.items()},
            plan_file=fields.optional(data, "plan_file"),
            plan_sha256=fields.optional(data, "plan_sha256"),
            error=fields.optional(data, "error"),
            summary=(
                PlanSummary(dict(counts), changes, output_changes=outputs)
                if status.planned or changes or outputs
                else None
            ),
            text_file=fields.optional(data, "text_file"),
            log_file=fields.optional(data, "log_file"),
            seconds=float(data.get("seconds") or 0.0),
            destroy=bool(data.get("destroy")),
            source=fields.optional(data, "source"),
            source_before=fields.optional(data, "source_before"),
            model_error=fields.optional(data, "model_error"),
            mocked_dependencies=tuple(str(d) for d in _items(data, "mocked_dependencies")),
            gate=(
                Gate(fields.text(gate, "decision"), tuple(str(r) for r in _items(gate, "reasons")))
                if isinstance(gate, Mapping)
                else None
            ),
        )


def _change_json(c: ResourceChange) -> dict[str, Any]:
    """One resource change in summary.json: its address, its action, whether it is
    imported, and the address it moves from (null when it does not move)."""
    return {
        "address": c.address,
        "action": c.action,
        "importing": c.importing,
        "previous_address": c.moved_from if c.moves else None,
    }


def _change_from(data: Mapping[str, Any]) -> ResourceChange:
    """The inverse of :func:`_change_json`."""
    address = fields.text(data, "address")
    importing = data.get("importing", False)
    if not isinstance(importing, bool):
        raise ValueError(f"importing: expected true or false, found {type(importing).__name__}")
    return ResourceChange(
        address,
        _type_of(address),
        fields.text(data, "action"),
        importing=importing,
        moved_from=fields.optional(data, "previous_address"),
    )


def _type_of(address: str) -> str:
    """The resource type an address names (``module.a.aws_s3_bucket.b`` -> ``aws_s3_bucket``)."""
    return address.rsplit(".", 2)[-2] if "." in address else ""


def _items(data: Mapping[str, Any], key: str) -> list[Any]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{key}: expected a list, found {type(value).__name__}")
    return value


def with_gates(results: Sequence[Result], policy: GatePolicy) -> list[Result]:
    """``results``, each with its gate decided (a gate already decided is kept)."""
    return [
        r
        if r.gate is not None
        else replace(
            r,
            gate=decide(
                status=r.status,
                declared=r.gate_class,
                summary=r.summary,
                destroy=r.destroy,
                policy=policy,
                model_error=r.model_error,
            ),
        )
        for r in results
    ]
