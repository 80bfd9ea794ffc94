"""The reviewed plan follows the change to main (``plan``/``apply --reviewed PR_DIR``).

Real git, Terragrunt and OpenTofu on the sandbox catalog: the pull request's
plan is made at its head; ``main`` moves on; the merge is planned and applied
against the pull request's plan folder. A unit whose plan is not the reviewed
one waits as manual, the difference named; the same plan applies by its gate.
Both planners (one unit: one Terragrunt process per unit; several: one
``run --all``), and a project root in a git sub-folder.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from infra_fixtures import commit_all, edit, git, invoke, read_summary, units_by_path
from test_adopt_layouts import iac, subfolder_repo

from tooling.core.plan.gates import Gate
from tooling.core.plan.planjson import PlanSummary
from tooling.core.plan.results import Result
from tooling.core.plan.status import Status
from tooling.engine.plan.reviewed import ReviewedPlans

DNS = "live/cloud/dns"
IAM = "live/cloud/iam"
NETWORK = "live/cluster/network"
API_RECORD = 'value = "203.0.113.10"'
CLUSTER_RECORD = 'value = "203.0.113.20"'


def _plan(repo: Path, out: Path, *args: str) -> dict[str, dict[str, Any]]:
    ran = invoke(repo, "plan", "--out", str(out), *args)
    assert ran.returncode == 0, ran.output
    assert "Traceback" not in ran.output
    return units_by_path(read_summary(out))


def _apply(repo: Path, out: Path, *args: str) -> tuple[int, dict[str, dict[str, Any]], str]:
    ran = invoke(repo, "apply", "--plans", str(out), *args)
    assert "Traceback" not in ran.output, ran.output
    doc = json.loads((out / "apply.json").read_text())
    return ran.returncode, {u["path"]: u for u in doc["units"]}, ran.output


def _pull_request(repo: Path, change: tuple[str, str, str]) -> str:
    """Branch ``pr`` from main with ``change`` (file, old, new) committed; its head."""
    git(repo, "checkout", "--quiet", "-b", "pr")
    edit(repo, *change)
    head = commit_all(repo, "pull request")
    return head


def _merge(
    top: Path, main_change: tuple[str, str, str] | None, *, branch: str = "pr", sub: str = ""
) -> str:
    """``main`` gets ``main_change`` (a file of the project root ``top/sub``, none: main
    stays), then ``branch`` is merged, both changes kept (the lines are neighbours: the
    conflict is resolved with both). Returns main's commit before the merge."""
    git(top, "checkout", "--quiet", "main")
    if main_change is not None:
        edit(top / sub if sub else top, *main_change)
        commit_all(top, "main moves on")
    before = git(top, "rev-parse", "HEAD").strip()
    try:
        git(top, "merge", "--quiet", "--no-ff", "-m", "merge the pull request", branch)
    except subprocess.CalledProcessError:
        assert main_change is not None
        rel = f"{sub}/{main_change[0]}" if sub else main_change[0]
        git(top, "checkout", "--theirs", "--", rel)
        edit(top, rel, *main_change[1:])
        git(top, "add", rel)
        git(top, "commit", "--quiet", "--no-edit")
    return before


def _gate(unit: dict[str, Any]) -> tuple[str, str]:
    return unit["gate"]["decision"], "; ".join(unit["gate"]["reasons"])


def test_per_unit_planner_a_stale_reviewed_plan_waits_as_manual_and_the_same_plan_applies_by_its_gate(
    example_repo: Path, tmp_path: Path
) -> None:
    repo = example_repo
    _pull_request(repo, (f"{DNS}/terragrunt.hcl", API_RECORD, 'value = "203.0.113.11"'))
    reviewed = tmp_path / "pr"
    pr_units = _plan(repo, reviewed, "--unit", DNS)  # one unit: planned alone
    assert pr_units[DNS]["status"] == "changes" and _gate(pr_units[DNS])[0] == "auto"
    # main changes dns otherwise (another record) before the pull request merges
    _merge(repo, (f"{DNS}/terragrunt.hcl", CLUSTER_RECORD, 'value = "203.0.113.21"'))

    merged = tmp_path / "merged"
    units = _plan(repo, merged, "--unit", DNS, "--reviewed", str(reviewed))
    decision, reasons = _gate(units[DNS])
    assert decision == "manual"
    # named: the record whose values differ, never the values
    assert reasons == (
        'differs from the reviewed plan: terraform_data.record["cluster"]: other values of input'
    )
    assert "203.0.113.21" not in reasons
    assert "differs from the reviewed plan" in (merged / "comment.md").read_text()

    code, results, output = _apply(repo, merged, "--reviewed", str(reviewed))
    assert code == 0, output
    assert results[DNS]["result"] == "waiting-approval"
    assert "differs from the reviewed plan: " in results[DNS]["reason"]
    assert "differs from the reviewed plan" in (merged / "apply.md").read_text()

    # the pull request's plan, made again at the merge: the same plan, applied by its gate
    again = tmp_path / "pr-again"
    _plan(repo, again, "--unit", DNS)
    fresh = tmp_path / "fresh"
    units = _plan(repo, fresh, "--unit", DNS, "--reviewed", str(again))
    assert _gate(units[DNS]) == (
        "auto",
        "no delete, no replace, no node/VM change; the unit's gate class is auto",
    )
    code, results, output = _apply(repo, fresh, "--reviewed", str(again))
    assert code == 0, output
    assert results[DNS]["result"] == "applied", results[DNS]


