"""The split of an executor's affected units into legs of the CI matrix (tooling.core.ci.split): tables."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from schema_check import summary_doc, summary_unit

from tooling.core.ci import split
from tooling.core.plan.summary import Summary
from tooling.errors import ToolingError
from tooling.model.policy import policy_from


def _summary(*times: tuple[str, float]) -> Summary:
    """A previous run's summary.json, typed as its reader types it: each unit's plan time."""
    return Summary.from_json(summary_doc([summary_unit(p, seconds=s) for p, s in times]))


Graph = Mapping[str, Sequence[str]]


def _chain(prefix: str, n: int) -> dict[str, list[str]]:
    """``n`` units, each reading the one before it: one connected part."""
    return {f"{prefix}{i}": [f"{prefix}{i - 1}"] if i else [] for i in range(n)}


def _check(units: Sequence[str], graph: Graph, legs: Sequence[split.Shard]) -> None:
    """The split's invariants: a partition of ``units``, no part split, DAG order kept."""
    flat = [u for leg in legs for u in leg.units]
    assert sorted(flat) == sorted(set(units)), "the legs' union is the affected set, once each"
    where = {u: n for n, leg in enumerate(legs) for u in leg.units}
    for part in split.parts(units, graph):
        assert len({where[u] for u in part}) == 1, f"connected part split: {part}"
    order = {u: i for i, u in enumerate(units)}
    for leg in legs:
        assert list(leg.units) == sorted(leg.units, key=order.__getitem__), "DAG order kept"
        assert leg.units, "no empty leg"


# --------------------------------------------------------------------------- parts


def test_units_that_read_each_other_even_through_an_unaffected_unit_are_one_part() -> None:
    graph = {"net": [], "vms": ["net"], "os": ["vms"], "dns": [], "app": ["dns"], "solo": []}
    # "os" reads "net" through "vms", which is not affected
    assert split.parts(["net", "os", "dns", "app", "solo"], graph) == [
        ("net", "os"),
        ("dns", "app"),
        ("solo",),
    ]


def test_two_units_sharing_an_unaffected_upstream_are_independent_parts() -> None:
    graph = {"shared": [], "a": ["shared"], "b": ["shared"]}
    assert split.parts(["a", "b"], graph) == [("a",), ("b",)]


def test_a_dependency_cycle_in_the_graph_does_not_hang_the_split() -> None:
    graph = {"a": ["x"], "x": ["y"], "y": ["x", "b"], "b": []}
    assert split.parts(["b", "a"], graph) == [("b", "a")]


# --------------------------------------------------------------------------- split


def test_no_connected_part_is_split_and_the_union_is_the_affected_set() -> None:
    graph: dict[str, list[str]] = {}
    for n, size in enumerate([5, 3, 3, 2, 2, 1, 1, 1]):
        graph.update(_chain(f"p{n}-", size))
    units = list(graph)
    for legs in (1, 2, 3, 4, 8, 20):
        got = split.split(units, graph, legs)
        assert len(got) == min(legs, 8)
        _check(units, graph, got)


def test_legs_are_balanced_within_1_5x_of_the_mean_when_the_parts_allow_it() -> None:
    graph: dict[str, list[str]] = {}
    sizes = [9, 7, 7, 6, 5, 5, 4, 4, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1]
    for n, size in enumerate(sizes):
        graph.update(_chain(f"p{n}-", size))
    units = list(graph)
    for legs in (2, 3, 4, 5):
        got = split.split(units, graph, legs)
        _check(units, graph, got)
        mean = len(units) / legs
        assert max(leg.cost for leg in got) <= 1.5 * mean, (legs, [leg.cost for leg in got])


def test_the_costliest_part_is_packed_first_so_a_late_big_part_does_not_unbalance_the_legs() -> (
    None
):
    """Parts 1,1,1,1,1,1,6 in DAG order over 2 legs: packed in that order, 9 and 3; costliest first, 6 and 6."""
    graph: dict[str, list[str]] = {}
    for n, size in enumerate([1, 1, 1, 1, 1, 1, 6]):
        graph.update(_chain(f"p{n}-", size))
    got = split.split(list(graph), graph, 2)
    assert [leg.cost for leg in got] == [6, 6]
    assert got[1].units == tuple(f"p6-{i}" for i in range(6))


