"""Cross-check the repository model against Terragrunt's own `find --dependencies --reading`.

Where Terragrunt is wrong, the test documents the difference instead of hiding
it: Terragrunt 1.1.3 does not report files read with file() (nor
templatefile()/read_tfvars_file()), so a change to such a file selects nothing
in Terragrunt's git filter. Our model tracks them; the tests below assert that
this is the *only* difference.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from infra_fixtures import REPO

from tooling.model.repo import Model, WorkTree, load

sys.path.insert(0, str(REPO / "benchmarks"))
from gentree import generate

pytestmark = pytest.mark.e2e


def terragrunt_find(root: Path) -> dict[str, dict[str, set[str]]]:
    result = subprocess.run(
        ["terragrunt", "find", "--json", "--dependencies", "--reading", "--no-color", "--log-level", "error"],
        cwd=root, capture_output=True, text=True, check=True,
    )
    return {
        item["path"]: {
            "dependencies": set(item.get("dependencies") or ()),
            "reading": set(item.get("reading") or ()),
        }
        for item in json.loads(result.stdout)
        if item["type"] == "unit"
    }


def ours(root: Path) -> Model:
    return load(WorkTree(root))


def test_the_example_tree_agrees_with_terragrunt(example_repo: Path) -> None:
    theirs = terragrunt_find(example_repo)
    model = ours(example_repo)
    assert set(theirs) == set(model.units)
    for path, unit in model.units.items():
        assert set(unit.dependencies) == theirs[path]["dependencies"], path
        own_file = f"{path}/terragrunt.hcl"  # Terragrunt does not list the unit's own file
        assert set(unit.reads) - {own_file} == theirs[path]["reading"], path


def test_a_generated_tree_agrees_except_for_file_reads_terragrunt_does_not_track(
    tmp_path: Path, tools: None
) -> None:
    root = tmp_path / "tree"
    generate(root, 60)
    theirs = terragrunt_find(root)
    model = ours(root)
    assert set(theirs) == set(model.units)
    missing_in_terragrunt: dict[str, set[str]] = {}
    for path, unit in model.units.items():
        assert set(unit.dependencies) == theirs[path]["dependencies"], path
        ours_reads = set(unit.reads) - {f"{path}/terragrunt.hcl"}
        assert theirs[path]["reading"] <= ours_reads, path  # everything Terragrunt sees, we see
        missing_in_terragrunt[path] = ours_reads - theirs[path]["reading"]
    # the difference is exactly the file() reads the generator wrote
    for path, missing in missing_in_terragrunt.items():
        group = path.rsplit("/", 1)[0]
        index = int(path.rsplit("/u", 1)[1])
        expected = {f"{group}/shared/settings.yaml"}
        if index % 10 == 9 or index == 5:
            expected.add(f"{group}/u0/peers.json")
        assert missing == expected, path