def test_batch_planner_names_the_stale_unit_and_the_unplanned_one_and_applies_the_identical_one(
    example_repo: Path, tmp_path: Path
) -> None:
    repo = example_repo
    _pull_request(repo, (f"{DNS}/terragrunt.hcl", API_RECORD, 'value = "203.0.113.11"'))
    reviewed = tmp_path / "pr"
    _plan(repo, reviewed, "--unit", DNS, "--unit", IAM)  # two units: one `run --all`
    _merge(repo, (f"{DNS}/terragrunt.hcl", CLUSTER_RECORD, 'value = "203.0.113.21"'))

    merged = tmp_path / "merged"
    units = _plan(
        repo, merged, "--unit", DNS, "--unit", IAM, "--unit", NETWORK, "--reviewed", str(reviewed)
    )
    assert _gate(units[DNS]) == (
        "manual",
        'differs from the reviewed plan: terraform_data.record["cluster"]: other values of input',
    )
    assert _gate(units[IAM])[0] == "auto"  # the same plan as the pull request's
    assert _gate(units[NETWORK]) == (
        "manual",
        "differs from the reviewed plan: the pull request did not plan this unit",
    )

    code, results, output = _apply(repo, merged, "--reviewed", str(reviewed))
    assert code == 0, output
    assert results[IAM]["result"] == "applied"
    assert results[DNS]["result"] == "waiting-approval"
    assert results[NETWORK]["result"] == "waiting-approval"
    assert "the pull request did not plan this unit" in results[NETWORK]["reason"]


def test_a_sub_folder_project_root_compares_the_merge_with_the_reviewed_plan(
    tmp_path: Path, tools: None
) -> None:
    infra = subfolder_repo(tmp_path / "mono")  # on branch `change`, from main
    top = infra.parent
    edit(infra, f"{NETWORK}/terragrunt.hcl", "vlan_id = 40", "vlan_id = 41")
    commit_all(top, "network: another VLAN")
    reviewed = tmp_path / "pr"
    ran = iac(infra, "plan", "--base", "main", "--out", str(reviewed))
    assert ran.returncode == 0, ran.output

    before_merge = _merge(
        top,
        (f"{NETWORK}/terragrunt.hcl", 'bridge = "vmbr1"', 'bridge = "vmbr2"'),
        branch="change",
        sub="infra",
    )

    merged = tmp_path / "merged"
    ran = iac(
        infra, "plan", "--base", before_merge, "--out", str(merged), "--reviewed", str(reviewed)
    )
    assert ran.returncode == 0, ran.output
    units = units_by_path(read_summary(merged))
    decision, reasons = _gate(units[NETWORK])
    assert decision == "manual" and "differs from the reviewed plan: " in reasons
    assert "bridge" in reasons and "vmbr2" not in reasons

    ran = iac(infra, "apply", "--plans", str(merged), "--reviewed", str(reviewed))
    assert ran.returncode == 0, ran.output
    record = {u["path"]: u for u in json.loads((merged / "apply.json").read_text())["units"]}
    assert record[NETWORK]["result"] == "waiting-approval"
    assert "bridge" in record[NETWORK]["reason"]


# --------------------------------------------------------------------------- untrusted PR_DIR


def _summary_with(folder: Path, path: str, plan: bytes, sha: str) -> None:
    plan_file = folder / "units" / path / "plan.tfplan"
    plan_file.parent.mkdir(parents=True)
    plan_file.write_bytes(plan)
    unit = Result(
        path,
        "cloud",
        "hosted",
        "modified",
        Status.CHANGES,
        plan_file=f"units/{path}/plan.tfplan",
        plan_sha256=sha,
        gate=Gate("auto", ()),
    )
    doc: dict[str, Any] = {
        "version": 1,
        "base": None,
        "head": None,
        "executor": None,
        "tools": {},
        "units": [unit.to_json()],
    }
    (folder / "summary.json").write_text(json.dumps(doc))


EMPTY = PlanSummary(dict.fromkeys(("create", "update", "delete", "replace", "import", "move"), 0))


def test_a_reviewed_plan_whose_bytes_are_not_the_summarys_counts_as_different(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "pr" / "plan-hosted"  # a folder of legs' folders
    folder.mkdir(parents=True)
    _summary_with(folder, DNS, b"swapped", "0" * 64)
    reviewed = ReviewedPlans(tmp_path / "pr")
    (why,) = reviewed.differences(DNS, EMPTY, tmp_path, os.environ)
    assert why.startswith("its reviewed plan cannot be used: ") and "SHA-256" in why
    (missing,) = reviewed.differences(IAM, EMPTY, tmp_path, os.environ)
    assert missing == "the pull request did not plan this unit"


def test_a_reviewed_plan_reached_through_a_symlink_counts_as_different(tmp_path: Path) -> None:
    import hashlib

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "plan.tfplan").write_bytes(b"plan")
    folder = tmp_path / "pr"
    folder.mkdir()
    _summary_with(folder, DNS, b"plan", hashlib.sha256(b"plan").hexdigest())
    shutil.rmtree(folder / "units" / DNS)
    (folder / "units" / DNS).symlink_to(outside)
    (why,) = ReviewedPlans(folder).differences(DNS, EMPTY, tmp_path, os.environ)
    assert "is not a folder (a symlink, or missing)" in why


@pytest.mark.parametrize("name", ["summary.json"])
def test_a_reviewed_folder_with_a_broken_summary_names_it_for_every_unit(
    tmp_path: Path, name: str
) -> None:
    folder = tmp_path / "pr"
    folder.mkdir()
    (folder / name).write_text("{not json")
    (why,) = ReviewedPlans(folder).differences(DNS, EMPTY, tmp_path, os.environ)
    assert why.startswith("the pull request did not plan this unit (a plan folder was refused: ")
