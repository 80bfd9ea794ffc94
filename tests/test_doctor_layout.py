"""``invoke doctor`` on repositories laid out otherwise, and the first line of every task.

Real parts only: throwaway git repositories (Gruntwork's live example from the
shared corpus, the example tree with other root files), the real ``invoke``
CLI in a separate process.
"""

from __future__ import annotations

import json
import shutil
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest
from infra_fixtures import REPO, commit_all, git, invoke, make_example_repo
from test_adopt_layouts import iac
from test_crosscheck import CORPUS

from tooling.core.doctor import layout

GRUNTWORK = "terragrunt-infrastructure-live-example"


def _pasted_block(output: str) -> str:
    """The ``[layout]`` block doctor printed (the end of its output, with the
    ``[layout.roots]`` tables that follow it), as a user copies it."""
    lines = output.splitlines()
    return "\n".join(lines[lines.index("[layout]") :]).strip() + "\n"


@pytest.fixture
def gruntwork(tmp_path: Path) -> Path:
    source = CORPUS / GRUNTWORK
    if not source.is_dir():
        pytest.skip(f"{source} is absent: the real-world corpus is kept beside the repository")
    repo = tmp_path / "live-example"
    shutil.copytree(source, repo, ignore=shutil.ignore_patterns(".git"))
    shutil.copy2(REPO / "tasks.py", repo / "tasks.py")  # the tasks, as `invoke` finds them
    git(repo, "init", "--quiet", "--initial-branch=main")
    commit_all(repo, "Gruntwork's live example")
    return repo


def test_doctor_suggests_a_layout_that_pasted_in_finds_every_unit(
    gruntwork: Path, tools: None
) -> None:
    before = invoke(gruntwork, "doctor", "--path", ".")
    assert "needs live: the live folder does not exist" in before.stdout
    block = _pasted_block(before.stdout)
    assert tomllib.loads(block) == {
        "layout": {
            "live": ["non-prod", "prod"],
            "root_file": "root.hcl",
            # each root's state prefix, from root.hcl's key (path_relative_to_include())
            "roots": {
                "non-prod": {"state_prefix": "non-prod/", "tier": "non-prod", "executor": "hosted"},
                "prod": {"state_prefix": "prod/", "tier": "prod", "executor": "hosted"},
            },
        },
        # the executor its units run on, which matrix needs declared
        "executors": {"hosted": {"runs_on": ["ubuntu-latest"]}},
    }

    (gruntwork / "policy.toml").write_text(block, encoding="utf-8")
    after = invoke(gruntwork, "doctor", "--path", ".", "--json")
    doc = json.loads(after.stdout)
    assert doc["units"] == 6
    assert doc["live"] == ["non-prod", "prod"]
    assert not [f for f in doc["findings"] if "live folder" in f["what"]]
    assert doc["suggested_layout"]["live"] == ["non-prod", "prod"]
    # the same block, less the executor now declared
    assert doc["suggested_layout"]["toml"] + "\n" == block.split("\n[executors.")[0]

    units = invoke(gruntwork, "units", "--json")
    assert units.returncode == 0, units.output
    assert len(json.loads(units.stdout)["units"]) == 6


def test_doctor_leaves_out_folders_whose_units_do_not_include_the_root_file(
    tmp_path: Path,
) -> None:
    repo = make_example_repo(tmp_path / "infra")
    fixture = repo / "tests" / "fixture"
    fixture.mkdir(parents=True)
    (fixture / "terragrunt.hcl").write_text('terraform {\n  source = "."\n}\n', encoding="utf-8")

    result = invoke(repo, "doctor", "--json")
    suggested = json.loads(result.stdout)["suggested_layout"]
    assert suggested["live"] == ["live"]
    assert suggested["root_file"] == "root.hcl"
    assert suggested["tiers"] == {"cloud": 3, "cluster": 4}


def test_doctor_names_root_hcl_for_shared_files_when_the_root_file_is_terragrunt_hcl(
    tmp_path: Path,
) -> None:
    repo = make_example_repo(tmp_path / "infra")
    (repo / "root.hcl").rename(repo / "terragrunt.hcl")
    for unit in (repo / "live").glob("*/*/terragrunt.hcl"):
        text = unit.read_text(encoding="utf-8")
        unit.write_text(text.replace('"root.hcl"', '"terragrunt.hcl"'), encoding="utf-8")
    with (repo / "policy.toml").open("a", encoding="utf-8") as policy:
        policy.write('\n[layout]\nroot_file = "terragrunt.hcl"\n')

    result = invoke(repo, "doctor")
    notes = [line for line in result.stdout.splitlines() if "name shared files otherwise" in line]
    assert len(notes) == 7, result.stdout
    assert all("(e.g. root.hcl)" in line for line in notes)
    assert "(e.g. terragrunt.hcl)" not in result.stdout


