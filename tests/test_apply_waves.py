"""Apply in waves: an approval is asked for on the plan that will apply, never on mocks.

A manual unit whose upstream applies in the same run is re-planned against the
upstream's real outputs *before* the approval is asked for; that re-plan is what
apply.md shows and what the next ``invoke apply --approve-manual`` on the same
folder applies, byte for byte. A chain repeats per wave (network -> vms -> os ->
gitops). Real terragrunt and tofu on the sandbox catalog, local state.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from infra_fixtures import EXAMPLE_FILES, REPO, commit_all, git, invoke, read_summary

pytestmark = pytest.mark.e2e

VMS, OS, GITOPS, NETWORK = (
    "live/cluster/vms",
    "live/cluster/os",
    "live/cluster/gitops",
    "live/cluster/network",
)


def _apply(repo: Path, out: Path, *args: str) -> tuple[int, dict[str, dict[str, Any]], str]:
    ran = invoke(repo, "apply", "--plans", str(out), *args)
    assert "Traceback" not in ran.output, ran.output
    doc = json.loads((out / "apply.json").read_text())
    return ran.returncode, {u["path"]: u for u in doc["units"]}, ran.output


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _in_sub_folder(top: Path) -> Path:
    """The example with its project root in ``infra/`` of a larger git repository."""
    infra = top / "infra"
    infra.mkdir(parents=True)
    for name in EXAMPLE_FILES:
        shutil.copy2(REPO / name, infra / name)
    shutil.copytree(
        REPO / "live", infra / "live", ignore=shutil.ignore_patterns(".terragrunt-cache")
    )
    (top / "README.md").write_text("the company's monorepo\n")
    git(top, "init", "--quiet", "--initial-branch=main")
    commit_all(top, "infrastructure in infra/")
    return infra


@pytest.mark.parametrize("layout", ["git top", "sub-folder"])
def test_the_example_converges_from_empty_state_with_one_approval_per_wave_on_one_folder(
    example_repo: Path, tmp_path: Path, layout: str
) -> None:
    if layout == "sub-folder":
        example_repo = _in_sub_folder(tmp_path / "monorepo")
    # the plan is the batch planner's (one Terragrunt process), each re-plan the per-unit one
    out = tmp_path / "plans"
    ran = invoke(example_repo, "plan", "--all", "--out", str(out))
    assert ran.returncode == 0, ran.output
    assert {u["path"] for u in read_summary(out)["units"] if u["gate"]["decision"] == "manual"} >= {
        VMS,
        OS,
    }

    # 1. the merge's apply: auto units apply; vms, whose upstream network just applied, is
    #    re-planned on network's real outputs before anyone is asked to approve it
    code, units, output = _apply(example_repo, out)
    assert code == 0, output
    assert units[NETWORK]["result"] == "applied"
    vms = units[VMS]
    assert vms["result"] == "waiting-approval" and vms["cascaded"] is True, vms
    waiting = vms["waiting_plan"]
    assert waiting["plan_file"] == f"cascade/units/{VMS}/plan.tfplan"
    assert _sha(out / waiting["plan_file"]) == waiting["plan_sha256"]
    shown = (out / waiting["text_file"]).read_text()
    apply_md = (out / "apply.md").read_text()
    assert "New plan of <code>live/cluster/vms</code>" in apply_md
    # the values the approval is asked for are network's real ones, not its mocks
    assert "vmbr-mock" not in shown and "vmbr" in shown, shown
    assert "vmbr-mock" in (out / "units" / VMS / "plan.txt").read_text()
    assert (
        units[OS]["result"] == "waiting-approval" and units[GITOPS]["result"] == "waiting-approval"
    )

    # 2. the first approval applies exactly the re-plan that was shown; os, which reads
    #    vms's outputs, is re-planned on them and waits for its own approval
    code, units, output = _apply(example_repo, out, "--approve-manual")
    assert code == 0, output
    assert units[VMS]["result"] == "applied" and "waiting_plan" not in units[VMS], units[VMS]
    # applied from the re-plan's own file: its apply log sits beside it
    assert "Apply complete!" in (out / "cascade" / "units" / VMS / "apply.log").read_text()
    os_unit = units[OS]
    assert os_unit["result"] == "waiting-approval" and os_unit["cascaded"] is True, os_unit
    assert os_unit["waiting_plan"]["plan_file"] == f"cascade/units/{OS}/plan.tfplan"
    assert units[GITOPS]["result"] == "waiting-approval"
    assert "New plan of <code>live/cluster/os</code>" in (out / "apply.md").read_text()

    # 3. the second approval applies os's re-plan; gitops, auto, follows by its gate
    code, units, output = _apply(example_repo, out, "--approve-manual")
    assert code == 0, output
    assert units[OS]["result"] == "applied" and not units[OS]["earlier"]
    assert units[GITOPS]["result"] == "applied" and units[GITOPS]["cascaded"] is True

    # the tree converged: a new plan changes nothing
    again = tmp_path / "again"
    ran = invoke(example_repo, "plan", "--all", "--out", str(again))
    assert ran.returncode == 0, ran.output
    assert {u["status"] for u in read_summary(again)["units"]} == {"no-changes"}


def _planned_and_applied(repo: Path, out: Path) -> dict[str, dict[str, Any]]:
    """plan --all into ``out``, then the apply without approval: its units."""
    assert invoke(repo, "plan", "--all", "--out", str(out)).returncode == 0
    code, units, output = _apply(repo, out)
    assert code == 0, output
    return units


def test_a_waiting_replan_changed_after_it_was_shown_is_refused_with_the_approval(
    example_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "plans"
    units = _planned_and_applied(example_repo, out)
    assert units[VMS]["result"] == "waiting-approval", units[VMS]
    replan = out / units[VMS]["waiting_plan"]["plan_file"]
    replan.write_bytes(replan.read_bytes() + b"\0")

    code, units, output = _apply(example_repo, out, "--approve-manual")

    assert code == 1, output
    assert units[VMS]["result"] == "refused", units[VMS]
    assert "does not match the reviewed plan" in units[VMS]["reason"]
    assert not (example_repo / ".iac/state" / VMS / "terraform.tfstate").exists()  # never applied


def test_a_record_naming_a_replan_outside_the_folder_is_refused(
    example_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "plans"
    _planned_and_applied(example_repo, out)
    record = json.loads((out / "apply.json").read_text())
    for unit in record["units"]:
        if unit["path"] == VMS:
            unit["waiting_plan"]["plan_file"] = f"cascade/units/../../units/{VMS}/plan.tfplan"
    (out / "apply.json").write_text(json.dumps(record))

    code, units, output = _apply(example_repo, out, "--approve-manual")

    assert code == 1, output
    assert units[VMS]["result"] == "refused" and "record was altered" in units[VMS]["reason"]


REGISTRY, REPOS = "live/cloud/registry", '["web", "api", "worker"]'


def test_a_cascaded_unit_whose_merge_plan_differs_from_the_reviewed_one_stays_manual(
    example_repo: Path, tmp_path: Path
) -> None:
    """registry reads iam's outputs (mocks before iam exists): its re-plan after iam
    applies is auto by itself, but the merge's plan is not the one reviewed."""
    repo = example_repo
    edit_file = repo / REGISTRY / "terragrunt.hcl"
    git(repo, "checkout", "--quiet", "-b", "pr")
    edit_file.write_text(edit_file.read_text().replace(REPOS, '["web", "api", "worker", "cache"]'))
    commit_all(repo, "registry: a cache repository")
    reviewed = tmp_path / "pr"
    assert invoke(repo, "plan", "--all", "--out", str(reviewed)).returncode == 0
    # main, after the merge, holds one more repository than the pull request showed
    git(repo, "checkout", "--quiet", "main")
    edit_file.write_text(
        edit_file.read_text().replace(REPOS, '["web", "api", "worker", "cache", "jobs"]')
    )
    commit_all(repo, "merge: registry with cache and jobs")
    merged = tmp_path / "merged"
    ran = invoke(repo, "plan", "--all", "--out", str(merged), "--reviewed", str(reviewed))
    assert ran.returncode == 0, ran.output

    code, units, output = _apply(repo, merged, "--reviewed", str(reviewed))

    assert code == 0, output
    assert units["live/cloud/iam"]["result"] == "applied"
    registry = units[REGISTRY]
    assert registry["cascaded"] is True and registry["result"] == "waiting-approval", registry
    assert registry["gate"] == "manual" and "differs from the reviewed plan" in registry["reason"]
    assert not (repo / ".iac/state" / REGISTRY / "terraform.tfstate").exists()
