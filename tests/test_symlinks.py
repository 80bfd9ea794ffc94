"""Change detection follows symbolic links to their targets inside the repository.

OpenTofu reads a file linked into a unit's folder (``site.auto.tfvars ->
../../../shared/net.tfvars``) at its target, and Terragrunt copies a linked
folder's contents into every run: a change to the target is a change to the
unit. The same holds for a file the configuration reads through a linked
folder on its way. Each case is checked on committed changes (the model of a
git revision) and on uncommitted ones (the working tree's model), with real
git repositories.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from infra_fixtures import commit_all, copy_repo, edit, git, make_example_repo

from tooling.core.plan.affected import Affected
from tooling.engine.plan.affected import compute_affected
from tooling.io.workspace import Workspace

DNS = "live/cloud/dns"
IAM = "live/cloud/iam"


@pytest.fixture(scope="module")
def linked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example with three links: a tfvars file and a folder linked into unit
    folders, and a folder at the root that one unit reads a file through (built once)."""
    root = make_example_repo(tmp_path_factory.mktemp("symlinks") / "infra")
    shared = root / "shared"
    (shared / "conf").mkdir(parents=True)
    (shared / "net.tfvars").write_text('zone_name = "example.net"\n')
    (shared / "conf" / "policy.json").write_text('{"admins": 1}\n')
    (shared / "records.json").write_text('{"ttl": 300}\n')
    os.symlink("../../../shared/net.tfvars", root / DNS / "site.auto.tfvars")
    os.symlink("../../../shared/conf", root / IAM / "conf")
    os.symlink("shared", root / "settings")  # a folder read through, outside the live folder
    edit(
        root,
        f"{DNS}/terragrunt.hcl",
        'inputs = {\n  zone_name = "example.net"',
        'locals {\n  records = jsondecode(file("${get_repo_root()}/settings/records.json"))\n}\n\n'
        'inputs = {\n  zone_name = "example.net"',
    )
    commit_all(root, "shared settings, linked into units")
    git(root, "checkout", "--quiet", "-b", "feature")
    return root


@pytest.fixture
def repo(linked: Path, tmp_path: Path) -> Path:
    """Each test's own copy of it."""
    return copy_repo(linked, tmp_path / "infra")


def _affected(repo: Path, *, uncommitted: bool) -> Affected:
    result, _ = compute_affected(Workspace(repo), "main", uncommitted=uncommitted)
    return result


def _selected(result: Affected) -> dict[str, tuple[str, ...]]:
    return {u.path: u.reasons for u in result.units}


CASES = {
    "a linked tfvars file": ("shared/net.tfvars", 'zone_name = "example.org"\n', DNS),
    "a file in a linked folder": ("shared/conf/policy.json", '{"admins": 2}\n', IAM),
    "a file added to a linked folder": ("shared/conf/extra.json", "{}\n", IAM),
    "a file read through a linked folder": ("shared/records.json", '{"ttl": 60}\n', DNS),
}


@pytest.mark.parametrize("uncommitted", [False, True], ids=["committed", "uncommitted"])
@pytest.mark.parametrize(("target", "content", "unit"), CASES.values(), ids=list(CASES))
def test_changing_a_symlink_target_selects_the_unit_that_reads_it(
    repo: Path, target: str, content: str, unit: str, uncommitted: bool
) -> None:
    (repo / target).write_text(content)
    if not uncommitted:
        commit_all(repo, f"change {target}")
    assert _selected(_affected(repo, uncommitted=uncommitted)) == {unit: (target,)}


def test_a_symlink_pointing_outside_the_repository_is_not_followed(
    repo: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere.tfvars"
    outside.write_text("x = 1\n")
    os.symlink(outside, repo / DNS / "outside.auto.tfvars")
    commit_all(repo, "a link out of the repository")
    # the link itself is a change in the unit's folder; nothing outside is read
    assert _selected(_affected(repo, uncommitted=False)) == {DNS: (f"{DNS}/outside.auto.tfvars",)}
    outside.write_text("x = 2\n")
    assert _selected(_affected(repo, uncommitted=True)) == {DNS: (f"{DNS}/outside.auto.tfvars",)}
