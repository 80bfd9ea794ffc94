"""The repository model as plain data: units, the model, changed paths, DAG order."""

from __future__ import annotations

import heapq
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from tooling.errors import ToolingError

UNIT_FILE = "terragrunt.hcl"
LIVE_DIR = "live"

#: the unit facts read from locals (unit first, then included files, last include first)
META_KEYS = ("tier", "executor", "gate", "plan_on_pr")
#: the gate class of a unit whose ``gate`` local is not a string the model can read
UNRESOLVED_GATE = "<unresolved>"
#: the executor of a unit the model cannot evaluate: no executor runs it (fail closed)
UNRESOLVED_EXECUTOR = "<unresolved>"


@dataclass(frozen=True)
class Unit:
    """One Terragrunt unit, as plain data (``invoke units --json`` prints these)."""

    path: str
    tier: str
    executor: str
    gate: str
    plan_on_pr: bool
    source: str | None
    ref: str | None
    dependencies: tuple[str, ...]
    reads: tuple[str, ...]
    state_key: str | None
    state_bucket: str | None
    line_of: dict[str, int] = field(default_factory=dict, compare=False, hash=False)
    #: why the model cannot fully evaluate the unit; such a unit is affected by any change
    error: str | None = None
    #: what takes the unit out of Terragrunt's ``run --all`` (:mod:`tooling.model.excludes`):
    #: {"actions": [...], "exclude_dependencies": bool, "where": "file:line"}; None: nothing
    exclude: dict[str, Any] | None = None
    #: the backend type a ``remote_state`` block declares (``local``, ``s3``, ``gcs``...);
    #: None: the backend is the tooling's (root.hcl's ``state_key`` local, IAC_STATE_BUCKET)
    state_backend: str | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("line_of")
        data.pop("state_backend")
        data["dependencies"] = list(self.dependencies)
        data["reads"] = list(self.reads)
        return data


@dataclass(frozen=True)
class Model:
    """Every unit of a tree by path, and their DAG order."""

    units: dict[str, Unit]
    order: tuple[str, ...]  # DAG order: dependencies first, ties by path

    def readers(self) -> dict[str, list[str]]:
        """File (or directory, ending in '/') -> units that read it."""
        index: dict[str, list[str]] = {}
        for unit in self.units.values():
            for read in unit.reads:
                index.setdefault(read, []).append(unit.path)
        return index

    def upstream(self, path: str) -> set[str]:
        """Every path the unit at ``path`` depends on, directly or through others (a
        dependency that is no unit of the model is included, and ends its chain)."""
        seen: set[str] = set()
        stack = list(self.units[path].dependencies)
        while stack:
            dep = stack.pop()
            if dep not in seen:
                seen.add(dep)
                if dep in self.units:
                    stack.extend(self.units[dep].dependencies)
        return seen

    def dependents(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {path: [] for path in self.units}
        for unit in self.units.values():
            for dep in unit.dependencies:
                out.setdefault(dep, []).append(unit.path)
        return out


@dataclass(frozen=True)
class Change:
    """One changed path between two revisions: status A/M/D/R (renames carry ``old``)."""

    status: str
    path: str
    old: str | None = None


def toposort(units: Mapping[str, Unit]) -> tuple[str, ...]:
    """Dependencies first; ties broken by path so the order is stable. Cycles are errors."""
    order, stuck = dag_order(units)
    if stuck:
        raise ToolingError(
            "dependency cycle between units: "
            + ", ".join(stuck)
            + ". Remove one of the dependency blocks."
        )
    return order


def dag_order(units: Mapping[str, Unit]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(order, stuck): dependencies first, ties by path; units on or behind a cycle are ``stuck``."""
    indegree = {path: 0 for path in units}
    children: dict[str, list[str]] = {path: [] for path in units}
    for unit in units.values():
        for dep in unit.dependencies:
            if dep in units:
                indegree[unit.path] += 1
                children[dep].append(unit.path)
    ready = [p for p, d in indegree.items() if d == 0]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        path = heapq.heappop(ready)
        order.append(path)
        for child in children[path]:
            indegree[child] -= 1
            if indegree[child] == 0:
                heapq.heappush(ready, child)
    stuck = tuple(sorted(p for p, d in indegree.items() if d > 0))
    return tuple(order), stuck


def units_json(model: Model) -> str:
    return json.dumps({"units": [model.units[p].to_json() for p in model.order]}, indent=2)