def test_more_legs_than_parts_gives_one_leg_per_part() -> None:
    graph = {**_chain("a", 3), **_chain("b", 2)}
    got = split.split(list(graph), graph, 16)
    assert [leg.units for leg in got] == [("a0", "a1", "a2"), ("b0", "b1")]


def test_one_huge_part_stays_whole_and_the_other_legs_share_the_rest() -> None:
    graph = {**_chain("big", 50), **_chain("s", 1), **_chain("t", 1), **_chain("u", 1)}
    got = split.split(list(graph), graph, 3)
    _check(list(graph), graph, got)
    assert [leg.cost for leg in got] == [50, 2, 1]
    assert got[0].units == tuple(f"big{i}" for i in range(50))


def test_nothing_affected_gives_no_leg() -> None:
    assert split.split([], {}, 4) == []
    assert split.parts([], {}) == []


def test_the_same_input_gives_the_same_legs() -> None:
    graph: dict[str, list[str]] = {}
    for n in range(30):
        graph.update(_chain(f"p{n:02}-", 1 + n % 4))
    units = list(graph)
    first = split.split(units, graph, 7)
    assert all(split.split(list(units), dict(graph), 7) == first for _ in range(3))


def test_the_last_runs_plan_times_pack_the_legs_when_known() -> None:
    """Four single units: by count 2+2; by time the slow one gets a leg of its own."""
    graph = {"slow": [], "a": [], "b": [], "c": []}
    summary = _summary(("slow", 30.0), ("a", 10.0), ("b", 10.0), ("c", 10.0))
    by_count = split.split(list(graph), graph, 2)
    assert [len(leg.units) for leg in by_count] == [2, 2]
    by_time = split.split(list(graph), graph, 2, split.unit_costs(summary))
    assert [leg.units for leg in by_time] == [("slow",), ("a", "b", "c")]
    assert [leg.cost for leg in by_time] == [30.0, 30.0]


def test_a_unit_the_last_run_did_not_time_costs_the_mean_of_the_timed_ones() -> None:
    costs = split.unit_costs(_summary(("a", 4), ("b", 0)))
    assert costs == {"a": 4.0}  # zero (never planned) and missing are unknown
    got = split.split(["a", "new"], {"a": [], "new": []}, 1, costs)
    assert got[0].cost == 8.0


@pytest.mark.parametrize("bad", [0, -1, 257, True])
def test_a_leg_count_outside_1_to_256_is_refused_with_githubs_limit(bad: Any) -> None:
    with pytest.raises(ToolingError, match=r"max legs"):
        split.split(["a"], {"a": []}, bad)


# --------------------------------------------------------------------------- the matrix


HOSTED = {"executor": "hosted", "runs_on": ["ubuntu-latest"]}


def test_an_executor_split_in_legs_has_one_entry_per_leg_with_its_units_and_id() -> None:
    graph = {**_chain("a", 2), **_chain("b", 2), **_chain("c", 1)}
    doc = {"include": [{**HOSTED, "units": list(graph)}]}
    got = split.sharded_matrix(doc, graph, {"hosted": 3})
    assert got == {
        "include": [
            {**HOSTED, "units": ["a0", "a1"], "leg": "hosted-1-of-3", "cost": 2.0},
            {**HOSTED, "units": ["b0", "b1"], "leg": "hosted-2-of-3", "cost": 2.0},
            {**HOSTED, "units": ["c0"], "leg": "hosted-3-of-3", "cost": 1.0},
        ]
    }
    names = [f"plan-{leg['leg']}" for leg in got["include"]]
    assert len(set(names)) == len(names)  # one artifact per leg


