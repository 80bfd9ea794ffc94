"""One executor's affected units split into legs of the CI matrix. Pure.

``invoke matrix --max-legs N`` (or ``max_legs`` of an ``[executors.NAME]``
table) runs an executor's plans and applies on up to N runners at once. The
split keeps every *connected part* of the affected graph in one leg: two
affected units are in the same part when one depends on the other, directly
or through units that are not affected (the model's graph, upstreams
included). So a leg never waits for another leg of its executor: the apply
order between legs never matters, and each leg applies in DAG order inside it.

The parts are packed longest-processing-time first (the costliest part goes to
the leg with the least cost so far), so the legs end close together. A unit's
cost is its plan time in the last run's ``summary.json`` (``seconds``) when one
is given, else 1 (the unit count); a unit the last run did not plan costs the
mean of the known ones.

GitHub starts at most :data:`MAX_LEGS` jobs from one matrix.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from tooling.core.plan.affected import Affected
from tooling.core.plan.summary import Summary
from tooling.core.text.terminal import escape_line
from tooling.errors import ToolingError
from tooling.model.policy import MAX_LEGS


@dataclass(frozen=True)
class Shard:
    """One leg: its units in DAG order, and their estimated cost."""

    units: tuple[str, ...]
    cost: float


def _affected_upstreams(
    path: str,
    dependencies: Mapping[str, Sequence[str]],
    chosen: frozenset[str],
    memo: dict[str, frozenset[str]],
) -> frozenset[str]:
    """The units of ``chosen`` that ``path`` reads, directly or through units outside it."""
    stack = [(path, iter(dependencies.get(path, ())))]
    visiting = {path}
    found: dict[str, set[str]] = {path: set()}
    while stack:
        node, deps = stack[-1]
        dep = next(deps, None)
        if dep is None:
            stack.pop()
            visiting.discard(node)
            memo[node] = frozenset(found.pop(node))
            if stack:
                parent = stack[-1][0]
                if node in chosen:
                    found[parent].add(node)
                else:
                    found[parent] |= memo[node]
            continue
        if dep in chosen:
            found[node].add(dep)
        elif dep in memo:
            found[node] |= memo[dep]
        elif dep not in visiting:  # a cycle is the model's error to report, not ours
            visiting.add(dep)
            found[dep] = set()
            stack.append((dep, iter(dependencies.get(dep, ()))))
    return memo[path]


def parts(units: Sequence[str], dependencies: Mapping[str, Sequence[str]]) -> list[tuple[str, ...]]:
    """The connected parts of ``units`` (in DAG order) under ``dependencies`` (the model's
    graph: unit -> the units it reads), each in the order of ``units``, ordered by their
    first unit."""
    order = list(dict.fromkeys(units))
    index = {u: i for i, u in enumerate(order)}
    chosen = frozenset(order)
    parent = {u: u for u in order}

    def find(u: str) -> str:
        while parent[u] != u:
            parent[u] = parent[parent[u]]
            u = parent[u]
        return u

    memo: dict[str, frozenset[str]] = {}
    for unit in order:
        # memo entries are for units outside ``chosen`` only: a chosen unit stops the walk
        memo.pop(unit, None)
        for up in _affected_upstreams(unit, dependencies, chosen, memo):
            a, b = find(unit), find(up)
            if a != b:
                parent[max(a, b, key=index.__getitem__)] = min(a, b, key=index.__getitem__)
        memo.pop(unit, None)
    groups: dict[str, list[str]] = {}
    for unit in order:
        groups.setdefault(find(unit), []).append(unit)
    return [tuple(g) for g in groups.values()]


def unit_costs(summary: Summary | None) -> dict[str, float]:
    """Each unit's plan time in a previous ``summary.json`` (``seconds`` > 0), by path."""
    return {u.path: u.seconds for u in summary.units if u.seconds > 0} if summary else {}


