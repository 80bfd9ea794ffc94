"""summary.json: the document a plan run writes (``invoke plan``, ``invoke app-plan``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tooling.core.results import Result, with_gates
from tooling.errors import ToolingError
from tooling.io import outdir
from tooling.io.config import Settings
from tooling.model.policy import GatePolicy

SUMMARY_VERSION = 1


def write_summary(out_dir: Path, data: dict[str, Any]) -> Path:
    return outdir.write_json(out_dir / "summary.json", data)


def summary_document(
    results: Sequence[Result],
    *,
    base: str | None,
    head: str,
    executor: str | None,
    root: Path,
    policy: GatePolicy,
    settings: Settings | None = None,
    interrupted: bool = False,
    worktree: Mapping[str, Any] | None = None,
    planned_at: datetime | None = None,
    leg: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """summary.json: the run's revisions and tools, whether the tree was dirty
    (``worktree``, :func:`tooling.core.binding.worktree_record`), and per unit its
    result with its gate (decided here under ``policy`` for a result that has none yet);
    ``leg``: the leg of a split matrix the folder holds (:func:`tooling.core.legs.leg_record`)."""
    from tooling.io import toolchain

    doc: dict[str, Any] = {
        "version": SUMMARY_VERSION,
        "base": base,
        "head": head,
        "executor": executor,
        "tools": {tool.name: version for tool, version in toolchain.read_pins(root)},
        "interrupted": interrupted,
        # when the run started (before the first plan): an apply refuses plans older than
        # [apply] max_plan_age from it (tooling.core.applypolicy)
        "planned_at": (planned_at or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    if worktree is not None:
        doc["worktree"] = dict(worktree)
    if settings is not None:
        doc["settings"] = settings.to_json()
    doc["units"] = [r.to_json() for r in with_gates(results, policy)]
    if leg is not None:
        doc["leg"] = dict(leg)
    return doc


def planned_units(units: list[Any], summary_path: Path, plans_dir: Path) -> list[Result]:
    """summary.json's units as Results; a unit that is not one stops the apply, named."""
    out: list[Result] = []
    for i, unit in enumerate(units):
        try:
            out.append(Result.from_json(unit))
        except ValueError as exc:
            raise ToolingError(
                f"{summary_path}: units[{i}] is not a planned unit ({exc}); "
                f"re-plan with `invoke plan --out {plans_dir}`"
            ) from None
    return out
