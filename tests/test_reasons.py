"""Each failure names its real cause, not a symptom of it.

Real git, tofu and terragrunt on the example repository.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from infra_fixtures import commit_all, edit, git, invoke, read_summary, units_by_path

pytestmark = pytest.mark.e2e

DNS = "live/cloud/dns"
IAM = "live/cloud/iam"


def test_a_destroy_refused_by_prevent_destroy_says_so_when_planned_with_other_units(
    example_repo: Path, tmp_path: Path
) -> None:
    edit(
        example_repo, f"{DNS}/terragrunt.hcl", "inputs = {", "prevent_destroy = true\n\ninputs = {"
    )
    commit_all(example_repo, "protect dns")
    applied = tmp_path / "applied"
    assert invoke(example_repo, "plan", "--unit", DNS, "--out", str(applied)).returncode == 0
    assert invoke(example_repo, "apply", "--plans", str(applied)).returncode == 0
    git(example_repo, "checkout", "--quiet", "-b", "remove-dns")
    git(example_repo, "rm", "-r", "--quiet", DNS)
    edit(example_repo, f"{IAM}/terragrunt.hcl", 'github_org = "example-org"', 'github_org = "x"')
    commit_all(example_repo, "remove dns, change iam")
    # two units: one terragrunt process plans them (the destroy in the base revision)
    out = tmp_path / "plans"
    ran = invoke(example_repo, "plan", "--base", "main", "--out", str(out))
    assert ran.returncode == 1, ran.output
    units = units_by_path(read_summary(out))
    error = str(units[DNS]["error"])
    assert units[DNS]["status"] == "error"
    assert "prevent_destroy" in error and "exit code" not in error, error
    assert units[IAM]["status"] == "changes"


def test_applying_a_unit_whose_folder_was_deleted_names_the_missing_folder(
    example_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "plans"
    assert invoke(example_repo, "plan", "--unit", IAM, "--out", str(out)).returncode == 0
    shutil.rmtree(example_repo / IAM)
    ran = invoke(example_repo, "apply", "--plans", str(out), "--approve-manual")
    assert ran.returncode == 1, ran.output
    assert "program not found" not in ran.output
    assert f"{example_repo / IAM}: the folder terragrunt was to run in does not exist" in (
        ran.output
    ), ran.output