def split(
    units: Sequence[str],
    dependencies: Mapping[str, Sequence[str]],
    max_legs: int,
    costs: Mapping[str, float] | None = None,
) -> list[Shard]:
    """``units`` (one executor's, in DAG order) in at most ``max_legs`` legs.

    No connected part is split (:func:`parts`); parts are packed costliest
    first onto the leg with the least cost so far (ties: the lower leg).
    Legs are ordered by their first unit and keep the order of ``units``;
    no leg is empty, so there are fewer legs than ``max_legs`` when there are
    fewer parts. Deterministic: the same input gives the same legs.
    """
    if not isinstance(max_legs, int) or isinstance(max_legs, bool) or max_legs < 1:
        raise ToolingError(f"max legs must be a whole number >= 1, got {max_legs!r}")
    if max_legs > MAX_LEGS:
        raise ToolingError(
            f"max legs {max_legs} is more than GitHub starts from one matrix ({MAX_LEGS}): "
            f"use at most {MAX_LEGS}"
        )
    known = dict(costs or {})
    default = sum(known.values()) / len(known) if known else 1.0
    order = {u: i for i, u in enumerate(dict.fromkeys(units))}
    found = parts(units, dependencies)
    if not found:
        return []
    weight = [sum(known.get(u, default) for u in part) for part in found]
    legs: list[list[int]] = [[] for _ in range(min(max_legs, len(found)))]
    load = [0.0] * len(legs)
    for i in sorted(range(len(found)), key=lambda i: (-weight[i], i)):
        target = min(range(len(legs)), key=lambda n: (load[n], n))
        legs[target].append(i)
        load[target] += weight[i]
    shards = [
        Shard(
            tuple(sorted((u for i in leg for u in found[i]), key=order.__getitem__)),
            round(load[n], 3),
        )
        for n, leg in enumerate(legs)
    ]
    return sorted(shards, key=lambda s: order[s.units[0]])


def leg_id(executor: str, index: int, count: int) -> str:
    """The leg's id and artifact suffix: ``hosted-2-of-4`` (unique within a matrix, as
    GitHub's artifact names must be within a run)."""
    return f"{executor}-{index}-of-{count}"


#: characters GitHub refuses in an artifact name
_ARTIFACT_FORBIDDEN = set('":<>|*?\\/\r\n')


def sharded_matrix(
    doc: Mapping[str, Any],
    dependencies: Mapping[str, Sequence[str]],
    limits: Mapping[str, int],
    costs: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """The matrix ``doc`` (one entry per executor, :func:`tooling.core.ci.executors.matrix`)
    with each executor's entry split into up to ``limits[executor]`` legs (:func:`split`).

    An executor split into one leg keeps today's entry; one split into several has one
    entry per leg, each with its ``units`` and a ``leg`` id (:func:`leg_id`), which names
    its artifact (``plan-<leg>``). More than :data:`MAX_LEGS` legs in all is refused.
    """
    include: list[dict[str, Any]] = []
    for entry in doc.get("include") or ():
        executor = str(entry["executor"])
        shards = split(entry["units"], dependencies, limits.get(executor, 1), costs)
        if len(shards) <= 1:
            include.append(dict(entry))
            continue
        for n, shard in enumerate(shards, 1):
            leg = leg_id(executor, n, len(shards))
            if _ARTIFACT_FORBIDDEN & set(leg):
                raise ToolingError(
                    f"executor {executor!r} cannot name an artifact (GitHub refuses "
                    f'" : < > | * ? \\ / in artifact names): rename its [executors.*] table'
                )
            include.append({**entry, "units": list(shard.units), "leg": leg, "cost": shard.cost})
    if len(include) > MAX_LEGS:
        raise ToolingError(
            f"the matrix would have {len(include)} legs; GitHub starts at most {MAX_LEGS} jobs "
            "from one matrix: lower --max-legs or the executors' max_legs in policy.toml"
        )
    return {"include": include}


def leg_units(doc: Mapping[str, Any], leg: str) -> tuple[str, list[str]]:
    """The executor and units of leg ``leg`` of a matrix ``doc`` (its ``leg`` id, or the
    executor's name for an executor that was not split)."""
    include = doc.get("include") if isinstance(doc, Mapping) else None
    if not isinstance(include, list):
        raise ToolingError(
            'the matrix has no "include" list: pass `invoke matrix`\'s output or its file'
        )
    ids = []
    for entry in include:
        if not isinstance(entry, Mapping):
            continue
        name = entry.get("leg") or entry.get("executor")
        ids.append(str(name))
        if name == leg:
            units = entry.get("units")
            if not isinstance(units, list) or not all(isinstance(u, str) for u in units):
                raise ToolingError(f"leg {escape_line(leg)} of the matrix has no list of units")
            return str(entry.get("executor")), list(units)
    raise ToolingError(
        f"--leg {escape_line(leg)}: the matrix has no such leg (legs: {escape_line(', '.join(ids)) or 'none'})"
    )


def within(change: Affected, leg: Collection[str], leg_name: str) -> Affected:
    """``change`` with only the units of one leg (``leg``, its ``leg_name`` for errors).

    A leg that lists a unit this change does not affect was split from another
    commit or base: refused, so no leg plans what the matrix did not mean.
    """
    mine = set(leg)
    strangers = sorted(mine - {u.path for u in change.units})
    if strangers:
        more = f" and {len(strangers) - 1} more" if len(strangers) > 1 else ""
        raise ToolingError(
            f"leg {leg_name} lists {strangers[0]}{more}, which this change does not affect: "
            "the matrix was made at another commit or base; run `invoke matrix` again on this one"
        )
    return replace(change, units=tuple(u for u in change.units if u.path in mine))
