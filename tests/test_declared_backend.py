"""State where the repository's backend puts it: a root file declaring its own backend
(`remote_state`, any type) is what `move-unit`, a deleted unit's destroy plan, the
state-key rule and the working-copy backend check go through, with paths resolved where
Terragrunt resolves them (never inside a tool-made worktree).

Real git, terragrunt and tofu; moto's S3 on loopback.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from infra_fixtures import (
    apply_unit,
    bucket_keys,
    commit_all,
    git,
    invoke,
    plan_one,
    read_summary,
    units_by_path,
)

from tooling.commands import move as moving

pytestmark = pytest.mark.e2e

OLD, NEW = "live/cloud/dns", "live/cloud/zone"

TOOLING_BACKEND = """generate "backend" {
  path      = "backend.tf"
  if_exists = "overwrite_terragrunt"
  contents  = local.state_bucket == "" ? local.backend_local : local.backend_s3
}"""

#: a local backend whose path is the repository's (not .iac/state/, not IAC_STATE_DIR)
REPO_LOCAL = """remote_state {
  backend  = "local"
  generate = { path = "backend.tf", if_exists = "overwrite_terragrunt" }
  config   = { path = "${get_repo_root()}/state/${path_relative_to_include()}/terraform.tfstate" }
}"""


def _s3_backend(bucket: str, endpoint: str) -> str:
    return f"""remote_state {{
  backend      = "s3"
  disable_init = true
  generate     = {{ path = "backend.tf", if_exists = "overwrite_terragrunt" }}
  config = {{
    bucket                      = "{bucket}"
    key                         = "own/${{path_relative_to_include()}}/tf.state"
    region                      = "us-east-1"
    endpoints                   = {{ s3 = "{endpoint}" }}
    use_path_style              = true
    skip_credentials_validation = true
    skip_requesting_account_id  = true
    skip_metadata_api_check     = true
    skip_region_validation      = true
    use_lockfile                = true
  }}
}}"""


def declare_backend(root: Path, block: str) -> None:
    """Make the project root's root.hcl declare its own backend instead of the tooling's."""
    text = (root / "root.hcl").read_text()
    assert TOOLING_BACKEND in text
    (root / "root.hcl").write_text(text.replace(TOOLING_BACKEND, block))
    with (root / ".gitignore").open("a") as ignore:
        ignore.write("state/\n")


def _state(repo: Path, unit: str) -> Path:
    return repo / "state" / unit / "terraform.tfstate"


# --------------------------------------------------------------------------- move-unit


def test_move_unit_moves_the_state_of_a_local_backend_the_root_file_declares(
    example_repo: Path, tmp_path: Path
) -> None:
    declare_backend(example_repo, REPO_LOCAL)
    commit_all(example_repo, "state under state/, declared by root.hcl")
    apply_unit(example_repo, OLD, tmp_path / "a1")
    before = _state(example_repo, OLD).read_bytes()
    assert '"terraform_data"' in before.decode() or b'"resources"' in before
    assert not (example_repo / ".iac" / "state").exists()

    ran = invoke(example_repo, "move-unit", OLD, NEW)
    assert ran.returncode == 0, ran.output
    assert "never applied" not in ran.stderr
    assert _state(example_repo, NEW).read_bytes() == before
    assert not _state(example_repo, OLD).exists(), "the old path must not keep live state"
    assert (
        _state(example_repo, OLD).with_name("terraform.tfstate" + moving.BACKUP_SUFFIX).read_bytes()
        == before
    )
    assert f"state/{NEW}/terraform.tfstate" in ran.stderr

    result: Any = plan_one(example_repo, NEW, tmp_path / "after")
    assert result.status == "no-changes", result.error


def test_move_unit_moves_the_state_of_an_s3_backend_the_root_file_declares(
    example_repo: Path, tmp_path: Path, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import boto3

    s3 = boto3.client("s3", endpoint_url=aws_env["AWS_ENDPOINT_URL"], region_name="us-east-1")
    bucket = f"own-{tmp_path.name}".lower().replace("_", "-")[:60]
    s3.create_bucket(Bucket=bucket)
    declare_backend(example_repo, _s3_backend(bucket, aws_env["AWS_ENDPOINT_URL"]))
    # the endpoint is the root file's alone: nothing else points a client at it
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    commit_all(example_repo, "state in the repository's own bucket")
    apply_unit(example_repo, OLD, tmp_path / "a1")
    old_key, new_key = f"own/{OLD}/tf.state", f"own/{NEW}/tf.state"
    before = s3.get_object(Bucket=bucket, Key=old_key)["Body"].read()

    ran = invoke(example_repo, "move-unit", OLD, NEW)
    assert ran.returncode == 0, ran.output
    assert f"s3://{bucket}/{new_key}" in ran.stderr
    assert bucket_keys(s3, bucket) == {new_key, old_key + moving.BACKUP_SUFFIX}
    assert s3.get_object(Bucket=bucket, Key=new_key)["Body"].read() == before
    assert not (example_repo / ".iac" / "state").exists()

    result: Any = plan_one(example_repo, NEW, tmp_path / "after")
    assert result.status == "no-changes", result.error


# --------------------------------------------------------------------------- the state-key rule


def _check(root: Path) -> list[dict[str, Any]]:
    ran = invoke(root, "check", "--json")
    violations: list[dict[str, Any]] = json.loads(ran.stdout)["violations"]
    return violations


def test_the_state_key_rule_takes_a_local_path_and_a_gcs_prefix_and_names_a_real_fix(
    example_repo: Path,
) -> None:
    declare_backend(example_repo, REPO_LOCAL)
    # no state_key local either: remote_state alone names each unit's state
    text = (example_repo / "root.hcl").read_text()
    text = text.replace("state_key    =", "unit_key     =").replace(
        "local.state_key", "local.unit_key"
    )
    (example_repo / "root.hcl").write_text(text)
    assert [v["rule"] for v in _check(example_repo)] == []

    gcs = """remote_state {
  backend  = "gcs"
  generate = { path = "backend.tf", if_exists = "overwrite_terragrunt" }
  config   = { bucket = "tf-state", prefix = "live/${path_relative_to_include()}" }
}"""
    text = (example_repo / "root.hcl").read_text()
    (example_repo / "root.hcl").write_text(text.replace(REPO_LOCAL, gcs))
    assert [v["rule"] for v in _check(example_repo)] == []

    nothing = """remote_state {
  backend  = "gcs"
  generate = { path = "backend.tf", if_exists = "overwrite_terragrunt" }
  config   = { bucket = "tf-state" }
}"""
    (example_repo / "root.hcl").write_text(text.replace(REPO_LOCAL, nothing))
    found = _check(example_repo)
    assert found and {v["rule"] for v in found} == {"state-key-missing"}
    fix = found[0]["fix"]
    assert "prefix = " in fix and "include root.hcl" not in fix, fix


# --------------------------------------------------------------------------- a deleted unit


def _plan(root: Path, out: Path, *args: str) -> dict[str, Any]:
    ran = invoke(root, "plan", "--out", str(out), *args)
    assert ran.returncode in (0, 1), ran.output
    return read_summary(out)


def _apply(root: Path, out: Path, *args: str) -> tuple[int, dict[str, dict[str, Any]], str]:
    ran = invoke(root, "apply", "--plans", str(out), *args)
    path = out / "apply.json"
    doc = json.loads(path.read_text()) if path.exists() else {"units": []}
    return ran.returncode, {u["path"]: u for u in doc["units"]}, ran.output


def _destroyed_with_approval(root: Path, unit: str, state: Path, out: Path) -> None:
    """`plan --base main` plans the deleted unit's destroy (its resources listed, gate
    manual); apply waits, then with approval destroys them in the state at ``state``."""
    summary = _plan(root, out, "--base", "main")
    planned = units_by_path(summary)[unit]
    assert planned["status"] == "changes", planned
    assert planned["destroy"] is True and planned["gate"]["decision"] == "manual", planned
    assert planned["counts"]["delete"] >= 1, planned
    code, results, output = _apply(root, out)
    assert code == 0 and results[unit]["result"] == "waiting-approval", output
    assert '"terraform_data"' in state.read_text()
    code, results, output = _apply(root, out, "--approve-manual")
    assert code == 0 and results[unit]["result"] == "applied", output
    assert '"terraform_data"' not in state.read_text(), "every resource destroyed"


def test_a_deleted_unit_whose_local_state_is_the_repositorys_is_destroyed_not_left_behind(
    example_repo: Path, tmp_path: Path
) -> None:
    declare_backend(example_repo, REPO_LOCAL)
    shutil.copytree(example_repo / "live/cloud/iam", example_repo / "live/cloud/legacy")
    commit_all(example_repo, "a legacy unit, state under state/")
    apply_unit(example_repo, "live/cloud/legacy", tmp_path / "a1")
    git(example_repo, "checkout", "--quiet", "-b", "retire")
    git(example_repo, "rm", "-r", "--quiet", "live/cloud/legacy")
    commit_all(example_repo, "retire legacy")
    state = _state(example_repo, "live/cloud/legacy")
    _destroyed_with_approval(example_repo, "live/cloud/legacy", state, tmp_path / "plans")
    assert not list((example_repo / ".iac").rglob("*.tfstate")), "no state in the tooling's folder"


def test_a_deleted_unit_in_a_sub_folder_project_root_is_destroyed_from_its_base_revision(
    tmp_path: Path, tools: None
) -> None:
    from infra_fixtures import make_example_repo

    top = tmp_path / "mono"
    top.mkdir()
    example = make_example_repo(tmp_path / "example")
    shutil.rmtree(example / ".git")
    shutil.copytree(example, top / "infra")
    (top / "README.md").write_text("the company's monorepo\n")
    git(top, "init", "--quiet", "--initial-branch=main")
    infra = top / "infra"
    shutil.copytree(infra / "live/cloud/iam", infra / "live/cloud/legacy")
    commit_all(top, "infrastructure in infra/, with a legacy unit")
    apply_unit(infra, "live/cloud/legacy", tmp_path / "a1")
    git(top, "checkout", "--quiet", "-b", "retire")
    git(top, "rm", "-r", "--quiet", "infra/live/cloud/legacy")
    commit_all(top, "retire legacy")
    state = infra / ".iac/state/live/cloud/legacy/terraform.tfstate"
    _destroyed_with_approval(infra, "live/cloud/legacy", state, tmp_path / "plans")


# --------------------------------------------------------------------------- the backend comparison


def test_a_working_copy_is_compared_with_the_backend_the_root_file_declares(
    example_repo: Path, tmp_path: Path, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from infra_fixtures import s3_state_bucket

    declare_backend(example_repo, REPO_LOCAL)
    commit_all(example_repo, "state under state/, declared by root.hcl")
    first = invoke(example_repo, "plan", "--unit", OLD, "--out", str(tmp_path / "a"))
    assert first.returncode == 0, first.output
    # IAC_STATE_BUCKET set in the same checkout: the root file still declares local state,
    # so the working copy initialised with it is the right one
    s3_state_bucket(monkeypatch, aws_env, f"unused-{tmp_path.name}")
    again = invoke(example_repo, "plan", "--unit", OLD, "--out", str(tmp_path / "b"))
    assert again.returncode == 0, again.output
    assert "initialised with the" not in again.stderr
    assert units_by_path(read_summary(tmp_path / "b"))[OLD]["status"] == "changes"

    # the declared backend changes type: the old working copy is refused, naming the new one
    text = (example_repo / "root.hcl").read_text()
    bucket = f"own-{tmp_path.name}".lower().replace("_", "-")[:60]
    import boto3

    boto3.client(
        "s3", endpoint_url=aws_env["AWS_ENDPOINT_URL"], region_name="us-east-1"
    ).create_bucket(Bucket=bucket)
    (example_repo / "root.hcl").write_text(
        text.replace(REPO_LOCAL, _s3_backend(bucket, aws_env["AWS_ENDPOINT_URL"]))
    )
    refused = invoke(example_repo, "plan", "--unit", OLD, "--out", str(tmp_path / "c"))
    assert refused.returncode == 1, refused.output
    assert f"{OLD}: its working copy was initialised with the local state backend" in refused.stderr
    assert f"the s3 backend (own/{OLD}/tf.state)" in refused.stderr
