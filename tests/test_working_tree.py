"""One rule for the working tree: `invoke affected` and `invoke plan` both include
its uncommitted changes (plans read the working tree), and say so; `affected
--committed` compares commits only and says what it left out.

Real git, tofu and terragrunt on the example repository.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from infra_fixtures import edit, invoke, read_summary, units_by_path

pytestmark = pytest.mark.e2e

DNS = "live/cloud/dns"


def _uncommitted_ttl_edit(repo: Path) -> None:
    edit(repo, f"{DNS}/terragrunt.hcl", "ttl = 60", "ttl = 120")


def test_affected_and_plan_select_the_same_units_for_an_uncommitted_edit(
    example_repo: Path, tmp_path: Path
) -> None:
    _uncommitted_ttl_edit(example_repo)
    listed = invoke(example_repo, "affected", "--base", "main", "--json")
    assert listed.returncode == 0, listed.output
    doc = json.loads(listed.stdout)
    assert [u["path"] for u in doc["units"]] == [DNS]
    assert doc["uncommitted"] is True

    human = invoke(example_repo, "affected", "--base", "main")
    assert human.stdout.splitlines()[0].endswith("+ uncommitted changes"), human.stdout

    out = tmp_path / "plans"
    planned = invoke(example_repo, "plan", "--base", "main", "--out", str(out))
    assert planned.returncode == 0, planned.output
    assert list(units_by_path(read_summary(out))) == [DNS]
    header = (out / "comment.md").read_text()
    assert "including 1 uncommitted change(s) of the working tree (not in any commit)." in header


def test_affected_committed_leaves_uncommitted_changes_out_and_says_how_many(
    example_repo: Path,
) -> None:
    _uncommitted_ttl_edit(example_repo)
    (example_repo / "live/cloud/dns/new.auto.tfvars").write_text("x = 1\n")
    ran = invoke(example_repo, "affected", "--base", "main", "--committed")
    assert ran.returncode == 0, ran.output
    first, *rest = ran.stdout.splitlines()
    assert "2 uncommitted change(s) of the working tree not included" in first, first
    assert rest == ["no unit is affected"]
    as_json = invoke(example_repo, "affected", "--base", "main", "--committed", "--json")
    assert json.loads(as_json.stdout)["units"] == []
    assert "note: 2 uncommitted change(s) of the working tree not included" in as_json.stderr


def test_a_plan_of_a_clean_tree_says_nothing_about_uncommitted_changes(
    example_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "plans"
    ran = invoke(example_repo, "plan", "--unit", DNS, "--out", str(out))
    assert ran.returncode == 0, ran.output
    assert "uncommitted" not in (out / "comment.md").read_text()
    listed = invoke(example_repo, "affected", "--base", "main", "--committed")
    assert "not included" not in listed.stdout


def test_committed_and_uncommitted_together_are_bad_usage(example_repo: Path) -> None:
    ran = invoke(example_repo, "affected", "--committed", "--uncommitted")
    assert ran.returncode == 2, ran.output
    assert "--committed and --uncommitted exclude each other" in ran.stderr
