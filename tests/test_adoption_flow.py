"""Adopting a repository, end to end, as a user would: ``iac doctor`` at git's top level,
its block pasted, ``iac check`` silent, every unit planned and applied (the manual ones
approved), a unit moved with its state, a unit deleted and destroyed, a module bumped.

Real parts only: a git repository laid out as adopted ones are (a project root
``infra/live`` with a root ``terragrunt.hcl``, ``dev/`` and ``prod/``, a local backend
whose path is the repository's, ``.tool-versions`` at git's top level), its units on a
tagged module repository reached through ``git::file://``; each ``iac`` command in a
separate process, real git, Terragrunt and OpenTofu (``terraform_data``: no provider).
"""

from __future__ import annotations

import json
import shutil
import textwrap
import tomllib
from pathlib import Path
from typing import Any

import pytest
from infra_fixtures import REPO, commit_all, git
from test_adopt_layouts import iac

pytestmark = pytest.mark.e2e

MODULE = "terraform-app"

#: the module at each tag: an input, one resource, an output (v1.1.0 adds an output)
MODULE_V1_0 = textwrap.dedent(
    """\
    variable "name" {
      type = string
    }

    resource "terraform_data" "this" {
      input = var.name
    }

    output "name" {
      value = terraform_data.this.output
    }
    """
)
MODULE_V1_1 = MODULE_V1_0 + textwrap.dedent(
    """\

    output "id" {
      value = terraform_data.this.id
    }
    """
)

#: a local backend whose path is the repository's: state/<unit>/terraform.tfstate at git's top
ROOT_TERRAGRUNT = textwrap.dedent(
    """\
    remote_state {
      backend = "local"
      generate = {
        path      = "backend.tf"
        if_exists = "overwrite_terragrunt"
      }
      config = {
        path = "${get_repo_root()}/state/${path_relative_to_include()}/terraform.tfstate"
      }
    }
    """
)


def module_repo(path: Path) -> Path:
    """The module's git repository: v1.0.0, then v1.1.0 with different content."""
    path.mkdir(parents=True)
    git(path, "init", "--quiet", "--initial-branch=main")
    for tag, text in (("v1.0.0", MODULE_V1_0), ("v1.1.0", MODULE_V1_1)):
        (path / "main.tf").write_text(text)
        commit_all(path, f"release {tag}")
        git(path, "tag", "-a", tag, "-m", f"release {tag}")
    return path


def unit(folder: Path, source: str, name: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "terragrunt.hcl").write_text(
        'include "root" {\n  path = find_in_parent_folders("terragrunt.hcl")\n}\n\n'
        f'terraform {{\n  source = "{source}"\n}}\n\ninputs = {{\n  name = "{name}"\n}}\n'
    )


def adopted_repo(top: Path, source: str) -> Path:
    """The repository to adopt: ``infra/live`` its project root (``dev/app``,
    ``dev/legacy``, ``prod/app``), state under ``state/`` at git's top level, with a bare
    ``origin``. Returns the top."""
    live = top / "infra" / "live"
    live.mkdir(parents=True)
    shutil.copy2(REPO / ".tool-versions", top / ".tool-versions")
    (top / ".gitignore").write_text(
        ".terragrunt-cache/\n.terraform/\n.iac/\nstate/\n*.tfstate\n*.tfstate.*\n"
    )
    (top / "README.md").write_text("the company's monorepo\n")
    (live / "terragrunt.hcl").write_text(ROOT_TERRAGRUNT)
    unit(live / "dev" / "app", source, "dev-app")
    unit(live / "dev" / "legacy", source, "dev-legacy")
    unit(live / "prod" / "app", source, "prod-app")
    git(top, "init", "--quiet", "--initial-branch=main")
    commit_all(top, "environments in infra/live")
    origin = top.parent / f"{top.name}-origin.git"
    git(top.parent, "init", "--quiet", "--bare", "--initial-branch=main", str(origin))
    git(top, "remote", "add", "origin", str(origin))
    git(top, "push", "--quiet", "origin", "main")
    git(top, "remote", "set-head", "origin", "main")
    return top


def state_of(top: Path, unit_path: str) -> Path:
    return top / "state" / unit_path / "terraform.tfstate"


def summary(out: Path) -> dict[str, dict[str, Any]]:
    doc = json.loads((out / "summary.json").read_text())
    return {u["path"]: u for u in doc["units"]}


def applied(out: Path) -> dict[str, dict[str, Any]]:
    doc = json.loads((out / "apply.json").read_text())
    return {u["path"]: u for u in doc["units"]}


