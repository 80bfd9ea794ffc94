"""summary.json: the document a plan run writes (``invoke plan``, ``invoke app-plan``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tooling.core.gates import GatePolicy
from tooling.core.results import Result, with_gates
from tooling.io import outdir
from tooling.io.config import Settings

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
) -> dict[str, Any]:
    """summary.json: the run's revisions and tools, whether the tree was dirty
    (``worktree``, :func:`tooling.core.binding.worktree_record`), and per unit its
    result with its gate (decided here under ``policy`` for a result that has none yet)."""
    from tooling.io import toolchain

    doc: dict[str, Any] = {
        "version": SUMMARY_VERSION,
        "base": base,
        "head": head,
        "executor": executor,
        "tools": {tool.name: version for tool, version in toolchain.read_pins(root)},
        "interrupted": interrupted,
    }
    if worktree is not None:
        doc["worktree"] = dict(worktree)
    if settings is not None:
        doc["settings"] = settings.to_json()
    doc["units"] = [r.to_json() for r in with_gates(results, policy)]
    return doc
