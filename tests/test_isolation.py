"""A unit whose configuration loops (files that include or read each other) fails
alone: its error names the loop, and every independent unit of the same run
is read and planned as if it were not there.

The model on a real git repository; the plans with the real tofu and
terragrunt, through both planners (one process for many units, and one
process per unit).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from infra_fixtures import commit_all, invoke, make_example_repo, read_summary, units_by_path

from tooling.engine.plan.affected import compute_affected
from tooling.io.workspace import Workspace

LOOP = "live/cloud/loop"
INDEPENDENT = ("live/cloud/dns", "live/cloud/iam")

UNIT_FILE = """include "root" {
  path = find_in_parent_folders("root.hcl")
}

include "a" {
  path = "a.hcl"
}

terraform {
  source = "${get_repo_root()}/testmods/loop"
}
"""

#: a.hcl <-> b.hcl: Terragrunt refuses the nested include
INCLUDE_CYCLE = {
    "a.hcl": 'include "b" {\n  path = "b.hcl"\n}\n',
    "b.hcl": 'include "a" {\n  path = "a.hcl"\n}\n',
}

#: a.hcl <-> b.hcl through read_terragrunt_config(), which the model evaluates
READ_CYCLE_UNIT = UNIT_FILE.replace(
    'include "a" {\n  path = "a.hcl"\n}\n',
    'locals {\n  a = read_terragrunt_config("a.hcl")\n}\n',
)
READ_CYCLE = {
    "a.hcl": 'locals {\n  b = read_terragrunt_config("b.hcl")\n}\n',
    "b.hcl": 'locals {\n  a = read_terragrunt_config("a.hcl")\n}\n',
}


def _add_loop(repo: Path, unit_file: str, files: dict[str, str]) -> None:
    (repo / "testmods" / "loop").mkdir(parents=True, exist_ok=True)
    (repo / "testmods" / "loop" / "main.tf").write_text('output "x" {\n  value = 1\n}\n')
    (repo / LOOP).mkdir(parents=True)
    (repo / LOOP / "terragrunt.hcl").write_text(unit_file)
    for name, text in files.items():
        (repo / LOOP / name).write_text(text)
    commit_all(repo, "a unit whose configuration loops")


def test_a_read_terragrunt_config_cycle_is_the_units_own_error_naming_the_loop(
    tmp_path: Path,
) -> None:
    repo = make_example_repo(tmp_path / "infra")
    _add_loop(repo, READ_CYCLE_UNIT, READ_CYCLE)
    model = Workspace(repo).current_model
    error = model.units[LOOP].error or ""
    assert (
        f"read_terragrunt_config() cycle: {LOOP}/a.hcl -> {LOOP}/b.hcl -> {LOOP}/a.hcl" in error
    ), error
    assert "RecursionError" not in error
    assert [p for p, u in model.units.items() if u.error] == [LOOP]
    # a change to one of the files in the loop selects that unit, and only it
    (repo / LOOP / "b.hcl").write_text(READ_CYCLE["b.hcl"] + "# touched\n")
    result, _ = compute_affected(Workspace(repo), "HEAD", uncommitted=True)
    assert [u.path for u in result.units] == [LOOP]


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("unit_file", "files"),
    [(UNIT_FILE, INCLUDE_CYCLE), (READ_CYCLE_UNIT, READ_CYCLE)],
    ids=["include-cycle", "read-cycle"],
)
@pytest.mark.parametrize("planner", ["batch", "per-unit"])
def test_a_unit_whose_configuration_loops_fails_alone(
    example_repo: Path, tmp_path: Path, unit_file: str, files: dict[str, str], planner: str
) -> None:
    _add_loop(example_repo, unit_file, files)
    out = tmp_path / "plans"
    if planner == "batch":  # several --unit: one terragrunt process for all of them
        argv = ["plan", "--out", str(out)]
        for unit in (LOOP, *INDEPENDENT):
            argv += ["--unit", unit]
        ran = invoke(example_repo, *argv)
    else:  # the drift check plans every unit in a process of its own
        argv = ["drift", "--out", str(out)]
        ran = invoke(example_repo, *argv)
    assert "bug in the tooling" not in ran.output
    if planner == "batch":
        assert ran.returncode == 1, ran.output
        units = units_by_path(read_summary(out))
    else:  # drift reports a failed plan, and exits 1 for it
        assert ran.returncode == 1, ran.output
        units = {u["path"]: u for u in json.loads((out / "drift.json").read_text())["units"]}
    statuses = {path: u["status"] for path, u in units.items()}
    assert statuses[LOOP] == "error", statuses
    assert "a.hcl" in str(units[LOOP]["error"]), units[LOOP]["error"]
    for path in INDEPENDENT:
        assert statuses[path] not in ("error", "not-planned"), (path, units[path])
        assert "a.hcl" not in str(units[path].get("error")), units[path]
