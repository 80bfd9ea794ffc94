"""`invoke plan` plans through one `terragrunt run --all`: per-unit guarantees kept.

The tree has one failing unit (a module pin to a tag that does not exist) and
a dependent of it. The one-process run must give, unit by unit, what one
Terragrunt process per unit gives: a log holding that unit's lines only, a
status, a plan file, a gate, a progress line as each unit finishes, and a
summary.json of the same shape.
"""

from __future__ import annotations

import io
import re
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from infra_fixtures import EXAMPLE_UNITS, commit_all, git, invoke, read_summary, units_by_path

from tooling.core.plan.summary import Worktree
from tooling.core.plan.targets import select_targets
from tooling.engine.plan.batchplanner import run_batch
from tooling.engine.plan.planfolder import summary_of
from tooling.engine.plan.unitplanner import Progress, plan_unit, run_all
from tooling.io.workspace import Workspace

pytestmark = pytest.mark.e2e

ALL = list(EXAMPLE_UNITS)


def _break_iam(repo: Path) -> None:
    git(repo, "checkout", "--quiet", "-b", "broken")
    unit = repo / "live/cloud/iam/terragrunt.hcl"
    unit.write_text(unit.read_text().replace("?ref=v1.0.0", "?ref=v9.9.9"))
    commit_all(repo, "pin iam to a tag that does not exist")


