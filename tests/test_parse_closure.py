"""Before any Terragrunt process starts, the rules read every file Terragrunt will parse
for the units in play, and refuse what lies outside the repository, with the real
pinned tools (check, the per-unit and batch planners, drift, adopt).

The finding behind these tests: ``dependency "o" { config_path = "/tmp/outside" }``
(or ``"${get_repo_root()}/docs/evil"``) whose ``terragrunt.hcl`` calls ``run_cmd``: the
command ran three times per ``invoke plan``, and ``check`` reported only
``dependency-missing``. The scan read the planned units' own files and what they read,
not the configuration of their dependencies, which Terragrunt parses too.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from infra_fixtures import Invoked, commit_all, edit, invoke, read_summary, units_by_path

pytestmark = pytest.mark.e2e

DNS = "live/cloud/dns"
DNS_FILE = f"{DNS}/terragrunt.hcl"
REGISTRY_FILE = "live/cloud/registry/terragrunt.hcl"
IAM_FILE = "live/cloud/iam/terragrunt.hcl"
INPUTS = "inputs = {"


def _calling(marker: Path, extra: str = "") -> str:
    """A configuration that runs a command (appending to ``marker``) when parsed."""
    return f'locals {{\n  who = run_cmd("sh", "-c", "echo ran >> {marker}; echo x")\n}}\n{extra}'


def _outside_unit(tmp_path: Path, marker: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "terragrunt.hcl").write_text(_calling(marker))
    return folder


def _dependency(name: str, config_path: str) -> str:
    return (
        f'dependency "{name}" {{\n  config_path = "{config_path}"\n'
        '  mock_outputs = { v = "x" }\n'
        '  mock_outputs_allowed_terraform_commands = ["validate", "plan"]\n}\n\n'
    )


@pytest.fixture
def repo(example_repo: Path) -> Path:
    return example_repo


RUNS = {
    "per-unit plan": ("plan", "--unit", DNS, "--out"),
    "batch plan": ("plan", "--all", "--out"),
    "drift": ("drift", "--out"),
    "adopt": ("adopt", DNS, "terraform_data.x", "some-id"),
}


def _run(repo: Path, tmp_path: Path, args: tuple[str, ...]) -> Invoked:
    out = [str(tmp_path / "out")] if args[-1] == "--out" else []
    return invoke(repo, *args, *out)


def _refused(ran: Invoked, tmp_path: Path, marker: Path, *needles: str) -> None:
    assert ran.returncode == 1, ran.output
    for needle in needles:
        assert needle in ran.stderr, ran.output
    assert not marker.exists(), "Terragrunt parsed the file: its command ran"
    assert not (tmp_path / "out" / "summary.json").exists()


# --------------------------------------------------------------------------- finding 1


@pytest.mark.parametrize("args", list(RUNS.values()), ids=list(RUNS))
def test_a_dependency_outside_the_repository_is_refused_before_terragrunt_parses_it(
    repo: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    marker = tmp_path / "ran.txt"
    outside = _outside_unit(tmp_path, marker)
    edit(repo, DNS_FILE, INPUTS, _dependency("o", str(outside)) + INPUTS)
    commit_all(repo, "a dependency outside the repository")
    ran = _run(repo, tmp_path, args)
    _refused(ran, tmp_path, marker, f"{DNS_FILE}:16: dependency-outside: the dependency ")


@pytest.mark.parametrize("args", list(RUNS.values())[:3], ids=list(RUNS)[:3])
def test_a_dependency_in_the_repository_but_outside_the_live_folders_is_refused(
    repo: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    marker = tmp_path / "ran.txt"
    (repo / "docs" / "evil").mkdir(parents=True)
    (repo / "docs" / "evil" / "terragrunt.hcl").write_text(_calling(marker))
    edit(repo, DNS_FILE, INPUTS, _dependency("o", "${get_repo_root()}/docs/evil") + INPUTS)
    commit_all(repo, "a dependency in docs/")
    ran = _run(repo, tmp_path, args)
    # both: the dependency is no unit, and its file (in the closure) runs a command
    _refused(
        ran,
        tmp_path,
        marker,
        f"{DNS_FILE}:16: dependency-outside: the dependency docs/evil is outside the live folders",
    )


def test_check_names_a_dependency_outside_the_live_folders(repo: Path, tmp_path: Path) -> None:
    outside = _outside_unit(tmp_path, tmp_path / "ran.txt")
    edit(repo, DNS_FILE, INPUTS, _dependency("o", str(outside)) + INPUTS)
    edit(repo, IAM_FILE, INPUTS, _dependency("d", "${get_repo_root()}/docs/evil") + INPUTS)
    ran = invoke(repo, "check", "--json")
    assert ran.returncode == 1, ran.output
    found = {(v["file"], v["line"], v["rule"]) for v in json.loads(ran.stdout)["violations"]}
    assert (DNS_FILE, 16, "dependency-outside") in found
    assert (IAM_FILE, 15, "dependency-outside") in found
    assert not (tmp_path / "ran.txt").exists()


# --------------------------------------------------------------------------- siblings


def test_read_terragrunt_config_of_a_file_outside_the_repository_is_refused(
    repo: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "ran.txt"
    outside = tmp_path / "shared.hcl"
    outside.write_text(_calling(marker))
    edit(
        repo,
        DNS_FILE,
        INPUTS,
        f'locals {{\n  s = read_terragrunt_config("{outside}")\n}}\n\n{INPUTS}',
    )
    commit_all(repo, "a configuration read outside the repository")
    checked = invoke(repo, "check")
    assert checked.returncode == 1 and f"{DNS_FILE}:17: read-outside:" in checked.output
    for args in (("plan", "--unit", DNS, "--out"), ("plan", "--all", "--out")):
        ran = _run(repo, tmp_path, args)
        _refused(ran, tmp_path, marker, f"{DNS_FILE}:17: read-outside: ", "outside the repository")


def test_a_dependency_chain_whose_second_hop_leaves_is_refused_for_the_first(
    repo: Path, tmp_path: Path
) -> None:
    """registry is planned alone; it depends on iam, which depends on a folder outside:
    Terragrunt parses iam for registry, and iam's dependency for iam."""
    marker = tmp_path / "ran.txt"
    outside = _outside_unit(tmp_path, marker)
    edit(repo, IAM_FILE, INPUTS, _dependency("o", str(outside)) + INPUTS)
    commit_all(repo, "iam depends on a folder outside")
    for args in (
        ("plan", "--unit", "live/cloud/registry", "--out"),
        ("plan", "--unit", "live/cloud/registry", "--unit", DNS, "--out"),
    ):
        ran = _run(repo, tmp_path, args)
        _refused(ran, tmp_path, marker, f"{IAM_FILE}:15: dependency-outside:", "for live/cloud/iam")


