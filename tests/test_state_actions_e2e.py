"""Everything OpenTofu will do counts: forget, import and move, end to end.

A module repository built with real git, whose tags add ``removed`` (with
``destroy = false``), ``import`` and ``moved`` blocks; units of the example
tree pinning it; the real ``invoke bump-module`` (GitHub's API is the local
test server), ``invoke plan`` (one unit: the per-unit planner; two: the batch
planner), ``invoke apply`` and ``invoke drift`` with the pinned OpenTofu and
Terragrunt on local state.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from infra_fixtures import commit_all, git, invoke, read_summary, units_by_path

pytestmark = pytest.mark.e2e

URL = "https://git.example.com/platform-modules/terraform-records.git"
UNITS = ("live/cloud/records-a", "live/cloud/records-b")
RECORDS = ('terraform_data.record["api"]', 'terraform_data.record["www"]')

V1 = (
    'resource "terraform_data" "record" {\n'
    '  for_each = toset(["api", "www"])\n'
    "  input    = each.key\n"
    "}\n\n"
    'resource "terraform_data" "zone" {\n'
    '  input = "example.org"\n'
    "}\n"
)
#: the records leave the module, and OpenTofu's state, but keep existing
V1_1 = (
    "removed {\n"
    "  from = terraform_data.record\n\n"
    "  lifecycle {\n"
    "    destroy = false\n"
    "  }\n"
    "}\n\n"
    'resource "terraform_data" "zone" {\n'
    '  input = "example.org"\n'
    "}\n"
)


def module_repo(path: Path, releases: list[tuple[str, str]]) -> Path:
    """A module repository with one commit and one annotated tag per release."""
    path.mkdir(parents=True)
    git(path, "init", "--quiet", "--initial-branch=main")
    for tag, main_tf in releases:
        (path / "main.tf").write_text(main_tf, encoding="utf-8")
        commit_all(path, f"release {tag}")
        git(path, "tag", "-a", tag, "-m", f"release {tag}")
    return path


def add_units(repo: Path, units: tuple[str, ...], ref: str) -> None:
    """Units of ``repo`` pinning the records module at ``ref``, committed and pushed."""
    for unit in units:
        (repo / unit).mkdir(parents=True)
        (repo / unit / "terragrunt.hcl").write_text(
            'include "root" {\n  path = find_in_parent_folders("root.hcl")\n}\n\n'
            f'terraform {{\n  source = "git::{URL}?ref={ref}"\n}}\n',
            encoding="utf-8",
        )
    commit_all(repo, "units pinning the records module")
    git(repo, "push", "--quiet", "origin", "main")


def state_addresses(repo: Path, unit: str) -> set[str]:
    """The resource instances the unit's local state holds, by address."""
    state = json.loads((repo / ".iac/state" / unit / "terraform.tfstate").read_text())
    out = set()
    for resource in state["resources"]:
        for instance in resource["instances"]:
            key = instance.get("index_key")
            suffix = "" if key is None else f"[{json.dumps(key)}]"
            out.add(f"{resource['type']}.{resource['name']}{suffix}")
    return out


def plan(repo: Path, out: Path, *args: str, env: dict[str, str]) -> dict[str, Any]:
    ran = invoke(repo, "plan", "--out", str(out), *args, env=env)
    assert ran.returncode == 0, ran.output
    return read_summary(out)


def applied(repo: Path, plans: Path, *args: str, env: dict[str, str]) -> dict[str, str]:
    """``invoke apply --plans PLANS ARGS``: each unit's result."""
    ran = invoke(repo, "apply", "--plans", str(plans), *args, env=env)
    assert ran.returncode == 0, ran.output
    record = json.loads((plans / "apply.json").read_text())
    return {u["path"]: u["result"] for u in record["units"]}


@pytest.fixture
def records_repo(
    example_repo: Path, tmp_path: Path, github_api: Any
) -> tuple[Path, dict[str, str]]:
    """The example tree with two units pinning the records module at v1.0.0, applied;
    the environment that maps the module's URL to its local repository."""
    modules = module_repo(tmp_path / "terraform-records.git", [("v1.0.0", V1), ("v1.1.0", V1_1)])
    env = {**github_api.env(), "IAC_MODULE_REWRITE": f"{URL}={modules}"}
    add_units(example_repo, UNITS, "v1.0.0")
    first = tmp_path / "first"
    plan(example_repo, first, *(a for u in UNITS for a in ("--unit", u)), env=env)
    assert applied(example_repo, first, env=env) == dict.fromkeys(UNITS, "applied")
    for unit in UNITS:
        assert set(RECORDS) <= state_addresses(example_repo, unit)
    return example_repo, env


