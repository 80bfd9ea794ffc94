"""``invoke matrix``: the CI matrix, one leg per executor with affected units, or
several per executor (``--max-legs``, ``max_legs`` in policy.toml).

The units are the ones ``invoke plan`` would plan for the same change (the
changed units, deleted ones included, from :func:`tooling.engine.plan.affected.compute_affected`);
the runner labels come from ``policy.toml`` (:mod:`tooling.core.ci.executors`); the
split into legs is :mod:`tooling.core.ci.split`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tooling.core.ci import executors, split
from tooling.engine.plan import planfolder
from tooling.engine.plan.affected import compute_affected, print_affected
from tooling.io.ui import say
from tooling.io.workspace import Workspace
from tooling.model.policy import MAX_LEGS


def _timings(path: Path | None) -> dict[str, float]:
    """Each unit's plan time in an earlier run's summary.json (``--timings``), read as
    untrusted input (:func:`tooling.engine.plan.planfolder.read_summary`: a regular file of
    bounded size matching summary.json's schema)."""
    if path is None:
        return {}
    return split.unit_costs(planfolder.read_summary(path, source=f"--timings {path}"))


def matrix(
    ws: Workspace,
    *,
    base: str | None = None,
    max_legs: int | None = None,
    timings: Path | None = None,
) -> dict[str, Any]:
    """``{"include": [{"executor", "runs_on", "units"[, "leg", "cost"]}, ...]}``; empty executors left out."""
    costs = _timings(timings)
    change, model = compute_affected(ws, base, uncommitted=True)
    print_affected(change, say)
    declared = ws.policy.executors
    doc = executors.matrix([(u.path, u.executor) for u in change.units], declared)
    limits = {name: max_legs or e.max_legs for name, e in declared.items()}
    if any(n > 1 for n in limits.values()) and doc["include"]:
        graph = {p: list(u.dependencies) for p, u in model.units.items()}
        if any(u.change == "deleted" for u in change.units):
            # a deleted unit and what read it are destroyed and updated in one leg
            for p, u in ws.model(ws.tree_at(change.base)).units.items():
                graph[p] = list(dict.fromkeys([*graph.get(p, []), *u.dependencies]))
        doc = split.sharded_matrix(doc, graph, limits, costs)
    legs = (
        ", ".join(
            f"{leg.get('leg') or leg['executor']} ({len(leg['units'])} unit(s))"
            for leg in doc["include"]
        )
        or "none"
    )
    say(f"executors with affected units: {legs}")
    return doc


def parse_max_legs(text: str) -> int | None:
    """``--max-legs N``: None when not given; a usage error unless 1 <= N <= 256."""
    from tooling.errors import UsageError

    if not text.strip():
        return None
    try:
        value = int(text.strip())
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_LEGS:
        raise UsageError(
            f"--max-legs {text}: pass a whole number from 1 to {MAX_LEGS} "
            f"(GitHub starts at most {MAX_LEGS} jobs from one matrix)"
        )
    return value
