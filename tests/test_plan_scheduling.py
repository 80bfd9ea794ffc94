"""The plan scheduler's ordering rules, with a planner that only records timing.

These tests exercise run_all's DAG waves and worker pool, not tofu: a dependent
must start only after its upstream has *finished* (its plan reads the upstream's
outputs inside the upstream's working directory), independent units overlap,
and a failure stops exactly its dependents.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Mapping
from pathlib import Path

from tooling.core.plan.results import Result
from tooling.core.plan.targets import Target
from tooling.engine.plan.unitplanner import run_all

#: how long a planner waits for another unit to start before the test fails
WAIT = 30.0


def _target(path: str, *deps: str) -> Target:
    return Target(path, "t", "hosted", "all", Path("."), dependencies=deps)


class Recorder:
    """A planner that records start and end on a logical clock (no sleeps).

    ``hold`` maps a unit to another unit whose start it waits for before it
    finishes: the only way that wait ends is the two running at the same time.
    """

    def __init__(
        self,
        paths: list[str],
        fail: frozenset[str] = frozenset(),
        hold: Mapping[str, str] | None = None,
    ) -> None:
        self.events: list[tuple[str, str, int]] = []
        self.lock = threading.Lock()
        self.clock = itertools.count()
        self.fail = fail
        self.hold = dict(hold or {})
        self.started = {p: threading.Event() for p in paths}

    def __call__(self, target: Target, out: Path, env: Mapping[str, str]) -> Result:
        with self.lock:
            self.events.append(("start", target.path, next(self.clock)))
        self.started[target.path].set()
        other = self.hold.get(target.path)
        if other is not None and not self.started[other].wait(WAIT):
            raise AssertionError(f"{other} never started while {target.path} was planning")
        with self.lock:
            self.events.append(("end", target.path, next(self.clock)))
        status = "error" if target.path in self.fail else "no-changes"
        return Result(target.path, target.tier, target.executor, target.change, status)

    def at(self, kind: str, path: str) -> int:
        return next(t for k, p, t in self.events if k == kind and p == path)


def test_a_dependent_starts_only_after_its_upstream_finished(tmp_path: Path) -> None:
    targets = [_target("a"), _target("b", "a"), _target("c", "b"), _target("x")]
    rec = Recorder([t.path for t in targets], hold={"a": "x"})
    results = run_all(targets, tmp_path, {}, jobs=4, planner=rec)
    assert [r.status for r in results] == ["no-changes"] * 4
    assert rec.at("start", "b") >= rec.at("end", "a")
    assert rec.at("start", "c") >= rec.at("end", "b")
    # the independent unit overlapped with the chain
    assert rec.at("start", "x") < rec.at("end", "a")


def test_a_failure_stops_its_dependents_and_nothing_else(tmp_path: Path) -> None:
    targets = [_target("a"), _target("b", "a"), _target("c", "b"), _target("x")]
    rec = Recorder([t.path for t in targets], fail=frozenset({"a"}))
    results = {r.path: r for r in run_all(targets, tmp_path, {}, jobs=2, planner=rec)}
    assert results["a"].status == "error"
    assert results["b"].status == "not-planned" and "a failed" in (results["b"].error or "")
    assert results["c"].status == "not-planned"
    assert results["x"].status == "no-changes"
    assert {p for k, p, _ in rec.events if k == "start"} == {"a", "x"}