def test_one_leg_keeps_todays_entry_unchanged() -> None:
    graph = _chain("a", 3)
    doc = {"include": [{**HOSTED, "units": list(graph)}]}
    assert split.sharded_matrix(doc, graph, {"hosted": 1}) == doc
    assert split.sharded_matrix(doc, graph, {"hosted": 8}) == doc  # one part: one leg


def test_more_than_256_legs_in_all_is_refused_naming_githubs_limit() -> None:
    graph = {f"u{i}": [] for i in range(300)}
    doc = {
        "include": [
            {**HOSTED, "units": [f"u{i}" for i in range(150)]},
            {
                "executor": "lan",
                "runs_on": ["self-hosted"],
                "units": [f"u{i}" for i in range(150, 300)],
            },
        ]
    }
    with pytest.raises(
        ToolingError, match=re.escape("the matrix would have 300 legs; GitHub starts at most 256")
    ):
        split.sharded_matrix(doc, graph, {"hosted": 150, "lan": 150})


def test_an_executor_name_github_refuses_in_an_artifact_name_is_an_error() -> None:
    doc = {"include": [{"executor": "a/b", "runs_on": ["x"], "units": ["u", "v"]}]}
    with pytest.raises(ToolingError, match="cannot name an artifact"):
        split.sharded_matrix(doc, {"u": [], "v": []}, {"a/b": 2})


def test_a_leg_is_found_by_id_and_an_unknown_leg_names_the_legs_there_are() -> None:
    doc = {
        "include": [
            {**HOSTED, "units": ["a"], "leg": "hosted-1-of-2"},
            {**HOSTED, "units": ["b"], "leg": "hosted-2-of-2"},
            {"executor": "lan", "units": ["c"]},
        ]
    }
    assert split.leg_units(doc, "hosted-2-of-2") == ("hosted", ["b"])
    assert split.leg_units(doc, "lan") == ("lan", ["c"])
    with pytest.raises(
        ToolingError,
        match=r"--leg hosted-3-of-2: the matrix has no such leg \(legs: hosted-1-of-2, hosted-2-of-2, lan\)",
    ):
        split.leg_units(doc, "hosted-3-of-2")


@pytest.mark.parametrize("raw", [0, 257, "4", True, 2.5])
def test_max_legs_in_policy_must_be_1_to_256(raw: Any) -> None:
    with pytest.raises(
        ToolingError, match=r"\[executors.hosted\] max_legs must be a whole number from 1 to 256"
    ):
        policy_from({"executors": {"hosted": {"runs_on": ["a"], "max_legs": raw}}})


def test_max_legs_in_policy_is_read_and_defaults_to_one() -> None:
    parsed = policy_from(
        {"executors": {"hosted": {"runs_on": ["a"], "max_legs": 16}, "lan": {"runs_on": ["b"]}}}
    ).executors
    assert (parsed["hosted"].max_legs, parsed["lan"].max_legs) == (16, 1)


def _reaches(graph: Graph, start: str) -> set[str]:
    """Every unit ``start`` reads, directly or not."""
    seen: set[str] = set()
    stack = list(graph.get(start, ()))
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            stack.extend(graph.get(node, ()))
    return seen


@pytest.mark.parametrize("seed", range(12))
def test_no_leg_ever_waits_for_another_an_affected_upstream_is_always_in_its_dependents_leg(
    seed: int,
) -> None:
    """Random DAGs (seeded): for every affected unit, every affected unit it reads,
    directly or through unaffected ones, is in its leg, so no apply order between legs
    of one executor exists to get wrong."""
    import random

    rng = random.Random(seed)
    names = [f"u{i:03}" for i in range(120)]
    graph = {
        name: rng.sample(names[:i], k=min(i, rng.choice([0, 0, 1, 1, 2])))
        for i, name in enumerate(names)
    }
    affected = [n for n in names if rng.random() < 0.3]
    for legs in (2, 4, 16):
        got = split.split(affected, graph, legs)
        _check(affected, graph, got)
        where = {u: n for n, leg in enumerate(got) for u in leg.units}
        for unit in affected:
            for upstream in _reaches(graph, unit) & set(affected):
                assert where[upstream] == where[unit], (seed, legs, unit, upstream)
