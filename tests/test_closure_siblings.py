"""Siblings of the class "code from a pull request runs on the plan runner before or
without the checks" (issue findings 1-4): other ways for a unit to make Terragrunt parse a
file no review of the repository sees, each refused before any Terragrunt process starts,
by ``check``, the per-unit planner, the batch planner and drift, with the real pinned
tools. Every planted file appends to a marker when Terragrunt parses it: the marker must
stay absent (what runs is checked, not a picture of it).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from infra_fixtures import (
    GIT_ENV,
    Invoked,
    commit_all,
    edit,
    invoke,
    read_summary,
    units_by_path,
)

pytestmark = pytest.mark.e2e

DNS = "live/cloud/dns"
DNS_FILE = f"{DNS}/terragrunt.hcl"
NETWORK = "live/cluster/network"

RUNS = {
    "per-unit plan": ("plan", "--unit", DNS),
    "batch plan": ("plan", "--all"),
    "drift": ("drift",),
}


def _calling(marker: Path) -> str:
    return f'locals {{\n  who = run_cmd("sh", "-c", "echo ran >> {marker}; echo x")\n}}\n'


def _include(path: str) -> str:
    return f'include "x" {{\n  path = {path}\n}}\n\nterraform {{'


def _refused(repo: Path, tmp_path: Path, args: tuple[str, ...], marker: Path, needle: str) -> None:
    out = tmp_path / "out"
    ran = invoke(repo, *args, "--out", str(out))
    assert ran.returncode == 1, ran.output
    assert needle in ran.stderr, ran.output
    assert "Traceback" not in ran.output
    assert not marker.exists(), "Terragrunt parsed the planted file: its command ran"
    assert not (out / "summary.json").exists() and not (out / "drift.json").exists()


def _checked(repo: Path) -> set[tuple[str, int, str]]:
    ran = invoke(repo, "check", "--json")
    assert ran.returncode == 1, ran.output
    return {(v["file"], v["line"], v["rule"]) for v in json.loads(ran.stdout)["violations"]}


def _still_plans(repo: Path, tmp_path: Path, unit: str) -> Invoked:
    out = tmp_path / "other"
    ran = invoke(repo, "plan", "--unit", unit, "--out", str(out))
    assert ran.returncode == 0, ran.output
    assert units_by_path(read_summary(out))[unit]["status"] == "changes"
    return ran


@pytest.mark.parametrize("args", list(RUNS.values()), ids=list(RUNS))
def test_an_include_of_an_absolute_path_outside_the_repository_is_refused(
    example_repo: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    marker = tmp_path / "ran.txt"
    (tmp_path / "outside.hcl").write_text(_calling(marker))
    edit(example_repo, DNS_FILE, "terraform {", _include(f'"{tmp_path}/outside.hcl"'))
    commit_all(example_repo, "an include of an absolute path")
    assert (DNS_FILE, 13, "read-outside") in _checked(example_repo)
    _refused(example_repo, tmp_path, args, marker, f"{DNS_FILE}:13: read-outside: ../outside.hcl")


@pytest.mark.parametrize("args", list(RUNS.values())[:2], ids=list(RUNS)[:2])
def test_an_include_climbing_above_get_repo_root_is_refused(
    example_repo: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    marker = tmp_path / "ran.txt"
    (tmp_path / "outside.hcl").write_text(_calling(marker))
    edit(example_repo, DNS_FILE, "terraform {", _include('"${get_repo_root()}/../outside.hcl"'))
    commit_all(example_repo, "an include above the repository")
    _refused(example_repo, tmp_path, args, marker, f"{DNS_FILE}:13: read-outside: ../outside.hcl")


@pytest.mark.parametrize("args", list(RUNS.values()), ids=list(RUNS))
def test_a_file_planted_above_the_repository_after_the_model_was_cached_is_refused(
    example_repo: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    """The model's cache is keyed by the repository's files; a file that appears above it
    (a reused machine, a job before this one) changes no key. Each name the evaluation
    looked for there is looked for again before the cache is trusted."""
    marker = tmp_path / "ran.txt"
    (example_repo / "live/cloud/extra.hcl").write_text("locals {}\n")
    edit(
        example_repo,
        DNS_FILE,
        "terraform {",
        _include('find_in_parent_folders("escape.hcl", "${get_repo_root()}/live/cloud/extra.hcl")'),
    )
    commit_all(example_repo, "an include with a fallback inside the repository")
    _still_plans(example_repo, tmp_path, DNS)  # the model is cached, nothing above
    assert list((example_repo / ".iac" / "cache").glob("model-*.marshal"))
    (tmp_path / "escape.hcl").write_text(_calling(marker))  # planted after
    _refused(example_repo, tmp_path, args, marker, f"{DNS_FILE}:13: read-outside: ../escape.hcl")


@pytest.mark.parametrize("args", list(RUNS.values()), ids=list(RUNS))
def test_find_in_parent_folders_finding_a_file_above_the_repository_is_refused(
    example_repo: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    """Terragrunt's ``find_in_parent_folders`` looks on above git's top level; the model
    stopped there ("finds nothing"), so the scan read nothing and Terragrunt ran the
    command of the file it found above the repository."""
    marker = tmp_path / "ran.txt"
    (tmp_path / "escape.hcl").write_text(_calling(marker))
    edit(
        example_repo,
        DNS_FILE,
        "terraform {",
        _include('find_in_parent_folders("escape.hcl")'),
    )
    commit_all(example_repo, "an include found above the repository")
    assert (DNS_FILE, 13, "read-outside") in _checked(example_repo)
    _refused(example_repo, tmp_path, args, marker, f"{DNS_FILE}:13: read-outside: ../escape.hcl")
    if args[0] == "drift":
        _still_plans(example_repo, tmp_path, NETWORK)
        assert not marker.exists()


def test_find_in_parent_folders_with_a_fallback_still_finds_the_file_above(
    example_repo: Path, tmp_path: Path
) -> None:
    """A fallback is taken only where Terragrunt finds nothing: it finds the file above."""
    marker = tmp_path / "ran.txt"
    (tmp_path / "escape.hcl").write_text(_calling(marker))
    edit(
        example_repo,
        DNS_FILE,
        "terraform {",
        _include('find_in_parent_folders("escape.hcl", "${get_repo_root()}/root.hcl")'),
    )
    commit_all(example_repo, "an include with a fallback, found above the repository")
    _refused(
        example_repo,
        tmp_path,
        ("plan", "--unit", DNS),
        marker,
        f"{DNS_FILE}:13: read-outside: ../escape.hcl",
    )


@pytest.mark.parametrize("args", list(RUNS.values()), ids=list(RUNS))
def test_a_dependencies_block_naming_a_folder_outside_is_refused(
    example_repo: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    marker = tmp_path / "ran.txt"
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "terragrunt.hcl").write_text(_calling(marker))
    edit(
        example_repo,
        DNS_FILE,
        "terraform {",
        f'dependencies {{\n  paths = ["{tmp_path}/outside"]\n}}\n\nterraform {{',
    )
    commit_all(example_repo, "a dependencies block outside")
    assert (DNS_FILE, 13, "dependency-outside") in _checked(example_repo)
    _refused(
        example_repo,
        tmp_path,
        args,
        marker,
        f"{DNS_FILE}:13: dependency-outside: the dependency ../outside is outside the live folders",
    )


@pytest.mark.parametrize("args", list(RUNS.values()), ids=list(RUNS))
def test_a_root_file_that_is_a_link_to_a_file_outside_is_refused(
    example_repo: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    marker = tmp_path / "ran.txt"
    root = example_repo / "root.hcl"
    outside = tmp_path / "root.hcl"
    outside.write_text(
        root.read_text().replace(
            "locals {",
            f'locals {{\n  who = run_cmd("sh", "-c", "echo ran >> {marker}; echo x")',
            1,
        )
    )
    root.unlink()
    os.symlink(outside, root)
    commit_all(example_repo, "root.hcl, linked from outside")
    assert ("root.hcl", 1, "read-outside") in _checked(example_repo)
    _refused(
        example_repo, tmp_path, args, marker, "root.hcl:1: read-outside: root.hcl is a symbolic"
    )


def test_a_file_read_outside_by_a_tier_file_refuses_its_units_and_the_other_tier_plans(
    example_repo: Path, tmp_path: Path
) -> None:
    """tier.hcl (included by every cloud unit) reads an absolute path outside: each cloud
    unit is refused, before Terragrunt; a cluster unit, whose closure does not reach it,
    still plans."""
    marker = tmp_path / "ran.txt"
    (tmp_path / "outside.hcl").write_text(_calling(marker))
    edit(
        example_repo,
        "live/cloud/tier.hcl",
        "locals {",
        f'locals {{\n  extra = read_terragrunt_config("{tmp_path}/outside.hcl")',
    )
    commit_all(example_repo, "a tier file reading a file outside")
    found = _checked(example_repo)
    for unit in (DNS, "live/cloud/iam", "live/cloud/registry"):
        assert (f"{unit}/terragrunt.hcl", 1, "read-outside") in found
    for args in (("plan", "--unit", DNS), ("plan", "--all"), ("drift",)):
        _refused(
            example_repo, tmp_path, args, marker, f"{DNS_FILE}:1: read-outside: ../outside.hcl"
        )
    _still_plans(example_repo, tmp_path, NETWORK)
    assert not marker.exists()


def test_a_stack_unit_from_a_local_git_repository_unpinned_is_neither_generated_nor_planned(
    example_repo: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "ran.txt"
    source = tmp_path / "units.git"
    (source / "zone").mkdir(parents=True)
    (source / "zone" / "terragrunt.hcl").write_text(_calling(marker))
    env = {**os.environ, **GIT_ENV}
    for cmd in (["init", "-q"], ["add", "."], ["commit", "-qm", "a unit"]):
        subprocess.run(["git", "-C", str(source), *cmd], check=True, env=env)
    stack = "live/cloud/apps/terragrunt.stack.hcl"
    (example_repo / "live/cloud/apps").mkdir()
    (example_repo / stack).write_text(
        f'unit "w" {{\n  source = "git::file://{source}//zone"\n  path   = "w"\n}}\n'
    )
    commit_all(example_repo, "a stack unit from a local repository")
    assert (stack, 1, "stack-source") in _checked(example_repo)
    listed = invoke(example_repo, "units", "--json")
    unit = next(
        u
        for u in json.loads(listed.stdout)["units"]
        if u["path"] == "live/cloud/apps/.terragrunt-stack/w"
    )
    assert "not generated" in unit["error"] and "is not pinned by tag" in unit["error"]
    for args in (("plan", "--all"), ("drift",)):
        _refused(example_repo, tmp_path, args, marker, f"{stack}:1: stack-source:")


def test_a_unit_folder_that_is_a_link_to_a_folder_outside_is_never_parsed(
    example_repo: Path, tmp_path: Path
) -> None:
    """live/cloud/evil links to a unit outside the repository: no task takes it for a
    unit, Terragrunt's discovery does not parse it, and the others plan."""
    marker = tmp_path / "ran.txt"
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "terragrunt.hcl").write_text(
        _calling(marker) + (example_repo / DNS_FILE).read_text()
    )
    os.symlink(tmp_path / "outside", example_repo / "live/cloud/evil")
    commit_all(example_repo, "a unit folder linked from outside")
    out = tmp_path / "out"
    ran = invoke(example_repo, "plan", "--all", "--out", str(out))
    assert ran.returncode == 0, ran.output
    units = units_by_path(read_summary(out))
    assert "live/cloud/evil" not in units
    assert {u["status"] for u in units.values()} == {"changes"} and len(units) == 7
    drift = invoke(example_repo, "drift", "--out", str(tmp_path / "drift"))
    assert "live/cloud/evil" not in drift.output
    assert not marker.exists(), "Terragrunt parsed the linked unit"