def _shape(value: Any) -> Any:
    """The keys of a JSON document, recursively (lists by their first item)."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    return type(value).__name__ if value is not None else "null"


def test_one_failing_unit_keeps_every_per_unit_guarantee_of_the_one_process_run(
    example_repo: Path, tmp_path: Path
) -> None:
    _break_iam(example_repo)
    out = tmp_path / "batch"
    ran = invoke(example_repo, "plan", "--all", "--jobs", "2", "--out", str(out))
    assert ran.returncode == 1, ran.output
    assert "Traceback" not in ran.output
    summary = read_summary(out)
    units = units_by_path(summary)
    assert list(units) == [p for p in _dag_order(example_repo) if p in ALL]

    # failure isolation: the broken unit fails, its dependent is not planned,
    # every independent unit (and the ones planned against mocks) is planned
    assert units["live/cloud/iam"]["status"] == "error"
    assert "v9.9.9" in units["live/cloud/iam"]["error"]
    assert units["live/cloud/registry"]["status"] == "not-planned"
    assert (
        units["live/cloud/registry"]["error"] == "not planned: its dependency live/cloud/iam failed"
    )
    planned = [p for p in ALL if p not in ("live/cloud/iam", "live/cloud/registry")]
    for path in planned:
        assert units[path]["status"] == "changes", (path, units[path]["error"])

    # a status and a gate per unit; a log per unit that ran (not the dependent that
    # never started); a plan file (matching its hash) and text per planned unit
    for path, unit in units.items():
        assert unit["gate"]["decision"] in ("auto", "manual", "none"), path
        if path != "live/cloud/registry":
            assert unit["log_file"] == f"units/{path}/plan.log"
            assert (out / unit["log_file"]).read_text().strip(), path
    assert units["live/cloud/registry"]["log_file"] is None
    for path in planned:
        plan = out / units[path]["plan_file"]
        assert units[path]["plan_file"] == f"units/{path}/plan.tfplan" and plan.stat().st_size > 0
        from tooling.engine.plan.store import sha256_file

        assert sha256_file(plan) == units[path]["plan_sha256"]
        assert (
            (out / units[path]["text_file"])
            .read_text()
            .startswith("OpenTofu used the selected providers")
        )
    assert not list(out.rglob("tfplan.tfplan"))  # every plan file renamed, none left behind
    assert (
        units["live/cloud/iam"]["plan_file"] is None
        and units["live/cloud/registry"]["plan_file"] is None
    )

    # each log holds that unit's lines only: its own plan, no other unit's
    texts = {p: (out / units[p]["text_file"]).read_text() for p in planned}
    for path in planned:
        log = (out / units[path]["log_file"]).read_text()
        first_change = next(line for line in texts[path].splitlines() if line.startswith("  # "))
        assert first_change in log, path
        for other in planned:
            other_change = next(
                line for line in texts[other].splitlines() if line.startswith("  # ")
            )
            if other != path and other_change not in texts[path]:
                assert other_change not in log, (path, other)
    assert "v9.9.9" in (out / "units/live/cloud/iam/plan.log").read_text()

    # one progress line per unit, in the order they finished
    progress = re.findall(r"^  \[(\d+)/(\d+)\] (\S+): (\S+)", ran.stderr, re.M)
    assert sorted(p for _, _, p, _ in progress) == sorted(ALL)
    assert [int(k) for k, _, _, _ in progress] == list(range(1, 8)) and {
        n for _, n, _, _ in progress
    } == {"7"}
    assert {p: s for _, _, p, s in progress} == {p: u["status"] for p, u in units.items()}

    # the same tree planned one Terragrunt process per unit: the same results,
    # field by field, and a summary.json of the same shape
    ws = Workspace(example_repo)
    model = ws.model()
    targets = select_targets(
        model,
        root=example_repo.resolve(),
        all_units=True,
        units=(),
        change=None,
        executor=None,
        on_pr=False,
    )
    per_unit_out = tmp_path / "per-unit"
    per_unit_out.mkdir()
    planner = partial(plan_unit, policy=ws.policy)
    one_by_one = run_all(targets, per_unit_out, ws.tool_env, jobs=2, planner=planner)
    reference = summary_of(
        one_by_one,
        base=None,
        head=summary["head"],
        executor=None,
        root=example_repo,
        policy=ws.policy.gates,
        settings=ws.settings,
        worktree=Worktree.from_json(summary["worktree"]),  # read by the plan before any tool ran
    ).to_json()
    assert _shape(summary) == _shape(reference)
    for ours, theirs in zip(summary["units"], reference["units"], strict=True):
        for key in (
            "path",
            "status",
            "counts",
            "changes",
            "output_changes",
            "gate",
            "plan_file",
            "text_file",
            "log_file",
            "mocked_dependencies",
            "destroy",
            "source",
        ):
            assert ours[key] == theirs[key], (ours["path"], key)
        assert (ours["error"] is None) == (theirs["error"] is None)
    for path in planned:
        assert texts[path] == (per_unit_out / f"units/{path}/plan.txt").read_text(), path


def _dag_order(repo: Path) -> list[str]:
    return list(Workspace(repo).model().order)


def test_a_unit_the_filter_language_cannot_name_is_planned_one_process_per_unit(
    example_repo: Path, tmp_path: Path
) -> None:
    odd = "live/cloud/dns $(touch pwned) [x]"
    (example_repo / odd).parent.mkdir(parents=True, exist_ok=True)
    (example_repo / "live/cloud/dns").rename(example_repo / odd)
    commit_all(example_repo, "a unit with shell and glob characters in its name")
    ws = Workspace(example_repo)
    model = ws.model()
    targets = select_targets(
        model,
        root=example_repo.resolve(),
        all_units=False,
        units=[odd],
        change=None,
        executor=None,
        on_pr=False,
    )
    stream = io.StringIO()
    out = tmp_path / "plans"
    out.mkdir()
    [result] = run_batch(
        targets, out, ws.tool_env, jobs=2, policy=ws.policy, progress=Progress(1, stream)
    )
    assert result.status == "changes", result.error
    assert result.plan_file == f"units/{odd}/plan.tfplan" and (out / result.plan_file).is_file()
    assert f"[1/1] {odd}: changes" in stream.getvalue()
    assert not (example_repo / "pwned").exists()


def test_a_unit_reading_a_target_through_an_unplanned_unit_waits_for_it(
    example_repo: Path, tmp_path: Path
) -> None:
    """gitops reads vms through os. Planned together (os not), Terragrunt would not
    order them, and resolving gitops's inputs ran OpenTofu in vms's folder while
    vms was planned there ("Error acquiring the state lock"). gitops now plans in a
    second run, after vms has finished."""
    out = tmp_path / "out"
    ran = invoke(
        example_repo,
        "plan",
        "--unit",
        "live/cluster/vms",
        "--unit",
        "live/cluster/gitops",
        "--jobs",
        "2",
        "--out",
        str(out),
    )
    assert ran.returncode == 0, ran.output
    units = units_by_path(read_summary(out))
    assert {p: u["status"] for p, u in units.items()} == {
        "live/cluster/vms": "changes",
        "live/cluster/gitops": "changes",
    }
    for path in units:
        assert "state lock" not in (out / f"units/{path}/plan.log").read_text(), path
    finished = re.findall(r"^  \[\d+/2\] (\S+): ", ran.stderr, re.M)
    started = re.findall(r"^  planning (\S+)", ran.stderr, re.M)
    assert finished == ["live/cluster/vms", "live/cluster/gitops"], ran.stderr
    if started:  # the progress names each unit as it starts
        assert ran.stderr.index("planning live/cluster/gitops") > ran.stderr.index(
            "[1/2] live/cluster/vms"
        )