def test_a_command_in_a_dependency_two_hops_away_is_refused(repo: Path, tmp_path: Path) -> None:
    """gitops reads dns; a command in dns (not planned) runs when Terragrunt parses it for
    gitops: the scan reads dns too."""
    marker = tmp_path / "ran.txt"
    edit(
        repo,
        DNS_FILE,
        '  zone_name = "example.net"',
        f'  zone_name = run_cmd("sh", "-c", "echo ran >> {marker}; echo example.net")',
    )
    commit_all(repo, "a command in a dependency")
    for args in (
        ("plan", "--unit", "live/cluster/gitops", "--out"),
        ("plan", "--unit", "live/cluster/gitops", "--unit", "live/cluster/network", "--out"),
    ):
        ran = _run(repo, tmp_path, args)
        _refused(ran, tmp_path, marker, f"{DNS_FILE}:17: run-at-parse: run_cmd()")


def test_an_included_file_outside_the_live_folders_is_read_for_commands(
    repo: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "ran.txt"
    (repo / "docs").mkdir()
    (repo / "docs" / "evil.hcl").write_text(_calling(marker))
    edit(
        repo,
        DNS_FILE,
        "terraform {",
        'include "extra" {\n  path = "${get_repo_root()}/docs/evil.hcl"\n}\n\nterraform {',
    )
    commit_all(repo, "an include in docs/")
    for args in (("plan", "--unit", DNS, "--out"), ("plan", "--all", "--out")):
        ran = _run(repo, tmp_path, args)
        _refused(ran, tmp_path, marker, "docs/evil.hcl:2: run-at-parse: run_cmd()")


def test_a_symbolic_link_leaving_the_repository_is_refused(repo: Path, tmp_path: Path) -> None:
    """The cloud tier file, a link to a file outside: the model reads through it, and so
    would Terragrunt; what it holds is in no review."""
    outside = tmp_path / "tier.hcl"
    outside.write_text((repo / "live/cloud/tier.hcl").read_text())
    (repo / "live/cloud/tier.hcl").unlink()
    os.symlink(outside, repo / "live/cloud/tier.hcl")
    commit_all(repo, "the tier file, linked from outside")
    checked = invoke(repo, "check")
    assert checked.returncode == 1
    assert "live/cloud/tier.hcl:1: read-outside: live/cloud/tier.hcl is a symbolic link to" in (
        checked.output
    )
    ran = _run(repo, tmp_path, ("plan", "--unit", DNS, "--out"))
    _refused(ran, tmp_path, tmp_path / "ran.txt", "live/cloud/tier.hcl:1: read-outside:")


def _not_parsed(ran: Invoked, tmp_path: Path, marker: Path, planned: tuple[str, ...]) -> None:
    assert ran.returncode == 0, ran.output
    assert not marker.exists(), "Terragrunt parsed a unit nobody planned: its command ran"
    statuses = {p: u["status"] for p, u in units_by_path(read_summary(tmp_path / "out")).items()}
    assert set(statuses) == set(planned) and "error" not in statuses.values(), statuses


def test_a_unit_beside_the_planned_ones_is_parsed_by_no_terragrunt_process(
    repo: Path, tmp_path: Path
) -> None:
    """dns and iam are planned (one batch ``run --all``, one path filter per unit); the
    verifier judges their static forms without Terragrunt, so no ``render --all`` from
    live/cloud parses registry: its command never runs and the plan goes on."""
    marker = tmp_path / "ran.txt"
    edit(
        repo,
        REGISTRY_FILE,
        '  repositories  = ["web", "api", "worker"]',
        f'  repositories  = [run_cmd("sh", "-c", "echo ran >> {marker}; echo web")]',
    )
    commit_all(repo, "a command in a unit not planned")
    planned = (DNS, "live/cloud/iam")
    ran = _run(repo, tmp_path, ("plan", "--unit", planned[0], "--unit", planned[1], "--out"))
    _not_parsed(ran, tmp_path, marker, planned)


def test_a_configuration_below_the_live_folders_that_is_no_unit_is_parsed_by_no_process(
    repo: Path, tmp_path: Path
) -> None:
    """Two live folders (live/cloud, live/cluster) and live/attic/old, which is no unit,
    below their common folder: a plan of one unit of each starts Terragrunt from no
    folder whose discovery would parse it."""
    marker = tmp_path / "ran.txt"
    edit(
        repo,
        "policy.toml",
        "[check]\n",
        '[layout]\nlive = ["live/cloud", "live/cluster"]\n\n[check]\n',
    )
    (repo / "live/attic/old").mkdir(parents=True)
    (repo / "live/attic/old/terragrunt.hcl").write_text(_calling(marker))
    commit_all(repo, "an old configuration left below live/")
    planned = (DNS, "live/cluster/network")
    ran = _run(repo, tmp_path, ("plan", "--unit", planned[0], "--unit", planned[1], "--out"))
    _not_parsed(ran, tmp_path, marker, planned)


def test_a_dependency_in_the_live_folders_still_plans(repo: Path, tmp_path: Path) -> None:
    """The example's own dependencies (registry reads iam, gitops reads dns and os) are
    in the closure and clean: the plan goes on."""
    out = tmp_path / "out"
    ran = invoke(
        repo,
        "plan",
        "--unit",
        "live/cluster/gitops",
        "--unit",
        "live/cloud/registry",
        "--out",
        str(out),
    )
    assert ran.returncode == 0, ran.output
    statuses = {p: u["status"] for p, u in units_by_path(read_summary(out)).items()}
    assert statuses == {"live/cluster/gitops": "changes", "live/cloud/registry": "changes"}


def test_a_command_in_a_json_configuration_read_by_a_unit_is_refused(
    repo: Path, tmp_path: Path
) -> None:
    """``read_terragrunt_config`` parses a ``*.hcl.json`` too, and evaluates every string
    holding ``${`` as a template: ``"${run_cmd(...)}"`` runs there."""
    marker = tmp_path / "ran.txt"
    (repo / DNS / "cfg.hcl.json").write_text(
        json.dumps({"locals": {"x": f'${{run_cmd("sh", "-c", "echo ran >> {marker}")}}'}})
    )
    edit(
        repo,
        DNS_FILE,
        INPUTS,
        f'locals {{\n  cfg = read_terragrunt_config("cfg.hcl.json")\n}}\n\n{INPUTS}',
    )
    commit_all(repo, "a JSON configuration that runs a command")
    checked = invoke(repo, "check")
    assert f"{DNS}/cfg.hcl.json:1: run-at-parse: run_cmd()" in checked.output
    for args in (("plan", "--unit", DNS, "--out"), ("plan", "--all", "--out")):
        ran = _run(repo, tmp_path, args)
        _refused(ran, tmp_path, marker, f"{DNS}/cfg.hcl.json:1: run-at-parse: run_cmd()")