def test_a_bump_whose_tag_forgets_resources_is_counted_warned_manual_and_applied_only_approved(
    records_repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    repo, env = records_repo
    bumped = invoke(repo, "bump-module", "terraform-records", "v1.1.0", env=env)
    assert bumped.returncode == 0, bumped.output
    # the pull request's branch, as the plan job checks it out
    git(repo, "checkout", "--quiet", "bump/terraform-records-v1.1.0")
    assert "?ref=v1.1.0" in (repo / UNITS[0] / "terragrunt.hcl").read_text()

    # the batch planner (the bump's two units) and the per-unit planner (one of them)
    batch = tmp_path / "batch"
    single = tmp_path / "single"
    summaries = {
        "batch": plan(repo, batch, "--base", "main", env=env),
        "single": plan(repo, single, "--unit", UNITS[0], env=env),
    }
    assert sorted(units_by_path(summaries["batch"])) == sorted(UNITS)
    for name, summary in summaries.items():
        for path, unit in units_by_path(summary).items():
            assert unit["status"] == "changes", (name, path, unit)
            assert unit["counts"]["forget"] == 2, (name, path)
            assert {k: v for k, v in unit["counts"].items() if k != "forget"} == dict.fromkeys(
                ("create", "update", "delete", "replace", "import", "move"), 0
            )
            assert sorted((c["address"], c["action"]) for c in unit["changes"]) == [
                (a, "forget") for a in RECORDS
            ]
            assert unit["gate"]["decision"] == "manual", (name, path)
            assert any("forgets 2 resources" in r for r in unit["gate"]["reasons"]), unit["gate"]

    # the reviewer's page: not "no resource changes"; the totals say it; the warning
    # block names every forgotten address, unit by unit
    for folder, units in ((batch, UNITS), (single, UNITS[:1])):
        comment = (folder / "comment.md").read_text()
        first = comment.splitlines()[1]
        assert "no resource changes" not in first and first.startswith("⚠️"), first
        assert f"{2 * len(units)} to forget" in first, first
        warning = comment[comment.index("> [!WARNING]") : comment.index("| unit |")]
        for unit in units:
            line = next(x for x in warning.splitlines() if f"`{unit}`" in x)
            assert "forget" in line and all(f"`{a}`" in line for a in RECORDS), line
        assert "left in place, no longer managed" in warning

    # apply: nothing forgotten without approval; with it, OpenTofu forgets them
    assert applied(repo, batch, env=env) == dict.fromkeys(UNITS, "waiting-approval")
    for unit in UNITS:
        assert set(RECORDS) <= state_addresses(repo, unit)
    assert applied(repo, batch, "--approve-manual", env=env) == dict.fromkeys(UNITS, "applied")
    for unit in UNITS:
        assert state_addresses(repo, unit) == {"terraform_data.zone"}


def test_drift_reports_a_forget_the_default_branch_has_not_applied(
    records_repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    repo, env = records_repo
    # the bump merged without being applied: the scheduled drift check sees the forget
    for unit in UNITS:
        path = repo / unit / "terragrunt.hcl"
        path.write_text(path.read_text().replace("?ref=v1.0.0", "?ref=v1.1.0"))
    commit_all(repo, "bump the records module to v1.1.0")
    out = tmp_path / "drift"
    ran = invoke(repo, "drift", "--out", str(out), env=env)
    assert ran.returncode == 0, ran.output
    doc = json.loads((out / "drift.json").read_text())
    units = {u["path"]: u for u in doc["units"]}
    assert set(UNITS) <= set(doc["drifted"])
    for unit in UNITS:
        assert units[unit]["status"] == "drifted"
        assert units[unit]["counts"]["forget"] == 2
        assert sorted(units[unit]["changes"], key=lambda c: c["address"]) == [
            {"address": a, "action": "forget"} for a in RECORDS
        ]
    md = (out / "drift.md").read_text()
    row = next(line for line in md.splitlines() if f"`{UNITS[0]}`" in line)
    assert "2 to forget" in row, row
