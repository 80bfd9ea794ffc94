"""Units the model used to be blind to: data files, try() chains, computed file names.

Each form is evaluated by the model (which starts no process) and compared with
what the pinned Terragrunt's ``render`` resolves for the same unit; then a
change to a data file, committed in a real git repository and seen through
``invoke affected`` (run in the test's process), selects exactly the units that read it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from infra_fixtures import REPO, commit_all, git, invoke_in_process

from tooling.io import terragrunt
from tooling.model.repo import load
from tooling.model.trees import WorkTree

INCLUDE = 'include "root" {\n  path = find_in_parent_folders("root.hcl")\n}\n'

UNITS = {
    # yamldecode(file()) feeding a local, and that local terraform.source
    "live/yaml": """
locals {
  cfg = yamldecode(file("${get_terragrunt_dir()}/../config.yaml"))
}
terraform {
  source = "${get_repo_root()}/modules/${local.cfg.module}"
}
""",
    # jsondecode(file(find_in_parent_folders())) and a try() chain whose first try fails
    "live/json": """
locals {
  cfg  = jsondecode(file(find_in_parent_folders("config.json")))
  name = try(local.cfg.missing, local.cfg.module, "fallback")
}
terraform {
  source = "${get_repo_root()}/modules/${local.name}"
}
""",
    # a file name computed with contains() and can()
    "live/computed": """
locals {
  envs = ["prod", "dev"]
  env  = contains(local.envs, "dev") ? "dev" : "prod"
  file = can(file("${get_terragrunt_dir()}/${local.env}.yaml")) ? "${local.env}.yaml" : "../config.yaml"
  cfg  = yamldecode(file("${get_terragrunt_dir()}/${local.file}"))
}
terraform {
  source = "${get_repo_root()}/modules/${local.cfg.module}"
}
""",
    # fileexists(), and find_in_parent_folders() with a fallback
    "live/fallback": """
locals {
  own = "${get_terragrunt_dir()}/override.yaml"
  cfg = yamldecode(file(fileexists(local.own) ? local.own : find_in_parent_folders("config.yaml", "none")))
}
terraform {
  source = "${get_repo_root()}/modules/${local.cfg.module}"
}
""",
    # reads nothing but the root: never selected by a data file
    "live/plain": """
terraform {
  source = "${get_repo_root()}/modules/other"
}
""",
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "infra"
    for name in ("m", "other"):
        (root / "modules" / name).mkdir(parents=True)
        (root / "modules" / name / "main.tf").write_text(
            'variable "x" {\n  default = ""\n}\n', encoding="utf-8"
        )
    (root / "root.hcl").write_text("locals {}\n", encoding="utf-8")
    (root / "live").mkdir()
    (root / "live" / "config.yaml").write_text("module: m\nsize: 3\n", encoding="utf-8")
    (root / "live" / "config.json").write_text('{"module": "m"}\n', encoding="utf-8")
    for path, body in UNITS.items():
        (root / path).mkdir(parents=True)
        (root / path / "terragrunt.hcl").write_text(INCLUDE + body, encoding="utf-8")
    (root / "tasks.py").write_text((REPO / "tasks.py").read_text(encoding="utf-8"))
    git(root, "init", "--quiet", "--initial-branch=main")
    commit_all(root, "units reading data files")
    return root


def _rendered_source(unit_dir: Path) -> str:
    ran = terragrunt.run(terragrunt.render_args(), unit_dir, terragrunt.base_env())
    assert ran.returncode == 0, ran.stderr
    source: str = json.loads(ran.stdout)["terraform"]["source"]
    return source


def test_each_form_is_evaluated_as_terragrunt_renders_it(repo: Path, tools: None) -> None:
    model = load(WorkTree(repo, ("live",)), None)
    assert set(model.units) == set(UNITS)
    for path, unit in model.units.items():
        assert unit.error is None, (path, unit.error)
        assert unit.source == _rendered_source(repo / path), path
    assert unit_reads(model, "live/config.yaml") == {"live/yaml", "live/computed", "live/fallback"}
    assert unit_reads(model, "live/config.json") == {"live/json"}


def unit_reads(model: object, path: str) -> set[str]:
    units = model.units.values()  # type: ignore[attr-defined]
    return {u.path for u in units if path in u.reads}


def _affected(repo: Path) -> set[str]:
    result = invoke_in_process(repo, "affected", "--base", "HEAD~1", "--committed", "--json")
    assert result.returncode == 0, result.output
    return {u["path"] for u in json.loads(result.stdout)["units"]}


@pytest.mark.parametrize(
    ("change", "selected"),
    [
        ("live/config.yaml", {"live/yaml", "live/computed", "live/fallback"}),
        ("live/config.json", {"live/json"}),
        ("live/computed/dev.yaml", {"live/computed"}),
        ("live/fallback/override.yaml", {"live/fallback"}),
    ],
)
def test_a_change_to_a_data_file_selects_exactly_its_readers(
    repo: Path, change: str, selected: set[str]
) -> None:
    target = repo / change
    before = target.read_text(encoding="utf-8") if target.exists() else ""
    target.write_text(before + "# edited\n" if before else "module: m\n", encoding="utf-8")
    commit_all(repo, f"change {change}")
    assert _affected(repo) == selected


def test_a_data_file_change_is_seen_through_the_model_cache(repo: Path) -> None:
    """The cached model is keyed by the HCL files: a data file the units read invalidates it."""
    cache = repo / ".iac" / "cache"
    first = load(WorkTree(repo, ("live",)), cache)
    assert first.units["live/yaml"].source == f"{repo.as_posix()}/modules/m"
    (repo / "live" / "config.yaml").write_text("module: other\n", encoding="utf-8")
    again = load(WorkTree(repo, ("live",)), cache)
    assert again.units["live/yaml"].source == f"{repo.as_posix()}/modules/other"