def test_a_root_file_that_is_no_hcl_marks_the_root(tmp_path: Path, tools: None) -> None:
    """policy.toml [layout] root_file may be any file: a marker nothing includes."""
    repo = tmp_path / "infra"
    (repo / "stacks" / "app").mkdir(parents=True)
    (repo / "stacks" / "app" / "terragrunt.hcl").write_text(
        'terraform {\n  source = "."\n}\n', encoding="utf-8"
    )
    (repo / "stacks" / "app" / "main.tf").write_text("", encoding="utf-8")
    (repo / ".infra-root").write_text("", encoding="utf-8")
    (repo / "policy.toml").write_text(
        '[layout]\nlive = ["stacks"]\nroot_file = ".infra-root"\n', encoding="utf-8"
    )
    shutil.copy2(REPO / ".tool-versions", repo / ".tool-versions")
    shutil.copy2(REPO / "tasks.py", repo / "tasks.py")
    git(repo, "init", "--quiet", "--initial-branch=main")
    commit_all(repo, "a marker file")

    doctor = invoke(repo / "stacks" / "app", "doctor", "--path", str(repo))
    assert doctor.returncode == 0, doctor.output
    assert "1 units under stacks; root file .infra-root" in doctor.stdout
    units = invoke(repo / "stacks" / "app", "units", "--json")
    assert units.returncode == 0, units.output
    assert [u["path"] for u in json.loads(units.stdout)["units"]] == ["stacks/app"]


# --------------------------------------------------------------------------- the first line


S3_ROOT = """\
remote_state {
  backend = "s3"
  config = {
    bucket = "acme-foundation-state"
    key    = "${path_relative_to_include()}/terraform.tfstate"
    region = "eu-west-1"
  }
}
"""


def test_the_embedded_default_is_announced_only_where_it_applies(tmp_path: Path) -> None:
    example = make_example_repo(tmp_path / "example")
    ours = invoke(example, "units")
    assert ours.returncode == 0, ours.output
    assert ours.stderr.splitlines()[0].endswith("(embedded default)")

    adopted = make_example_repo(tmp_path / "adopted")
    (adopted / "root.hcl").write_text(S3_ROOT, encoding="utf-8")
    commit_all(adopted, "state in S3, as root.hcl declares")
    theirs = invoke(adopted, "units")
    assert theirs.returncode == 0, theirs.output
    first = theirs.stderr.splitlines()[0]
    assert "embedded default" not in first
    assert "local state" not in first
    assert "the state backend root.hcl declares" in first


def test_the_sandbox_catalog_is_not_claimed_for_modules_it_does_not_have(
    tmp_path: Path,
) -> None:
    repo = make_example_repo(tmp_path / "infra")
    for unit in (repo / "live").glob("*/*/terragrunt.hcl"):
        text = unit.read_text(encoding="utf-8")
        unit.write_text(
            text.replace("platform-modules/terraform-", "platform-modules/elsewhere-"),
            encoding="utf-8",
        )
    commit_all(repo, "modules the catalog does not have")
    result = invoke(repo, "units")
    assert result.returncode == 0, result.output
    first = result.stderr.splitlines()[0]
    assert "sandbox module catalog" not in first
    assert "none is in the sandbox catalog" in first


def test_live_folders_are_the_top_level_folders_holding_units() -> None:
    files = ["root.hcl", "prod/eu/app/terragrunt.hcl", "dev/app/terragrunt.hcl", "README.md"]
    assert layout.live_folders(files) == ("dev", "prod")
    assert layout.root_file(files) == "root.hcl"
    assert layout.root_file(["common.hcl", "x/terragrunt.hcl"], ["common.hcl"]) == "common.hcl"
    assert layout.root_file(["x/terragrunt.hcl"]) is None
    toml = layout.suggest(["x/terragrunt.hcl"]).toml()
    assert tomllib.loads(toml) == {"layout": {"live": ["x"], "root_file": "root.hcl"}}
    assert "create it" in toml


