"""``invoke bump-module`` on pins written through an included file's locals, end to end.

Gruntwork's ``_envcommon`` layout: the module's URL is a local of an included
file, the ref either the unit's own ``?ref=`` after it or part of the included
local. The example tree in a throwaway repository with a bare ``origin``, a
module repository built with real git (``IAC_MODULE_REWRITE``), the real CLI;
only GitHub's API is the local test server.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from infra_fixtures import commit_all, git, invoke
from test_bump_e2e import _module_repo, _origin_sha

pytestmark = pytest.mark.e2e

URL = "https://git.example.com/platform-modules/terraform-inc.git"

ENVCOMMON = (
    "locals {\n"
    f'  base_source_url = "git::{URL}"\n'
    "  # the whole source, ref included\n"
    f'  pinned_url      = "git::{URL}?ref=v1.0.0"\n'
    "}\n"
)


def _unit(repo: Path, path: str, source: str) -> str:
    text = (
        'include "root" {\n  path = find_in_parent_folders("root.hcl")\n}\n\n'
        'include "envcommon" {\n'
        '  path   = "${get_repo_root()}/_envcommon/inc.hcl"\n'
        "  expose = true\n}\n\n"
        f"terraform {{\n  source = {source}\n}}\n"
    )
    (repo / path).mkdir(parents=True)
    (repo / path / "terragrunt.hcl").write_text(text, encoding="utf-8")
    return text


def test_bump_module_edits_the_units_ref_and_the_included_local_byte_exact(
    example_repo: Path, tmp_path: Path, github_api: Any
) -> None:
    modules = tmp_path / "modules" / "terraform-inc.git"
    _module_repo(modules, [("v1.0.0", "first"), ("v1.1.0", "second")], annotated=True)
    (example_repo / "_envcommon").mkdir()
    (example_repo / "_envcommon" / "inc.hcl").write_text(ENVCOMMON, encoding="utf-8")
    own_ref = _unit(
        example_repo,
        "live/cloud/inc-a",
        '"${include.envcommon.locals.base_source_url}?ref=v1.0.0"',
    )
    _unit(example_repo, "live/cloud/inc-b", "include.envcommon.locals.pinned_url")
    commit_all(example_repo, "units pinning a module through _envcommon")
    git(example_repo, "push", "--quiet", "origin", "main")
    env = {**github_api.env(), "IAC_MODULE_REWRITE": f"{URL}={modules}"}

    out = invoke(example_repo, "outdated", "--json", env=env)
    assert out.returncode == 0, out.output
    (inc,) = [m for m in json.loads(out.stdout)["modules"] if m["module"] == "terraform-inc"]
    assert {(u["path"], u["file"], u["line"]) for u in inc["units"]} == {
        ("live/cloud/inc-a", "live/cloud/inc-a/terragrunt.hcl", 11),
        ("live/cloud/inc-b", "_envcommon/inc.hcl", 4),
    }

    result = invoke(example_repo, "bump-module", "terraform-inc", "v1.1.0", env=env)
    assert result.returncode == 0, result.output
    sha = _origin_sha(example_repo, "bump/terraform-inc-v1.1.0")
    assert sha is not None
    changed = git(example_repo, "diff", "--name-only", f"{sha}^", sha).split()
    assert sorted(changed) == ["_envcommon/inc.hcl", "live/cloud/inc-a/terragrunt.hcl"]
    assert git(example_repo, "show", f"{sha}:live/cloud/inc-a/terragrunt.hcl") == own_ref.replace(
        "?ref=v1.0.0", "?ref=v1.1.0"
    )
    assert git(example_repo, "show", f"{sha}:_envcommon/inc.hcl") == ENVCOMMON.replace(
        "?ref=v1.0.0", "?ref=v1.1.0"
    )
