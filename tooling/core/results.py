"""The outcome of planning one unit: what the report, the gates and apply read. Pure data.

A :class:`Result` carries everything the reviewer report shows: the plan's
summary, its gate (once decided, :func:`with_gates`) and its plan text (already
redacted, the same text as ``plan.txt``), so the report reads no file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tooling.core.gates import Gate, GatePolicy, decide
from tooling.core.planjson import COUNT_KEYS, PlanSummary


@dataclass(frozen=True)
class Result:
    path: str
    tier: str
    executor: str
    change: str
    status: str  # changes | no-changes | error | withheld | blocked | excluded | not-planned
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
    #: why the model cannot evaluate the unit (:func:`tooling.core.targets.model_refusal`):
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
            "status": self.status,
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
            "changes": (
                [{"address": c.address, "action": c.action} for c in self.summary.changes]
                if self.summary
                else []
            ),
            **({"gate": self.gate.to_json()} if self.gate is not None else {}),
        }


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
