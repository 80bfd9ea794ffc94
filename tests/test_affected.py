"""Change detection on real git repositories: one test per rule."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from infra_fixtures import commit_all, edit, git, invoke

from tooling.core.plan.affected import Affected
from tooling.engine.plan.affected import compute_affected
from tooling.io.workspace import Workspace


def _affected(repo: Path, base: str = "main", *, uncommitted: bool = False) -> Affected:
    result, _ = compute_affected(Workspace(repo), base, uncommitted=uncommitted)
    return result


def _paths(result: Affected) -> list[tuple[str, str]]:
    return [(u.path, u.change) for u in result.units]


def _branch(repo: Path, name: str = "feature") -> None:
    git(repo, "checkout", "--quiet", "-b", name)


def test_a_unit_added_on_main_after_the_branch_point_is_not_reported(example_repo: Path) -> None:
    _branch(example_repo)
    edit(example_repo, "live/cloud/dns/terragrunt.hcl", "ttl = 60", "ttl = 120")
    commit_all(example_repo, "dns ttl")
    git(example_repo, "checkout", "--quiet", "main")
    shutil.copytree(example_repo / "live/cloud/iam", example_repo / "live/cloud/mail")
    commit_all(example_repo, "add mail on main")
    git(example_repo, "checkout", "--quiet", "feature")
    result = _affected(example_repo, "main")
    assert _paths(result) == [("live/cloud/dns", "modified")]
    assert result.units[0].reasons == ("live/cloud/dns/terragrunt.hcl",)
    assert result.base == git(example_repo, "merge-base", "main", "feature").strip()


def test_a_shared_file_beside_a_unit_selects_every_unit_that_reads_it(example_repo: Path) -> None:
    # network's folder holds vlans.yaml; network and vms both read it
    (example_repo / "live/cluster/network/vlans.yaml").write_text("servers: 40\n")
    edit(
        example_repo,
        "live/cluster/network/terragrunt.hcl",
        "vlan_id   = 40",
        'vlan_id   = yamldecode(file("vlans.yaml")).servers',
    )
    edit(
        example_repo,
        "live/cluster/vms/terragrunt.hcl",
        "inputs = {",
        'locals {\n  vlans = yamldecode(file("${get_terragrunt_dir()}/../network/vlans.yaml"))\n}\n\ninputs = {',
    )
    commit_all(example_repo, "shared vlans file")
    _branch(example_repo)
    (example_repo / "live/cluster/network/vlans.yaml").write_text("servers: 41\n")
    commit_all(example_repo, "change vlan")
    result = _affected(example_repo)
    assert _paths(result) == [
        ("live/cluster/network", "modified"),
        ("live/cluster/vms", "modified"),
    ]
    assert all(u.reasons == ("live/cluster/network/vlans.yaml",) for u in result.units)


def test_a_readme_in_a_unit_folder_selects_nothing(example_repo: Path) -> None:
    _branch(example_repo)
    (example_repo / "live/cluster/vms/README.md").write_text("# the VMs\n")
    commit_all(example_repo, "docs")
    result = _affected(example_repo)
    assert result.units == () and result.dependents == ()


@pytest.mark.parametrize(
    ("changed", "expected", "dependents"),
    [
        (
            "root.hcl",
            {
                "live/cloud/dns",
                "live/cloud/iam",
                "live/cloud/registry",
                "live/cluster/network",
                "live/cluster/vms",
                "live/cluster/os",
                "live/cluster/gitops",
            },
            [],
        ),
        # gitops reads cloud/dns across tiers: a dependent, not a selected unit
        (
            "live/cloud/tier.hcl",
            {"live/cloud/dns", "live/cloud/iam", "live/cloud/registry"},
            [("live/cluster/gitops", "live/cloud/dns")],
        ),
        (
            "live/cluster/tier.hcl",
            {"live/cluster/network", "live/cluster/vms", "live/cluster/os", "live/cluster/gitops"},
            [],
        ),
    ],
)
def test_root_or_tier_file_selects_exactly_the_units_below_it(
    example_repo: Path, changed: str, expected: set[str], dependents: list[tuple[str, str]]
) -> None:
    _branch(example_repo)
    path = example_repo / changed
    path.write_text(path.read_text() + "\n# reviewed\n")
    commit_all(example_repo, f"touch {changed}")
    result = _affected(example_repo)
    assert {u.path for u in result.units} == expected
    assert all(u.change == "modified" and u.reasons == (changed,) for u in result.units)
    assert [(d.path, d.via) for d in result.dependents] == dependents


def test_a_ref_bump_selects_exactly_that_unit_and_lists_dependents_apart(
    example_repo: Path,
) -> None:
    _branch(example_repo)
    edit(example_repo, "live/cluster/vms/terragrunt.hcl", "?ref=v1.1.0", "?ref=v1.2.0")
    commit_all(example_repo, "bump vm module")
    result = _affected(example_repo)
    assert _paths(result) == [("live/cluster/vms", "modified")]
    assert [(d.path, d.via) for d in result.dependents] == [
        ("live/cluster/os", "live/cluster/vms"),
        ("live/cluster/gitops", "live/cluster/os"),
    ]


def test_a_deleted_unit_is_reported_after_the_others_in_reverse_dependency_order(
    example_repo: Path,
) -> None:
    _branch(example_repo)
    git(example_repo, "rm", "-r", "--quiet", "live/cluster/os", "live/cluster/gitops")
    edit(example_repo, "live/cloud/dns/terragrunt.hcl", "ttl = 60", "ttl = 120")
    commit_all(example_repo, "retire the cluster's OS and GitOps")
    result = _affected(example_repo)
    assert _paths(result) == [
        ("live/cloud/dns", "modified"),
        ("live/cluster/gitops", "deleted"),
        ("live/cluster/os", "deleted"),
    ]
    gitops = result.units[1]
    assert gitops.tier == "cluster" and gitops.executor == "lan"
    assert gitops.reasons == ("live/cluster/gitops/terragrunt.hcl",)


def test_a_renamed_unit_is_moved_with_moved_from(example_repo: Path) -> None:
    _branch(example_repo)
    git(example_repo, "mv", "live/cloud/registry", "live/cloud/containers")
    commit_all(example_repo, "rename registry")
    result = _affected(example_repo)
    assert _paths(result) == [("live/cloud/containers", "moved")]
    assert result.units[0].moved_from == "live/cloud/registry"


def test_uncommitted_adds_staged_unstaged_and_untracked_changes(example_repo: Path) -> None:
    _branch(example_repo)
    edit(example_repo, "live/cloud/dns/terragrunt.hcl", "ttl = 60", "ttl = 120")  # unstaged
    edit(example_repo, "live/cloud/iam/terragrunt.hcl", '"example-org"', '"example-org-2"')
    git(example_repo, "add", "live/cloud/iam/terragrunt.hcl")  # staged
    shutil.copytree(example_repo / "live/cloud/iam", example_repo / "live/cloud/mail")  # untracked
    assert _affected(example_repo).units == ()
    result = _affected(example_repo, uncommitted=True)
    assert _paths(result) == [
        ("live/cloud/dns", "modified"),
        ("live/cloud/iam", "modified"),
        ("live/cloud/mail", "added"),
    ]
    assert result.uncommitted is True


def test_an_unparseable_unit_is_affected_with_its_error_and_the_others_still_load(
    example_repo: Path,
) -> None:
    _branch(example_repo)
    edit(
        example_repo,
        "live/cloud/iam/terragrunt.hcl",
        'github_org = "example-org"',
        'github_org "example-org"',
    )
    edit(example_repo, "live/cloud/dns/terragrunt.hcl", "ttl = 60", "ttl = 120")
    commit_all(example_repo, "broken iam, changed dns")
    ran = invoke(example_repo, "affected", "--base", "main", "--json")
    # the whole result is printed, then exit 1 naming the parse error (file:line:col)
    assert ran.returncode == 1, ran.stderr
    assert "Traceback" not in ran.stderr
    assert "error: live/cloud/iam/terragrunt.hcl:" in ran.stderr
    units = {u["path"]: u for u in json.loads(ran.stdout)["units"]}
    assert set(units) == {"live/cloud/dns", "live/cloud/iam"}
    assert units["live/cloud/dns"]["error"] is None
    line = next(
        i
        for i, text in enumerate(
            (example_repo / "live/cloud/iam/terragrunt.hcl").read_text().splitlines(), 1
        )
        if 'github_org "' in text
    )
    assert f"live/cloud/iam/terragrunt.hcl:{line}" in units["live/cloud/iam"]["error"]
    # the unit the model cannot read is selected by any change, even one far from it
    git(example_repo, "checkout", "--quiet", "-b", "only-dns", "main")
    edit(
        example_repo,
        "live/cloud/iam/terragrunt.hcl",
        'github_org = "example-org"',
        'github_org "example-org"',
    )
    commit_all(example_repo, "broken iam on main")
    git(example_repo, "branch", "--quiet", "-f", "main", "HEAD")
    with (example_repo / "live/cluster/network/terragrunt.hcl").open("a") as fh:
        fh.write("# a comment\n")
    commit_all(example_repo, "cluster edit")
    text = invoke(example_repo, "affected", "--base", "main")
    assert text.returncode == 1, text.stderr  # listed, then the parse error: exit 1
    assert "live/cloud/iam" in text.stderr + text.stdout
    assert "the model cannot evaluate it" in text.stderr + text.stdout


def test_affected_json_is_the_only_thing_on_stdout(example_repo: Path) -> None:
    _branch(example_repo)
    edit(example_repo, "live/cloud/iam/terragrunt.hcl", "?ref=v1.0.0", "?ref=v1.1.0")
    commit_all(example_repo, "bump iam")
    ran = invoke(example_repo, "affected", "--base", "main", "--json")
    assert ran.returncode == 0, ran.stderr
    doc = json.loads(ran.stdout)
    head = git(example_repo, "rev-parse", "HEAD").strip()
    assert doc["head"] == head and len(doc["base"]) == 40
    assert doc["units"] == [
        {
            "path": "live/cloud/iam",
            "change": "modified",
            "moved_from": None,
            "reasons": ["live/cloud/iam/terragrunt.hcl"],
            "tier": "cloud",
            "executor": "hosted",
            "error": None,
        }
    ]
    assert doc["dependents"] == [
        {
            "path": "live/cloud/registry",
            "via": "live/cloud/iam",
            "tier": "cloud",
            "executor": "hosted",
        }
    ]


def test_units_json_lists_every_unit_with_its_facts(example_repo: Path) -> None:
    ran = invoke(example_repo, "units", "--json")
    assert ran.returncode == 0, ran.stderr
    units = {u["path"]: u for u in json.loads(ran.stdout)["units"]}
    assert len(units) == 7
    vms = units["live/cluster/vms"]
    assert vms["tier"] == "cluster" and vms["executor"] == "lan" and vms["gate"] == "auto"
    assert vms["dependencies"] == ["live/cluster/network"]
    assert vms["ref"] == "v1.1.0"
    assert vms["source"].endswith("terraform-proxmox.git//modules/vm?ref=v1.1.0")
    assert vms["state_key"] == "live/cluster/vms/terraform.tfstate"
    assert set(vms["reads"]) == {
        "live/cluster/vms/terragrunt.hcl",
        "live/cluster/tier.hcl",
        "root.hcl",
    }
    assert units["live/cluster/gitops"]["dependencies"] == ["live/cloud/dns", "live/cluster/os"]


def test_graph_groups_units_by_tier_and_highlights_the_affected_ones(example_repo: Path) -> None:
    _branch(example_repo)
    edit(example_repo, "live/cluster/os/terragrunt.hcl", "?ref=v1.0.0", "?ref=v1.1.0")
    commit_all(example_repo, "bump os")
    ran = invoke(example_repo, "graph", "--affected", "--base", "main")
    assert ran.returncode == 0, ran.stderr
    assert 'subgraph tier_cluster["cluster · lan"]' in ran.stdout
    assert "u_live_cluster_vms --> u_live_cluster_os" in ran.stdout
    assert "class u_live_cluster_os affected" in ran.stdout
    dot = invoke(example_repo, "graph", "--format", "dot")
    assert (
        dot.stdout.startswith("digraph units {")
        and "u_live_cloud_iam -> u_live_cloud_registry;" in dot.stdout
    )


def _history(tmp_path: Path) -> Path:
    """A bare history: ``main`` with one commit, a file in a subfolder."""
    repo = tmp_path / "history"
    (repo / "infra").mkdir(parents=True)
    git(repo, "init", "--quiet", "--initial-branch=main")
    (repo / "infra" / "a.txt").write_text("a\n")
    commit_all(repo, "first")
    return repo


def _apart(repo: Path, *revs: str) -> tuple[str, str, str, str]:
    """What resolve_range answers, asked of git one question at a time."""
    from tooling.io import git as gitio

    base, head, tree = gitio.resolve(repo, *revs)
    return base, head, tree, gitio.merge_base(repo, base, head)


def test_one_rev_parse_resolves_the_revisions_and_their_merge_base_as_apart(
    tmp_path: Path,
) -> None:
    from tooling.io import git as gitio

    repo = _history(tmp_path)
    _branch(repo)
    (repo / "b.txt").write_text("b\n")
    commit_all(repo, "feature")
    git(repo, "checkout", "--quiet", "main")
    (repo / "c.txt").write_text("c\n")
    commit_all(repo, "main moves on")
    git(repo, "checkout", "--quiet", "feature")
    for revs in (("main", "HEAD"), ("HEAD", "main"), ("HEAD", "HEAD"), ("main~1", "feature")):
        assert gitio.resolve_range(repo, *revs) == _apart(repo, *revs)
    assert gitio.resolve_range(repo, "main", "HEAD")[3] == git(repo, "rev-parse", "main~1").strip()


def test_two_merge_bases_are_left_to_git_merge_base(tmp_path: Path) -> None:
    """A criss-cross merge: BASE...HEAD lists both merge bases; git merge-base picks one."""
    from tooling.io import git as gitio

    repo = _history(tmp_path)
    _branch(repo, "x")
    (repo / "x.txt").write_text("x\n")
    commit_all(repo, "x")
    git(repo, "checkout", "--quiet", "main")
    (repo / "m.txt").write_text("m\n")
    commit_all(repo, "m")
    git(repo, "merge", "--quiet", "--no-edit", "x")
    git(repo, "checkout", "--quiet", "x")
    git(repo, "merge", "--quiet", "--no-edit", "main~1")
    bases = git(repo, "merge-base", "--all", "main", "x").split()
    assert len(bases) == 2
    got = gitio.resolve_range(repo, "main", "x")
    assert got == _apart(repo, "main", "x")
    assert got[3] in bases


def test_histories_without_a_common_ancestor_or_an_unknown_base_are_named(
    tmp_path: Path,
) -> None:
    from tooling.errors import ToolingError
    from tooling.io import git as gitio

    repo = _history(tmp_path)
    git(repo, "checkout", "--quiet", "--orphan", "other")
    commit_all(repo, "unrelated")
    with pytest.raises(ToolingError, match="have no common ancestor"):
        gitio.resolve_range(repo, "main", "HEAD")
    with pytest.raises(ToolingError, match="unknown revision 'nosuch'"):
        gitio.resolve_range(repo, "nosuch", "HEAD")
    with pytest.raises(ToolingError, match="is not a revision"):
        gitio.resolve_range(repo, "--all", "HEAD")


def test_the_first_git_question_also_finds_the_prefix(tmp_path: Path) -> None:
    from tooling.io import git as gitio

    repo = _history(tmp_path)
    tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    assert gitio.prefix_and_tree(repo, "HEAD") == ("", tree)
    assert gitio.prefix_and_tree(repo / "infra", "HEAD") == ("infra", tree)
    assert gitio.prefix_and_tree(repo / "infra", "HEAD") == (gitio.prefix(repo / "infra"), tree)
    assert gitio.prefix_and_tree(repo, "nosuch") is None
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "--quiet")
    assert gitio.prefix_and_tree(empty, "HEAD") is None
