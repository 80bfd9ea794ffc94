"""Paths resolved as Terragrunt resolves them, checked against the real ``terragrunt render``.

OpenTofu's own file functions (``file``, ``fileexists``, ``templatefile``...) read
relative to the file they are written in, an included file too; Terragrunt's functions
(``read_terragrunt_config``, ``find_in_parent_folders``, ``get_terragrunt_dir``...)
answer for the unit being parsed. Every path-taking function is written in a unit, in
a file it includes one folder up and in one two folders up; the model's value of each
is compared with what the pinned Terragrunt renders.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from infra_fixtures import REPO, commit_all, edit, git, invoke

from tooling.engine.plan.affected import compute_affected
from tooling.errors import ToolingError
from tooling.io.workspace import Workspace
from tooling.model.configfiles import Loader, Scope
from tooling.model.evaluator import UnitEvaluator
from tooling.model.exprs import UNKNOWN
from tooling.model.parsecache import ParseCache
from tooling.model.trees import WorkTree

UNIT = "live/env/app"
#: the unit and the files it includes: (input prefix, folder, name of the include to name)
FILES = (("unit", UNIT, '"root"'), ("env", "live/env", ""), ("root", "live", ""))
#: every path-taking function, as written in each file
CALLS = {
    "file": 'file("data.txt")',
    "fileexists": 'fileexists("mark.txt")',
    "templatefile": 'templatefile("t.tpl", {{ x = "1" }})',
    "read_terragrunt_config": 'read_terragrunt_config("cfg.hcl").locals.v',
    "find_in_parent_folders": 'find_in_parent_folders("top.hcl")',
    "get_terragrunt_dir": "get_terragrunt_dir()",
    "get_original_terragrunt_dir": "get_original_terragrunt_dir()",
    "get_parent_terragrunt_dir": "get_parent_terragrunt_dir({inc})",
    "path_relative_to_include": "path_relative_to_include({inc})",
    "path_relative_from_include": "path_relative_from_include({inc})",
    "get_repo_root": "get_repo_root()",
    "get_path_from_repo_root": "get_path_from_repo_root()",
    "get_path_to_repo_root": "get_path_to_repo_root()",
    "try": 'try(local.m["missing"], "v4.0.1")',
}
#: functions whose value the model does not compute (it records the file they read)
READ_ONLY = {"templatefile": "t.tpl"}


def _file_text(prefix: str, inc: str) -> str:
    """Each call as a local (what the model evaluates), rendered through ``inputs``."""
    calls = "\n".join(f"  f_{name} = {call.format(inc=inc)}" for name, call in CALLS.items())
    items = "\n".join(f"  {prefix}_{name} = local.f_{name}" for name in CALLS)
    return f'locals {{\n  m = {{ a = "1" }}\n{calls}\n}}\n\ninputs = {{\n{items}\n}}\n'


def _build(repo: Path) -> Path:
    (repo / UNIT).mkdir(parents=True)
    for _prefix, folder, _inc in FILES:
        name = folder.rsplit("/", 1)[-1]
        (repo / folder / "data.txt").write_text(name)
        (repo / folder / "t.tpl").write_text("x=${x} " + name + "\n")
        (repo / folder / "cfg.hcl").write_text(f'locals {{\n  v = "{name}"\n}}\n')
    (repo / "live/mark.txt").write_text("")  # only beside the root file
    (repo / "top.hcl").write_text("")
    (repo / "live/env/top.hcl").write_text("")
    (repo / "live/root.hcl").write_text(_file_text("root", ""))
    (repo / "live/env/env.hcl").write_text(_file_text("env", ""))
    (repo / UNIT / "terragrunt.hcl").write_text(
        'include "root" {\n  path = find_in_parent_folders("root.hcl")\n}\n\n'
        'include "env" {\n  path = find_in_parent_folders("env.hcl")\n}\n\n'
        + _file_text("unit", '"root"')
    )
    git(repo, "init", "--quiet", "--initial-branch=main")
    commit_all(repo, "paths")
    return repo


def _rendered(repo: Path) -> dict[str, Any]:
    from tooling.io import binpath

    binpath.ensure_bin_dir_on_path()
    ran = subprocess.run(
        ["terragrunt", "render", "--json", "--out", "/dev/stdout", "--non-interactive"],
        cwd=repo / UNIT,
        env={**os.environ, "TG_LOG_LEVEL": "error"},
        check=True,
        capture_output=True,
        text=True,
    )
    inputs: dict[str, Any] = json.loads(ran.stdout)["inputs"]
    return inputs


def _model(repo: Path) -> tuple[dict[str, Any], dict[str, None]]:
    loader = Loader(WorkTree(repo), ParseCache(None))
    ev = UnitEvaluator(loader, UNIT)
    unit = loader.file(f"{UNIT}/terragrunt.hcl", Scope(f"{UNIT}/terragrunt.hcl"))
    ev.include_all(unit)
    values: dict[str, Any] = {}
    files = {"unit": unit, **unit.scope.includes}  # the includes are named root and env
    for prefix, file in files.items():
        for name in CALLS:
            try:
                values[f"{prefix}_{name}"] = ev.local(file, f"f_{name}")
            except ToolingError as exc:
                values[f"{prefix}_{name}"] = f"error: {exc}"
    return values, ev.reads


@pytest.fixture(scope="module")
def paths_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    repo = _build(tmp_path_factory.mktemp("paths").resolve() / "repo")
    return repo, _rendered(repo)


@pytest.mark.parametrize("where", [f[0] for f in FILES])
@pytest.mark.parametrize("function", list(CALLS))
def test_each_path_function_evaluates_as_terragrunt_renders_it_in_a_unit_and_its_includes(
    paths_repo: tuple[Path, dict[str, Any]], function: str, where: str
) -> None:
    repo, rendered = paths_repo
    key = f"{where}_{function}"
    values, reads = _model(repo)
    expected = rendered[key]
    if function in READ_ONLY:
        # the model does not render templates: it reads the file Terragrunt reads
        assert values[key] is UNKNOWN
        folder = next(f for p, f, _i in FILES if expected.endswith(f" {f.rsplit('/', 1)[-1]}\n"))
        assert f"{folder}/{READ_ONLY[function]}" in reads, (key, expected, sorted(reads))
        return
    assert values[key] == expected, (key, values[key], expected)


def test_a_change_to_a_file_the_root_file_reads_selects_every_unit_that_includes_it(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "infra"
    (repo / "live/cloud/a").mkdir(parents=True)
    (repo / "live/cloud/b").mkdir(parents=True)
    (repo / "live/other").mkdir(parents=True)
    (repo / "data.txt").write_text("v1\n")
    (repo / "root.hcl").write_text('locals {\n  data = trimspace(file("data.txt"))\n}\n')
    for unit in ("live/cloud/a", "live/cloud/b"):
        (repo / unit / "terragrunt.hcl").write_text(
            'include "root" {\n  path   = find_in_parent_folders("root.hcl")\n'
            "  expose = true\n}\n\ninputs = {\n  data = include.root.locals.data\n}\n"
        )
    (repo / "live/other/terragrunt.hcl").write_text('inputs = {\n  data = "none"\n}\n')
    shutil.copy2(REPO / "tasks.py", repo / "tasks.py")  # `invoke affected` in it
    git(repo, "init", "--quiet", "--initial-branch=main")
    commit_all(repo, "units")
    model = Workspace(repo).model()
    assert {p: u.error for p, u in model.units.items()} == dict.fromkeys(
        ("live/cloud/a", "live/cloud/b", "live/other")
    )
    git(repo, "checkout", "--quiet", "-b", "feature")
    edit(repo, "data.txt", "v1", "v2")
    commit_all(repo, "data v2")
    result, _ = compute_affected(Workspace(repo), "main")
    assert [u.path for u in result.units] == ["live/cloud/a", "live/cloud/b"]
    assert all("data.txt" in u.reasons for u in result.units)
    ran = invoke(repo, "affected", "--base", "main", "--json")
    assert ran.returncode == 0, ran.output
    assert [u["path"] for u in json.loads(ran.stdout)["units"]] == ["live/cloud/a", "live/cloud/b"]
