"""Gruntwork's live example adopted end to end, as docs/adopt.md walks through it.

The example (``terragrunt-infrastructure-live-example`` in the real-world corpus
kept beside the repository; skipped when it is absent) is copied into a fresh
git repository and driven with ``iac`` (``python -m tooling``, the console
script's entry): ``doctor``'s suggested ``[layout]`` is pasted into policy.toml
as it is, then ``check`` passes, ``affected`` is right on five kinds of change,
and ``outdated`` lists the module its six units pin through
``_envcommon/*.hcl``'s ``base_source_url`` local. Offline: the module's GitHub
URL is served by a local bare repository with tags (``IAC_MODULE_REWRITE``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from infra_fixtures import GIT_ENV, REPO, Invoked, commit_all, git

pytestmark = pytest.mark.e2e

DNS_MODULE = "https://git.example.com/platform-modules/terraform-cloudflare-dns.git"
MODULES_URL = "git@github.com:gruntwork-io/terragrunt-infrastructure-modules-example.git"

ALL_UNITS = [
    "non-prod/us-east-1/qa/mysql",
    "non-prod/us-east-1/qa/webserver-cluster",
    "non-prod/us-east-1/stage/mysql",
    "non-prod/us-east-1/stage/webserver-cluster",
    "prod/us-east-1/prod/mysql",
    "prod/us-east-1/prod/webserver-cluster",
]

#: the five kinds of change docs/adopt.md names, and the units each must select
CHANGES = {
    # a unit's own file
    "non-prod/us-east-1/qa/webserver-cluster/terragrunt.hcl": [
        "non-prod/us-east-1/qa/webserver-cluster"
    ],
    # an environment's shared file (read by root.hcl through find_in_parent_folders)
    "non-prod/us-east-1/stage/env.hcl": [
        "non-prod/us-east-1/stage/mysql",
        "non-prod/us-east-1/stage/webserver-cluster",
    ],
    # the _envcommon file every mysql unit includes
    "_envcommon/mysql.hcl": [
        "non-prod/us-east-1/qa/mysql",
        "non-prod/us-east-1/stage/mysql",
        "prod/us-east-1/prod/mysql",
    ],
    # a file only one live root reads
    "prod/account.hcl": ["prod/us-east-1/prod/mysql", "prod/us-east-1/prod/webserver-cluster"],
    # the root file
    "root.hcl": ALL_UNITS,
}


def iac(cwd: Path, *args: str, env: dict[str, str] | None = None) -> Invoked:
    """``iac ARGS`` in ``cwd``: the console script's entry (``python -m tooling``)."""
    full = {**os.environ, **GIT_ENV, **(env or {})}
    full.pop("GITHUB_ACTIONS", None)
    ran = subprocess.run(
        [sys.executable, "-m", "tooling", *args],
        cwd=cwd,
        env=full,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    return Invoked(ran.returncode, ran.stdout, ran.stderr)


def module_repository(where: Path, tags: list[str]) -> Path:
    """A bare git repository standing in for Gruntwork's modules repository, with ``tags``."""
    work = where / "modules-work"
    for name in ("mysql", "webserver-cluster"):
        (work / "modules" / name).mkdir(parents=True)
        (work / "modules" / name / "main.tf").write_text('variable "name" {}\n')
    git(work, "init", "--quiet", "--initial-branch=main")
    commit_all(work, "modules")
    for tag in tags:
        git(work, "tag", tag)
    bare = where / "modules.git"
    git(where, "clone", "--quiet", "--bare", str(work), str(bare))
    return bare


@pytest.fixture
def gruntwork(tmp_path: Path) -> Path:
    from test_crosscheck import _corpus

    repo = tmp_path / "live example"
    shutil.copytree(
        _corpus("terragrunt-infrastructure-live-example"),
        repo,
        symlinks=True,
        ignore=shutil.ignore_patterns(".git"),
    )
    shutil.copy2(REPO / ".tool-versions", repo / ".tool-versions")
    git(repo, "init", "--quiet", "--initial-branch=main")
    commit_all(repo, "Gruntwork's live example")
    return repo


def _adopt(repo: Path) -> dict[str, object]:
    """Run doctor, paste its suggested [layout] into policy.toml as it is; doctor's JSON."""
    doctor = iac(repo, "doctor", "--json")
    assert doctor.returncode == 1, doctor.output  # no layout yet: the live folder is missing
    suggested = json.loads(doctor.stdout)["suggested_layout"]
    (repo / "policy.toml").write_text(suggested["toml"] + "\n")
    commit_all(repo, "adopt the tooling: doctor's layout")
    return dict(suggested)


def test_gruntworks_live_example_adopted_with_doctors_layout_passes_check_affected_and_outdated(
    gruntwork: Path, tmp_path: Path
) -> None:
    suggested = _adopt(gruntwork)
    # doctor detected each root's state prefix from root.hcl's remote_state key
    assert suggested["roots"] == {
        "non-prod": {"state_prefix": "non-prod/", "tier": "non-prod", "executor": "hosted"},
        "prod": {"state_prefix": "prod/", "tier": "prod", "executor": "hosted"},
    }
    doctor = iac(gruntwork, "doctor", "--json")
    assert doctor.returncode == 0, doctor.output
    assert json.loads(doctor.stdout)["units"] == 6

    check = iac(gruntwork, "check", "--json")
    assert check.returncode == 0, check.output
    assert json.loads(check.stdout)["violations"] == []

    for changed, expected in CHANGES.items():
        with (gruntwork / changed).open("a") as fh:
            fh.write("\n# changed\n")
        ran = iac(gruntwork, "affected", "--base", "HEAD", "--json")
        assert ran.returncode == 0, ran.output
        assert [u["path"] for u in json.loads(ran.stdout)["units"]] == expected, changed
        git(gruntwork, "checkout", "--quiet", "--", changed)

    bare = module_repository(tmp_path, ["v0.7.0", "v0.8.0", "v0.8.1", "v1.0.0"])
    env = {"IAC_MODULE_REWRITE": f"{MODULES_URL}={bare.as_uri()}"}
    outdated = iac(gruntwork, "outdated", "--json", env=env)
    assert outdated.returncode == 0, outdated.output
    (module,) = json.loads(outdated.stdout)["modules"]
    assert module["module"] == "terragrunt-infrastructure-modules-example"
    assert (module["current"], module["latest"], module["latest_major"]) == (
        "v0.8.0",
        "v0.8.1",
        "v1.0.0",
    )
    assert sorted(u["path"] for u in module["units"]) == ALL_UNITS
    # the ref is the unit's own `?ref=` after `${include.envcommon.locals.base_source_url}`
    assert {(u["file"], u["line"]) for u in module["units"]} == {
        (f"{unit}/terragrunt.hcl", 24) for unit in ALL_UNITS
    }
    assert not json.loads(outdated.stdout).get("skipped"), outdated.stdout


def test_units_under_a_live_root_take_its_tier(gruntwork: Path) -> None:
    _adopt(gruntwork)
    units = iac(gruntwork, "units", "--json")
    assert units.returncode == 0, units.output
    tiers = {u["path"]: u["tier"] for u in json.loads(units.stdout)["units"]}
    # without [layout.roots] tier they were the folder below the root: us-east-1
    assert tiers == {unit: unit.split("/", 1)[0] for unit in ALL_UNITS}

    edit_env = gruntwork / "non-prod/us-east-1/qa/env.hcl"
    edit_env.write_text(edit_env.read_text() + "\n# changed\n")
    commit_all(gruntwork, "qa: a change")
    affected = iac(gruntwork, "affected", "--base", "main~1", "--committed", "--json")
    assert affected.returncode == 0, affected.output
    assert {(u["path"], u["tier"]) for u in json.loads(affected.stdout)["units"]} == {
        ("non-prod/us-east-1/qa/mysql", "non-prod"),
        ("non-prod/us-east-1/qa/webserver-cluster", "non-prod"),
    }


def test_a_live_roots_tier_is_its_units_default_in_units_matrix_and_the_plan_summary(
    tmp_path: Path, tools: None
) -> None:
    from test_adopt_layouts import two_roots_repo

    root = two_roots_repo(tmp_path / "envs")
    # prod's tier.hcl names no tier: its units take the root's
    tier_file = root / "prod" / "tier.hcl"
    tier_file.write_text(tier_file.read_text().replace('  tier = "prod"\n', ""))
    policy = root / "policy.toml"
    policy.write_text(
        policy.read_text().replace(
            '[layout.roots."prod"]\n', '[layout.roots."prod"]\ntier = "production"\n'
        )
    )
    commit_all(root, "prod's units take the root's tier")

    units = iac(root, "units", "--json")
    assert units.returncode == 0, units.output
    tiers = {u["path"]: u["tier"] for u in json.loads(units.stdout)["units"]}
    assert tiers == {"non-prod/dns": "non-prod", "prod/dns": "production"}

    matrix = iac(root, "matrix", "--base", "main")
    assert matrix.returncode == 0, matrix.output
    assert [u for e in json.loads(matrix.stdout)["include"] for u in e["units"]] == ["prod/dns"]

    out = tmp_path / "plans"
    plan = iac(root, "plan", "--base", "main", "--out", str(out))
    assert plan.returncode == 0, plan.output
    summary = json.loads((out / "summary.json").read_text())
    assert [(u["path"], u["tier"]) for u in summary["units"]] == [("prod/dns", "production")]


def test_doctors_suggested_roots_paste_as_they_are_for_folders_named_with_quotes_and_dollars(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "envs"
    repo.mkdir()
    (repo / "root.hcl").write_text(
        'remote_state {\n  backend = "s3"\n  config = {\n    bucket = "b"\n'
        '    key    = "${path_relative_to_include()}/tf.tfstate"\n    region = "us-east-1"\n'
        "  }\n}\n"
    )
    envs = ["my env $(touch pwned)", 'pr"od']
    for env in envs:
        (repo / env / "app").mkdir(parents=True)
        (repo / env / "app" / "terragrunt.hcl").write_text(
            'include "root" {\n  path = find_in_parent_folders("root.hcl")\n}\n'
            f'terraform {{\n  source = "git::{DNS_MODULE}?ref=v1.1.0"\n}}\n'
        )
    shutil.copy2(REPO / ".tool-versions", repo / ".tool-versions")
    git(repo, "init", "--quiet", "--initial-branch=main")
    commit_all(repo, "two environments")

    suggested = _adopt(repo)
    assert suggested["roots"] == {
        env: {"state_prefix": f"{env}/", "tier": env, "executor": "hosted"} for env in envs
    }
    doctor = iac(repo, "doctor", "--json")
    assert doctor.returncode == 0, doctor.output
    check = iac(repo, "check", "--json")
    assert check.returncode == 0, check.output
    units = iac(repo, "units", "--json")
    assert {(u["path"], u["tier"]) for u in json.loads(units.stdout)["units"]} == {
        (f"{env}/app", env) for env in envs
    }
    assert not list(tmp_path.rglob("pwned"))


STACK_UNIT = """include "root" {
  path = find_in_parent_folders("root.hcl")
}

terraform {
  source = "git::https://git.example.com/platform-modules/terraform-cloudflare-dns.git?ref=${values.version}"
}

inputs = {
  zone_name = values.zone
  records   = {}
}
"""

STACK = """unit "public" {
  source = "../../catalog/units/zone"
  path   = "public"
  values = {
    version = "v1.1.0"
    zone    = "apps.example.net"
  }
}
"""


def test_a_stacks_generated_units_take_their_live_roots_tier(
    example_repo: Path, tools: None
) -> None:
    (example_repo / "catalog/units/zone").mkdir(parents=True)
    (example_repo / "catalog/units/zone/terragrunt.hcl").write_text(STACK_UNIT)
    (example_repo / "edge/apps").mkdir(parents=True)
    (example_repo / "edge/apps/terragrunt.stack.hcl").write_text(STACK)
    with (example_repo / "policy.toml").open("a") as fh:
        fh.write('\n[layout]\nlive = ["live"]\n\n[layout.roots."edge"]\ntier = "edge-tier"\n')
    commit_all(example_repo, "a stack under a live root of its own")

    units = iac(example_repo, "units", "--json")
    assert units.returncode == 0, units.output
    tiers = {u["path"]: u["tier"] for u in json.loads(units.stdout)["units"]}
    assert tiers["edge/apps/.terragrunt-stack/public"] == "edge-tier"
    assert tiers["live/cloud/dns"] == "cloud"
