"""The generated benchmark tree (benchmarks/gentree.py) plans offline: its modules built
as local repositories with tags, each unit's upstream output mocked for plan, the legs of
a split matrix planned and merged as benchmarks/bench_legs.py does."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from infra_fixtures import REPO, commit_all, git, invoke, read_summary, units_by_path

sys.path.insert(0, str(REPO / "benchmarks"))
from gentree import generate, module_repos

pytestmark = pytest.mark.e2e


def test_generated_tree_plans_its_legs_offline_with_upstream_outputs_mocked(
    tmp_path: Path, tools: None
) -> None:
    tree = tmp_path / "tree"
    paths = generate(tree, 20)  # one tier, two groups of 10 (two dependency chains)
    env = {"IAC_MODULE_REWRITE": module_repos(tmp_path / "modules")}
    git(tree, "init", "--quiet", "--initial-branch=main")
    commit_all(tree, "generated tree")
    git(tree, "checkout", "--quiet", "-b", "wide")
    tier = tree / "live/t0/tier.hcl"
    tier.write_text(tier.read_text().replace('gate       = "auto"', 'gate       = "auto" # wide'))
    commit_all(tree, "touch the tier")

    ran = invoke(tree, "matrix", "--base", "main", "--max-legs", "2", env=env)
    assert ran.returncode == 0, ran.output
    matrix = tmp_path / "matrix.json"
    matrix.write_text(ran.stdout)
    legs = json.loads(ran.stdout)["include"]
    assert sorted(len(e["units"]) for e in legs) == [10, 10]  # one leg per chain

    folders = []
    for entry in legs:
        out = tmp_path / f"plan-{entry['leg']}"
        ran = invoke(tree, "plan", "--base", "main", "--from-matrix", str(matrix),
                     "--leg", entry["leg"], "--jobs", "2", "--out", str(out), env=env)  # fmt: skip
        assert ran.returncode == 0, ran.output
        got = units_by_path(read_summary(out))
        assert sorted(got) == sorted(entry["units"])
        assert {u["status"] for u in got.values()} == {"changes"}, ran.output
        folders += ["--merge", str(out)]

    merged = tmp_path / "merged"
    ran = invoke(tree, "report", *folders, "--out", str(merged), env=env)
    assert ran.returncode == 0, ran.output
    assert sorted(units_by_path(read_summary(merged))) == sorted(paths)
    # the dependent planned before its upstream was applied: the upstream's id mocked
    text = (merged / "units/live/t0/g0/u1/plan.txt").read_text()
    assert '"mock"' in text and "terraform-mod-1" in text, text
