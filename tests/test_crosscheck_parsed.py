"""``invoke crosscheck`` compares the units Terragrunt parsed, though its debug log
holds a routine suppressed error (locals reading a dependency's outputs in the first
pass), here with a dependency whose target folder is missing (not yet created)."""

from __future__ import annotations

import json
from pathlib import Path

from infra_fixtures import REPO, commit_all, git, invoke

APP = """\
include "root" {
  path = find_in_parent_folders("root.hcl")
}

dependency "db" {
  config_path = "../db"
}

dependency "vpc" {
  config_path = "../vpc"
  mock_outputs = { id = "vpc-0" }
}

locals {
  db_id = dependency.db.outputs.id
}

inputs = {
  db = local.db_id
}
"""


def test_a_suppressed_dependency_error_does_not_leave_the_unit_out(
    tmp_path: Path, tools: None
) -> None:
    repo = tmp_path / "infra"
    for unit in ("app", "db"):
        (repo / unit).mkdir(parents=True)
    (repo / "root.hcl").write_text("locals {}\n", encoding="utf-8")
    (repo / "app" / "terragrunt.hcl").write_text(APP, encoding="utf-8")
    (repo / "db" / "terragrunt.hcl").write_text(
        'include "root" {\n  path = find_in_parent_folders("root.hcl")\n}\n', encoding="utf-8"
    )
    (repo / "tasks.py").write_text((REPO / "tasks.py").read_text(encoding="utf-8"))
    git(repo, "init", "--quiet", "--initial-branch=main")
    commit_all(repo, "a unit whose locals read a dependency")

    result = invoke(repo, "crosscheck", "--path", ".", "--json")

    report = json.loads(result.stdout)
    assert report["unparsed_by_terragrunt"] == []
    assert report["compared"] == 2
    assert report["dangerous"] == 0
    assert result.returncode == 0, result.output


def test_the_change_mapping_is_compared_with_terragrunts_readers(
    tmp_path: Path, tools: None
) -> None:
    """Each file Terragrunt's --reading names: the units `terragrunt find --filter
    reading=FILE` selects are the ones crosscheck expects a change to FILE to select."""
    from tooling.commands import crosscheck
    from tooling.core.doctor.crosscheck import parse_find, readers
    from tooling.io import proc, terragrunt

    repo = tmp_path / "infra"
    for unit in ("app", "db", "web"):
        (repo / unit).mkdir(parents=True)
        (repo / unit / "terragrunt.hcl").write_text(
            'include "root" {\n  path = find_in_parent_folders("root.hcl")\n}\n'
            + (
                'locals {\n  env = read_terragrunt_config("../env.hcl")\n}\n'
                if unit != "db"
                else ""
            ),
            encoding="utf-8",
        )
    (repo / "root.hcl").write_text("locals {}\n", encoding="utf-8")
    (repo / "env.hcl").write_text('locals {\n  name = "prod"\n}\n', encoding="utf-8")

    stdout, _log = crosscheck.terragrunt_find(repo)
    inverse = readers(parse_find(stdout))
    assert inverse == {"root.hcl": {"app", "db", "web"}, "env.hcl": {"app", "web"}}
    for path, units in inverse.items():
        ran = proc.run(
            ["terragrunt", "find", "--no-color", "--filter", f"reading={path}"],
            cwd=repo,
            env=terragrunt.base_env(),
        )
        assert set(ran.stdout.split()) == units, path

    report = crosscheck.check(repo)
    assert report.changes_checked == 2
    assert report.dangerous == ()
