"""Provider lock files and module bumps, end to end, offline.

Real parts only: a real provider (``hashicorp/time``, built from its Go module
once per machine) served from an OpenTofu filesystem mirror, a module
repository with tags where v2 needs that provider and v1 none, the example tree
in a throwaway git repository with a bare ``origin``, the pinned
tofu/terragrunt, and the real ``invoke`` CLI in a separate process.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pytest
from infra_fixtures import (
    PROVIDER_ADDRESS,
    PROVIDER_VERSION,
    ProviderMirror,
    commit_all,
    edit,
    git,
    invoke,
)

pytestmark = pytest.mark.e2e

URL = "https://git.example.com/platform-modules/terraform-clock.git"
UNIT = "live/cloud/clock"
LOCK = f"{UNIT}/.terraform.lock.hcl"
V1 = 'resource "terraform_data" "clock" {\n  input = "v1"\n}\n'


def _v2(version: str) -> str:
    """v2 of the module: it needs the time provider at ``version``."""
    return (
        'terraform {\n  required_providers {\n    time = {\n      source  = "hashicorp/time"\n'
        f'      version = "{version}"\n    }}\n  }}\n}}\n\n'
        'resource "time_static" "created" {}\n'
    )


def _module_repo(path: Path, releases: list[tuple[str, str]]) -> Path:
    """A module repository with one commit and one annotated tag per release."""
    path.mkdir(parents=True)
    git(path, "init", "--quiet", "--initial-branch=main")
    for tag, main_tf in releases:
        (path / "main.tf").write_text(main_tf, encoding="utf-8")
        commit_all(path, f"release {tag}")
        git(path, "tag", "-a", tag, "-m", f"release {tag}")
    return path


def _repo_with_clock_unit(example_repo: Path, modules: Path) -> dict[str, str]:
    """The example tree plus a unit pinning the clock module at v1; the environment to use."""
    unit = example_repo / UNIT
    unit.mkdir(parents=True)
    (unit / "terragrunt.hcl").write_text(
        'include "root" {\n  path = find_in_parent_folders("root.hcl")\n}\n\n'
        f'terraform {{\n  source = "git::{URL}?ref=v1.0.0"\n}}\n',
        encoding="utf-8",
    )
    commit_all(example_repo, "clock unit")
    git(example_repo, "push", "--quiet", "origin", "main")
    return {"IAC_MODULE_REWRITE": f"{URL}={modules}"}


def _h1(folder: Path) -> str:
    """OpenTofu's ``h1:`` checksum of an unpacked provider folder (Go's dirhash Hash1)."""
    summary = "".join(
        f"{hashlib.sha256(f.read_bytes()).hexdigest()}  {f.relative_to(folder).as_posix()}\n"
        for f in sorted(p for p in folder.rglob("*") if p.is_file())
    )
    return "h1:" + base64.b64encode(hashlib.sha256(summary.encode()).digest()).decode()


def test_a_bump_that_adds_a_provider_commits_the_lock_file_and_its_plan_installs_it_readonly(
    example_repo: Path, tmp_path: Path, provider_mirror: ProviderMirror
) -> None:
    modules = _module_repo(
        tmp_path / "terraform-clock.git", [("v1.0.0", V1), ("v2.0.0", _v2(PROVIDER_VERSION))]
    )
    env = {**_repo_with_clock_unit(example_repo, modules), **provider_mirror.env()}

    # v1 needs no provider: no lock file
    assert not (example_repo / LOCK).exists()
    bumped = invoke(example_repo, "bump-module", "terraform-clock", "v2.0.0", env=env)
    assert bumped.returncode == 0, bumped.output
    branch = "bump/terraform-clock-v2.0.0"
    assert git(example_repo, "symbolic-ref", "--short", "HEAD").strip() == branch
    assert git(example_repo, "status", "--porcelain") == ""

    # one commit: the ref line and the lock file, nothing else
    names = git(example_repo, "show", "--name-only", "--format=", "HEAD").split()
    assert sorted(names) == [LOCK, f"{UNIT}/terragrunt.hcl"]
    numstat = git(
        example_repo, "show", "--numstat", "--format=", "HEAD", "--", f"{UNIT}/terragrunt.hcl"
    )
    assert numstat.split()[:2] == ["1", "1"]
    assert (
        git(example_repo, "rev-parse", "HEAD^").strip()
        == git(example_repo, "rev-parse", "main").strip()
    )

    # the lock file records the provider, its version and the checksum of the very binary
    lock = git(example_repo, "show", f"HEAD:{LOCK}")
    assert f'provider "{PROVIDER_ADDRESS}"' in lock
    assert f'version     = "{PROVIDER_VERSION}"' in lock
    assert f'"{_h1(provider_mirror.binary.parent)}"' in lock

    # the commit and the pull request body say which lock file changed, and to what
    message = git(example_repo, "log", "-1", "--format=%B")
    assert f"{LOCK}: {PROVIDER_ADDRESS} {PROVIDER_VERSION} (added)" in message
    assert "### Provider lock files (linux_amd64)" in bumped.stdout
    assert f"| `{LOCK}` | `{PROVIDER_ADDRESS}` | {PROVIDER_VERSION} (added) | 1 |" in bumped.stdout

    # the bumped unit plans with `tofu init -lockfile=readonly`, and its lock file stays as committed
    out = tmp_path / "plans"
    planned = invoke(example_repo, "plan", "--unit", UNIT, "--out", str(out), env=env)
    assert planned.returncode == 0, planned.output
    unit = json.loads((out / "summary.json").read_text())["units"][0]
    assert unit["status"] == "changes", unit
    assert unit["counts"]["create"] == 1  # time_static.created
    assert (example_repo / LOCK).read_text() == lock
    assert git(example_repo, "status", "--porcelain") == ""


def test_a_hand_edited_ref_without_its_lock_file_fails_closed_naming_the_fix(
    example_repo: Path, tmp_path: Path, provider_mirror: ProviderMirror
) -> None:
    modules = _module_repo(
        tmp_path / "terraform-clock.git", [("v1.0.0", V1), ("v2.0.0", _v2(PROVIDER_VERSION))]
    )
    env = {**_repo_with_clock_unit(example_repo, modules), **provider_mirror.env()}
    edit(example_repo, f"{UNIT}/terragrunt.hcl", "ref=v1.0.0", "ref=v2.0.0")
    commit_all(example_repo, "bump by hand")

    out = tmp_path / "plans"
    planned = invoke(example_repo, "plan", "--unit", UNIT, "--out", str(out), env=env)
    assert planned.returncode == 1, planned.output
    assert "Traceback" not in planned.output
    error = json.loads((out / "summary.json").read_text())["units"][0]["error"]
    assert "Provider dependency changes detected" in error
    assert f"{LOCK} does not record the providers" in error
    assert (
        "--no-dependency-outputs -- providers lock -platform=linux_amd64` in live/cloud/clock"
        in error
    )
    # nothing written behind the reviewer's back
    assert not (example_repo / LOCK).exists()
    assert git(example_repo, "status", "--porcelain") == ""


def test_a_bump_whose_providers_cannot_be_locked_fails_and_commits_nothing(
    example_repo: Path, tmp_path: Path, provider_mirror: ProviderMirror
) -> None:
    # v2 asks for a provider version the mirror does not hold
    modules = _module_repo(
        tmp_path / "terraform-clock.git", [("v1.0.0", V1), ("v2.0.0", _v2("0.0.1"))]
    )
    env = {**_repo_with_clock_unit(example_repo, modules), **provider_mirror.env()}
    main_before = git(example_repo, "rev-parse", "main").strip()

    bumped = invoke(example_repo, "bump-module", "terraform-clock", "v2.0.0", env=env)
    assert bumped.returncode == 1, bumped.output
    assert "Traceback" not in bumped.output
    assert f"{LOCK}: cannot lock the providers of terraform-clock v2.0.0" in bumped.stderr
    assert "The bump is not committed" in bumped.stderr
    # back on main, nothing committed, no stray lock file
    assert git(example_repo, "symbolic-ref", "--short", "HEAD").strip() == "main"
    assert git(example_repo, "rev-parse", "main").strip() == main_before
    assert git(example_repo, "rev-parse", "bump/terraform-clock-v2.0.0").strip() == main_before
    assert not (example_repo / LOCK).exists()
    assert git(example_repo, "status", "--porcelain") == ""