def test_a_repository_is_adopted_planned_applied_moved_pruned_and_bumped(
    tmp_path: Path, tools: None
) -> None:
    modules = module_repo(tmp_path / "modules" / f"{MODULE}.git")
    source = f"git::file://{modules}?ref=v1.0.0"
    top = adopted_repo(tmp_path / "mono", source)
    live = top / "infra" / "live"

    # doctor at git's top level names the project root below and prints the block
    doctor = iac(top, "doctor")
    assert "needs infra/live: the project root" in doctor.stdout, doctor.output
    assert "for infra/live/policy.toml" in doctor.stdout, doctor.output
    lines = doctor.stdout.splitlines()
    block = "\n".join(lines[lines.index("[layout]") :]) + "\n"
    assert tomllib.loads(block)["layout"]["live"] == ["dev", "prod"], block
    (live / "policy.toml").write_text(block)
    commit_all(top, "adopted: doctor's block")

    check = iac(top, "check", "--json")
    assert check.returncode == 0, check.output
    assert json.loads(check.stdout)["violations"] == [], check.output
    plain = iac(top, "check")
    assert plain.returncode == 0, plain.output
    assert "no violations" in plain.output and "violation:" not in plain.output, plain.output

    # every unit planned, then applied: the manual ones once approved
    plans = tmp_path / "plans-all"
    planned = iac(top, "plan", "--all", "--out", str(plans))
    assert planned.returncode == 0, planned.output
    units = summary(plans)
    assert sorted(units) == ["dev/app", "dev/legacy", "prod/app"], units
    assert all(u["status"] == "changes" for u in units.values()), units
    first = iac(top, "apply", "--plans", str(plans))
    assert first.returncode == 0, first.output
    for _ in range(3):
        if all(u["result"] == "applied" for u in applied(plans).values()):
            break
        again = iac(top, "apply", "--plans", str(plans), "--approve-manual")
        assert again.returncode == 0, again.output
    results = applied(plans)
    assert {p: u["result"] for p, u in results.items()} == dict.fromkeys(units, "applied")
    for path in units:
        assert '"terraform_data"' in state_of(top, path).read_text(), path

    # move-unit: the folder and its state; the next plan of the new folder has nothing to do
    before = state_of(top, "dev/app").read_text()
    moved = iac(top, "move-unit", "dev/app", "dev/web")
    assert moved.returncode == 0, moved.output
    assert (live / "dev" / "web" / "terragrunt.hcl").is_file()
    assert not (live / "dev" / "app").exists()
    assert state_of(top, "dev/web").read_text() == before
    assert not state_of(top, "dev/app").exists()
    commit_all(top, "dev: app is web")
    after_move = tmp_path / "plans-moved"
    replanned = iac(top, "plan", "--unit", "dev/web", "--out", str(after_move))
    assert replanned.returncode == 0, replanned.output
    assert summary(after_move)["dev/web"]["status"] == "no-changes", replanned.output

    # a deleted unit: its destroy plan lists its resources, waits for a human, then destroys
    base = git(top, "rev-parse", "HEAD").strip()
    git(top, "rm", "-r", "--quiet", "infra/live/dev/legacy")
    commit_all(top, "retire dev/legacy")
    retired = tmp_path / "plans-retired"
    planned = iac(top, "plan", "--base", base, "--out", str(retired))
    assert planned.returncode == 0, planned.output
    legacy = summary(retired)["dev/legacy"]
    assert legacy["destroy"] is True and legacy["status"] == "changes", legacy
    assert legacy["gate"]["decision"] == "manual", legacy
    assert legacy["counts"]["delete"] == 1, legacy
    assert "terraform_data.this" in planned.output + (retired / "comment.md").read_text()
    waiting = iac(top, "apply", "--plans", str(retired))
    assert waiting.returncode == 0, waiting.output
    assert applied(retired)["dev/legacy"]["result"] == "waiting-approval", waiting.output
    assert '"terraform_data"' in state_of(top, "dev/legacy").read_text()
    destroyed = iac(top, "apply", "--plans", str(retired), "--approve-manual")
    assert destroyed.returncode == 0, destroyed.output
    assert applied(retired)["dev/legacy"]["result"] == "applied", destroyed.output
    assert '"terraform_data"' not in state_of(top, "dev/legacy").read_text()

    # bump-module: every pin moves to the new tag, in one commit
    git(top, "push", "--quiet", "origin", "main")
    bumped = iac(top, "bump-module", MODULE, "v1.1.0")
    assert bumped.returncode == 0, bumped.output
    for path in ("dev/web", "prod/app"):
        text = (live / path / "terragrunt.hcl").read_text()
        assert f'"git::file://{modules}?ref=v1.1.0"' in text, text
    assert git(top, "log", "-1", "--format=%s").strip() == f"chore(deps): bump {MODULE} to v1.1.0"