@pytest.mark.parametrize(
    ("roots", "units", "expected"),
    [
        # a dependency and a file read across roots; a read outside every root is no reach
        (
            ("app", "core"),
            [("app/web", ["core/net", "shared/x.hcl"]), ("core/net", ["core/dns"])],
            (("app", ("app", "core")),),
        ),
        (
            ("app", "core", "ops"),
            [("app/web", ["core/net/"]), ("ops/a", ["app/web", "core/x"])],
            (("app", ("app", "core")), ("ops", ("ops", "app", "core"))),
        ),
        (("app", "core"), [("app/web", ["app/db"]), ("core/net", [])], ()),
        # the longest root holds a path: a nested root is a root of its own
        (("core", "core/eu"), [("core/eu/a", ["core/b"])], (("core/eu", ("core/eu", "core")),)),
    ],
)
def test_each_root_may_depend_on_the_roots_its_units_reach(
    roots: tuple[str, ...], units: list[tuple[str, list[str]]], expected: object
) -> None:
    assert layout.root_dependencies(roots, units) == expected


@pytest.mark.parametrize(
    ("live", "keys", "prefix"),
    [
        (
            ["app", "core"],
            [("app/web", "terraform/app/web.tfstate"), ("core/n", "terraform/x")],
            "terraform/",
        ),
        # check's default holds: each key under its own live folder
        (["app", "core"], [("app/web", "app/web/tf.state"), ("core/n", "core/n/tf.state")], None),
        (["live"], [("live/a", "live/a/t"), ("live/b", "other/b/t")], None),  # no common folder
        (["live"], [("live/a", "apps/a/t")], None),  # the app tier's prefix is never suggested
        (["live"], [("live/a", "a.tfstate")], None),  # a key with no folder
        (["."], [("a", "terraform/a")], None),  # "." keys state by the unit's path alone
        (["live"], [], None),
    ],
)
def test_the_state_prefix_suggested_is_the_folder_every_key_starts_with(
    live: list[str], keys: list[tuple[str, str]], prefix: str | None
) -> None:
    assert layout.common_state_prefix(live, keys) == prefix


def test_the_suggested_prefix_and_dependencies_print_as_policy_toml_reads_them() -> None:
    found = layout.Suggestion(
        ("app", "core"),
        "root.hcl",
        roots=(("app", "app/", "hosted"), ("core", "core/", "hosted")),
        depends=(("app", ("app", "core")),),
    )
    assert tomllib.loads(found.toml())["layout"]["roots"] == {
        "app": {
            "state_prefix": "app/",
            "tier": "app",
            "executor": "hosted",
            "may_depend_on": ["app", "core"],
        },
        "core": {"state_prefix": "core/", "tier": "core", "executor": "hosted"},
    }
    assert found.to_json()["roots"]["app"]["may_depend_on"] == ["app", "core"]  # type: ignore[index]
    prefixed = layout.Suggestion(("live",), "root.hcl", state_prefix="terraform/")
    assert tomllib.loads(prefixed.toml())["check"] == {"foundation_state_prefix": "terraform/"}
    assert prefixed.to_json()["foundation_state_prefix"] == "terraform/"
    added = replace(prefixed, check_declared=True)
    assert "check" not in tomllib.loads(added.toml()) and "foundation_state_prefix" in added.toml()


def test_the_file_a_unit_includes_is_read_from_its_text_too() -> None:
    texts = [
        'include "root" {\n  path = find_in_parent_folders("main.hcl")\n}\n'
        'locals {\n  a = read_terragrunt_config(find_in_parent_folders("account.hcl"))\n}\n',
        'include {\n  path = "${find_in_parent_folders("common.hcl")}"\n}\n',
        "include {\n  path = find_in_parent_folders()\n}\n",
    ]
    assert layout.parent_file_names(texts) == {"main.hcl", "common.hcl"}


def test_doctor_names_the_root_file_units_include_when_the_model_cannot_evaluate_them(
    tmp_path: Path,
) -> None:
    """The units include ``main.hcl``, which reads a file a setup step creates: doctor
    names ``main.hcl`` as the root file, not a ``root.hcl`` to create."""
    repo = tmp_path / "org"
    (repo / "acct" / "net").mkdir(parents=True)
    (repo / "main.hcl").write_text(
        'locals {\n  config = yamldecode(file(find_in_parent_folders("config.yaml")))\n}\n'
    )
    (repo / "acct" / "net" / "terragrunt.hcl").write_text(
        'include "root" {\n  path = find_in_parent_folders("main.hcl")\n}\n'
    )
    git(repo, "init", "--quiet", "--initial-branch=main")
    commit_all(repo, "units include main.hcl")
    doc = json.loads(iac(repo, "doctor", "--json").stdout)
    assert doc["suggested_layout"]["root_file"] == "main.hcl", doc
    assert "create it" not in doc["suggested_layout"]["toml"]
