"""The working-copy rule: right before each OpenTofu command, a unit's working copy holds
exactly the pinned module's files plus root.hcl's generated files (docs/rules.md,
"working-copy"), as the guard checks it. Real terragrunt, tofu and git."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from infra_fixtures import Invoked, commit_all, git, invoke, read_summary, units_by_path

from tooling.core.rules import workcopy
from tooling.model import hcl

DNS = "live/cloud/dns"
IAM = "live/cloud/iam"
MOVING = "https://git.example.com/test-modules/terraform-moving.git"
EVIL = 'resource "terraform_data" "smuggled" {\n  input = "not in the module"\n}\n'


# -- the pure parts (the comparison itself is the guard's: tooling/guard/main_test.go,
# run by tests/test_guard.py)


def test_root_hcl_declares_its_generated_file_names_and_only_literal_ones() -> None:
    body = hcl.parse(
        b'generate "backend" {\n  path = "backend.tf"\n  contents = ""\n}\n'
        b'generate "c" {\n  path = "${local.x}.tf"\n  contents = ""\n}\n'
        b'generate "d" {\n  path = "../up.tf"\n  contents = ""\n}\n',
        "root.hcl",
    )
    assert workcopy.declared_generated(body) == frozenset({"backend.tf"})


def test_a_committed_terragrunt_cache_names_its_unit_and_the_fix() -> None:
    tracked = [f"{DNS}/.terragrunt-cache/a/b/main.tf", "live/cloud/dnsx/.terragrunt-cache/x"]
    got = workcopy.committed_caches([DNS, IAM, "live/cloud/dnsx"], tracked)
    assert sorted(got) == [DNS, "live/cloud/dnsx"]
    assert got[DNS].startswith(f"{DNS}/.terragrunt-cache/a/b/main.tf:1: working-copy: ")
    assert f"git rm -r --cached {DNS}/.terragrunt-cache" in got[DNS]


def test_a_hook_labelled_like_the_check_is_found_with_its_line() -> None:
    body = hcl.parse(
        b'terraform {\n  source = "x"\n  after_hook "other" {\n    commands = ["plan"]\n'
        b'    execute = ["true"]\n  }\n  before_hook "iac_working_copy" {\n'
        b'    commands = ["plan"]\n    execute = ["true"]\n  }\n}\n',
        "terragrunt.hcl",
    )
    assert workcopy.hook_overrides(body) == [7]


def test_the_expectations_blob_hash_is_the_models() -> None:
    for data in (b"", b"resource {}\n", bytes(range(256))):
        assert workcopy.blob_sha(data) == hcl.blob_sha(data)


# -- end to end


def _working_copy(repo: Path, unit: str) -> Path:
    [main] = [
        p for p in (repo / unit / ".terragrunt-cache").rglob("main.tf") if ".git" not in p.parts
    ]
    return main.parent


def _plan(repo: Path, out: Path, *units: str) -> Invoked:
    args = [a for u in units for a in ("--unit", u)]
    return invoke(repo, "plan", *args, "--jobs", "2", "--out", str(out))


def test_two_consecutive_plans_keep_the_module_files_and_say_nothing_of_stale_files(
    example_repo: Path, tmp_path: Path
) -> None:
    first = invoke(example_repo, "plan", "--unit", DNS, "--out", str(tmp_path / "a"))
    assert first.returncode == 0, first.output
    copy = _working_copy(example_repo, DNS)
    module_files = sorted(p.name for p in copy.glob("*.tf"))
    second = invoke(example_repo, "plan", "--unit", DNS, "--out", str(tmp_path / "b"))
    assert second.returncode == 0, second.output
    assert "from its working copy" not in second.output
    assert sorted(p.name for p in copy.glob("*.tf")) == module_files
    assert {"main.tf", "variables.tf", "backend.tf"} <= set(module_files)


@pytest.mark.parametrize(
    ("name", "text", "units"),
    [
        ("extra.tf", EVIL, (DNS,)),
        ("extra.tf", EVIL, (DNS, IAM)),
        ("extra.tofu", EVIL, (DNS,)),
        ("smuggled_override.tf.json", '{"resource": {"terraform_data": {"smuggled": {}}}}', (DNS,)),
        ("smuggled.auto.tfvars", 'zone_name = "smuggled.example"\n', (DNS, IAM)),
    ],
    ids=["tf-per-unit", "tf-batch", "tofu", "override-json", "auto-tfvars-batch"],
)
def test_plan_refuses_opentofu_files_beside_a_units_terragrunt_hcl(
    example_repo: Path, tmp_path: Path, name: str, text: str, units: tuple[str, ...]
) -> None:
    (example_repo / DNS / name).write_text(text)
    commit_all(example_repo, f"a stray {name} beside the unit")
    out = tmp_path / "out"
    ran = _plan(example_repo, out, *units)
    assert ran.returncode == 1, ran.output
    by_path = units_by_path(read_summary(out))
    dns = by_path[DNS]
    assert dns["status"] == "error"
    assert f"{DNS}/{name}:1: working-copy: OpenTofu code beside terragrunt.hcl" in str(
        dns["error"]
    ), dns["error"]
    assert not (out / "units" / DNS / "plan.tfplan").exists()
    comment = (out / "comment.md").read_text()
    assert "terraform_data.smuggled" not in comment and "smuggled.example" not in comment
    # OpenTofu never read it: refused before init, not by OpenTofu's own error
    assert "Error: " not in str(dns["error"]), dns["error"]
    if IAM in units:  # other units go on
        assert by_path[IAM]["status"] in ("changes", "no-changes"), by_path[IAM]


def test_a_units_hook_labelled_like_root_hcls_check_is_refused(
    example_repo: Path, tmp_path: Path
) -> None:
    unit = example_repo / DNS / "terragrunt.hcl"
    # in the unit's one terraform block (a second block is refused as HCL before this rule)
    hook = '  before_hook "iac_working_copy" {\n    commands = ["plan"]\n    execute  = ["true"]\n  }\n'
    text = unit.read_text()
    assert text.count("terraform {\n") == 1
    unit.write_text(text.replace("terraform {\n", "terraform {\n" + hook, 1))
    (example_repo / DNS / "extra.tf").write_text(EVIL)
    commit_all(example_repo, "a unit replacing the check, and code beside it")
    out = tmp_path / "out"
    ran = _plan(example_repo, out, DNS, IAM)
    assert ran.returncode == 1, ran.output
    by_path = units_by_path(read_summary(out))
    assert "a hook labelled iac_working_copy replaces root.hcl's" in str(by_path[DNS]["error"])
    assert str(by_path[DNS]["error"]).startswith(f"{DNS}/terragrunt.hcl:")
    assert by_path[IAM]["status"] in ("changes", "no-changes"), by_path[IAM]
    assert "terraform_data.smuggled" not in (out / "comment.md").read_text()


def test_code_committed_under_a_units_terragrunt_cache_is_refused_not_planned(
    example_repo: Path, tmp_path: Path
) -> None:
    first = invoke(example_repo, "plan", "--unit", DNS, "--out", str(tmp_path / "a"))
    assert first.returncode == 0, first.output
    copy = _working_copy(example_repo, DNS)
    main = copy / "main.tf"
    tampered = main.read_text() + EVIL
    main.unlink()  # never through a link Terragrunt may share with its content store
    main.write_text(tampered)
    git(example_repo, "add", "--force", f"{DNS}/.terragrunt-cache")
    commit_all(example_repo, "a working copy committed with the repository")
    # CI checks the commit out afresh, at the same path
    origin = example_repo.parent / f"{example_repo.name}-origin.git"
    git(example_repo, "push", "--quiet", "origin", "main")
    shutil.rmtree(example_repo)
    git(example_repo.parent, "clone", "--quiet", str(origin), str(example_repo))
    assert "smuggled" in (_working_copy(example_repo, DNS) / "main.tf").read_text()
    out = tmp_path / "b"
    ran = invoke(example_repo, "plan", "--unit", DNS, "--out", str(out))
    assert ran.returncode == 1, ran.output
    dns = units_by_path(read_summary(out))[DNS]
    assert dns["status"] == "error"
    assert f"working-copy: {DNS}/.terragrunt-cache is committed to git" in str(dns["error"])
    assert f"git rm -r --cached {DNS}/.terragrunt-cache" in str(dns["error"])
    assert not (out / "units" / DNS / "plan.tfplan").exists()
    assert "terraform_data.smuggled" not in (out / "comment.md").read_text()


def test_a_module_file_changed_in_a_reused_working_copy_is_refused_before_opentofu_runs(
    example_repo: Path, tmp_path: Path
) -> None:
    first = invoke(example_repo, "plan", "--unit", DNS, "--out", str(tmp_path / "a"))
    assert first.returncode == 0, first.output
    main = _working_copy(example_repo, DNS) / "main.tf"
    tampered = main.read_text() + EVIL
    main.unlink()  # never through a link Terragrunt may share with its content store
    main.write_text(tampered)
    out = tmp_path / "b"
    ran = invoke(example_repo, "plan", "--unit", DNS, "--out", str(out))
    assert ran.returncode == 1, ran.output
    error = str(units_by_path(read_summary(out))[DNS]["error"])
    assert "working-copy: main.tf in the working copy differs from" in error, error
    assert f"delete {DNS}/.terragrunt-cache and plan again" in error
    assert not (out / "units" / DNS / "plan.tfplan").exists()


def _module_repo(where: Path) -> Path:
    repo = where / "mod.git-work"
    repo.mkdir(parents=True)
    git(repo, "init", "--quiet", "--initial-branch=main")
    (repo / "main.tf").write_text('resource "terraform_data" "first" {\n  input = "v1"\n}\n')
    commit_all(repo, "v1")
    git(repo, "tag", "v1.0.0")
    return repo


def test_a_working_copy_of_another_commit_than_the_tag_names_is_refused(
    example_repo: Path, tmp_path: Path
) -> None:
    module = _module_repo(tmp_path / "modules")
    unit = example_repo / "live/cloud/pinned"
    unit.mkdir()
    (unit / "terragrunt.hcl").write_text(
        'include "root" {\n  path = find_in_parent_folders("root.hcl")\n}\n\n'
        f'terraform {{\n  source = "git::{MOVING}?ref=v1.0.0"\n}}\n'
    )
    commit_all(example_repo, "a unit pinned to a module repository whose tag will move")
    env = {"IAC_MODULE_REWRITE": f"{MOVING}={module.as_uri()}"}
    first = invoke(
        example_repo, "plan", "--unit", "live/cloud/pinned", "--out", str(tmp_path / "a"), env=env
    )
    assert first.returncode == 0, first.output
    # the tag moves to another commit; Terragrunt keeps the copy it fetched (same source)
    (module / "main.tf").write_text('resource "terraform_data" "second" {\n  input = "v2"\n}\n')
    commit_all(module, "v2")
    git(module, "tag", "--force", "v1.0.0")
    moved = git(module, "rev-parse", "v1.0.0^{commit}").strip()
    out = tmp_path / "b"
    ran = invoke(example_repo, "plan", "--unit", "live/cloud/pinned", "--out", str(out), env=env)
    assert ran.returncode == 1, ran.output
    error = str(units_by_path(read_summary(out))["live/cloud/pinned"]["error"])
    assert "working-copy" in error and f"(commit {moved})" in error
    assert not (out / "units/live/cloud/pinned/plan.tfplan").exists()


def test_apply_refuses_a_working_copy_changed_after_the_plan_and_applies_the_rest(
    example_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "plans"
    planned = _plan(example_repo, out, DNS, IAM)
    assert planned.returncode == 0, planned.output
    main = _working_copy(example_repo, DNS) / "main.tf"
    tampered = main.read_text() + EVIL
    main.unlink()
    main.write_text(tampered)
    ran = invoke(example_repo, "apply", "--plans", str(out), "--approve-manual")
    assert ran.returncode == 1, ran.output
    record = {u["path"]: u for u in json.loads((out / "apply.json").read_text())["units"]}
    assert record[DNS]["result"] == "failed", record[DNS]
    assert "working-copy: main.tf in the working copy differs from" in record[DNS]["reason"]
    assert record[IAM]["result"] == "applied"  # independent units continue
    assert not (example_repo / ".iac/state" / DNS / "terraform.tfstate").exists()
