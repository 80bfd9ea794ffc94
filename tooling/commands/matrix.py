"""``invoke matrix``: the CI matrix, one leg per executor with affected units.

The units are the ones ``invoke plan`` would plan for the same change (the
changed units, deleted ones included, from :func:`tooling.commands.pipeline.compute_affected`);
the runner labels come from ``policy.toml`` (:mod:`tooling.core.executors`).
"""

from __future__ import annotations

from typing import Any

from tooling.commands import pipeline
from tooling.core import executors
from tooling.io.ui import say
from tooling.io.workspace import Workspace


def matrix(ws: Workspace, *, base: str | None = None) -> dict[str, Any]:
    """``{"include": [{"executor", "runs_on", "units"}, ...]}``; empty executors left out."""
    change, _ = pipeline.compute_affected(ws, base, uncommitted=True)
    pipeline.print_affected(change, say)
    doc = executors.matrix([(u.path, u.executor) for u in change.units], executors.parse(ws.policy))
    legs = (
        ", ".join(f"{leg['executor']} ({len(leg['units'])} unit(s))" for leg in doc["include"])
        or "none"
    )
    say(f"executors with affected units: {legs}")
    return doc
