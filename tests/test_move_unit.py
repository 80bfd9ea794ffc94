"""`invoke move-unit OLD NEW`: the folder and its state move together (local and S3 backends),
a plan of the moved unit shows no changes, a used key is never overwritten, and
`invoke plan` blocks a moved unit only while its state waits at the old key.

Real terragrunt, tofu and git; moto's S3 on loopback.
"""

from __future__ import annotations

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
    s3_state_bucket,
    units_by_path,
)

from tooling.commands import move as moving
from tooling.engine.plan import moves
from tooling.io import config
from tooling.model.repo import load
from tooling.model.trees import WorkTree

pytestmark = pytest.mark.e2e

OLD, NEW = "live/cloud/dns", "live/cloud/zone"
OLD_KEY, NEW_KEY = f"{OLD}/terraform.tfstate", f"{NEW}/terraform.tfstate"


def _local(repo: Path, key: str) -> Path:
    return repo / ".iac" / "state" / key


def _body(s3: Any, bucket: str, key: str) -> bytes:
    data: bytes = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    return data


def test_local_state_moves_with_the_folder_and_the_moved_unit_plans_clean(
    example_repo: Path, tmp_path: Path
) -> None:
    apply_unit(example_repo, OLD, tmp_path / "a1")
    before = _local(example_repo, OLD_KEY).read_bytes()

    ran = invoke(example_repo, "move-unit", OLD, NEW)
    assert ran.returncode == 0, ran.output
    assert _local(example_repo, NEW_KEY).read_bytes() == before
    assert not _local(example_repo, OLD_KEY).exists(), "the old key must not keep live state"
    backup = _local(example_repo, OLD_KEY + moving.BACKUP_SUFFIX)
    assert backup.read_bytes() == before
    status = git(example_repo, "status", "--porcelain")
    assert f"R  {OLD}/terragrunt.hcl -> {NEW}/terragrunt.hcl" in status
    assert not (example_repo / OLD).exists()
    # gitops reads dns's outputs: the command says which file to update
    assert "live/cluster/gitops/terragrunt.hcl:26 still depends on live/cloud/dns" in ran.stderr

    result: Any = plan_one(example_repo, NEW, tmp_path / "after")
    assert result.status == "no-changes", result.error

    # in a pull request, the moved unit is plannable (its state was migrated) and shows no changes
    git(example_repo, "checkout", "--quiet", "-b", "rename-dns")
    commit_all(example_repo, "rename dns to zone")
    planned = invoke(example_repo, "plan", "--base", "main", "--out", str(tmp_path / "pr"))
    summary = units_by_path(read_summary(tmp_path / "pr"))
    assert summary[NEW]["change"] == "moved", planned.output
    assert summary[NEW]["status"] == "no-changes", summary[NEW]

    removed = invoke(example_repo, "move-unit", OLD, NEW, "--remove-backup")
    assert removed.returncode == 0, removed.output
    assert not backup.exists()
    assert _local(example_repo, NEW_KEY).read_bytes() == before


def test_a_move_onto_a_key_that_holds_state_is_refused_and_changes_nothing(
    example_repo: Path, tmp_path: Path
) -> None:
    apply_unit(example_repo, OLD, tmp_path / "a1")
    before = _local(example_repo, OLD_KEY).read_bytes()
    occupant = _local(example_repo, NEW_KEY)
    occupant.parent.mkdir(parents=True)
    occupant.write_text('{"version": 4, "serial": 7, "lineage": "someone-else"}\n')

    ran = invoke(example_repo, "move-unit", OLD, NEW)
    assert ran.returncode == 1
    assert "already holds state" in ran.stderr and "Traceback" not in ran.output
    assert occupant.read_text().startswith('{"version": 4, "serial": 7')
    assert _local(example_repo, OLD_KEY).read_bytes() == before
    assert (example_repo / OLD / "terragrunt.hcl").exists() and not (example_repo / NEW).exists()
    assert git(example_repo, "status", "--porcelain") == ""


def test_s3_state_moves_with_the_folder_and_the_moved_unit_plans_clean(
    example_repo: Path, tmp_path: Path, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    s3, bucket = s3_state_bucket(monkeypatch, aws_env, f"move-{tmp_path.name}")
    apply_unit(example_repo, OLD, tmp_path / "a1")
    before = _body(s3, bucket, OLD_KEY)

    ran = invoke(example_repo, "move-unit", OLD, NEW)
    assert ran.returncode == 0, ran.output
    assert f"s3://{bucket}/{NEW_KEY}" in ran.stderr
    assert bucket_keys(s3, bucket) == {NEW_KEY, OLD_KEY + moving.BACKUP_SUFFIX}
    assert _body(s3, bucket, NEW_KEY) == before
    assert _body(s3, bucket, OLD_KEY + moving.BACKUP_SUFFIX) == before
    assert not (example_repo / ".iac" / "state").exists(), "S3 state must not be written locally"

    result: Any = plan_one(example_repo, NEW, tmp_path / "after")
    assert result.status == "no-changes", result.error

    assert invoke(example_repo, "move-unit", OLD, NEW, "--remove-backup").returncode == 0
    assert bucket_keys(s3, bucket) == {NEW_KEY}


def test_s3_refuses_a_target_key_that_holds_state(
    example_repo: Path, tmp_path: Path, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    s3, bucket = s3_state_bucket(monkeypatch, aws_env, f"move-{tmp_path.name}")
    apply_unit(example_repo, OLD, tmp_path / "a1")
    s3.put_object(Bucket=bucket, Key=NEW_KEY, Body=b'{"version": 4, "lineage": "someone-else"}')

    ran = invoke(example_repo, "move-unit", OLD, NEW)
    assert ran.returncode == 1
    assert f"s3://{bucket}/{NEW_KEY} already holds state" in ran.stderr
    assert _body(s3, bucket, NEW_KEY) == b'{"version": 4, "lineage": "someone-else"}'
    assert OLD_KEY in bucket_keys(s3, bucket)
    assert (example_repo / OLD / "terragrunt.hcl").exists()


def test_a_hand_moved_unit_is_blocked_until_move_unit_migrates_its_state(
    example_repo: Path, tmp_path: Path
) -> None:
    apply_unit(example_repo, OLD, tmp_path / "a1")
    git(example_repo, "checkout", "--quiet", "-b", "rename-by-hand")
    git(example_repo, "mv", OLD, NEW)
    commit_all(example_repo, "rename dns by hand")

    blocked = invoke(example_repo, "plan", "--base", "main", "--out", str(tmp_path / "p1"))
    assert blocked.returncode == 1
    unit = units_by_path(read_summary(tmp_path / "p1"))[NEW]
    assert unit["status"] == "blocked" and f"invoke move-unit {OLD} {NEW}" in str(unit["error"])

    migrated = invoke(example_repo, "move-unit", OLD, NEW)
    assert migrated.returncode == 0, migrated.output
    assert "git mv" not in migrated.stderr, "the folder was already moved"
    assert _local(example_repo, NEW_KEY).exists() and not _local(example_repo, OLD_KEY).exists()

    planned = invoke(example_repo, "plan", "--base", "main", "--out", str(tmp_path / "p2"))
    unit = units_by_path(read_summary(tmp_path / "p2"))[NEW]
    assert unit["status"] == "no-changes", planned.output

    again = invoke(example_repo, "move-unit", OLD, NEW)
    assert again.returncode == 0 and "nothing to migrate" in again.stderr, again.output


def test_bad_moves_are_usage_errors(example_repo: Path) -> None:
    assert invoke(example_repo, "move-unit", "live/cloud/nope", NEW).returncode == 2
    assert invoke(example_repo, "move-unit", OLD, "elsewhere/zone").returncode == 2
    assert invoke(example_repo, "move-unit", OLD, "live/cloud/iam").returncode == 2


# --------------------------------------------------------------------------- pure-ish parts


def test_the_new_key_is_computed_from_the_configuration_at_the_new_path(example_repo: Path) -> None:
    policy = config.read_policy(example_repo)
    plan = moving.plan_move(example_repo, "live/cluster/vms", "live/cluster/compute/vms", policy)
    assert (plan.old_key, plan.new_key) == (
        "live/cluster/vms/terraform.tfstate",
        "live/cluster/compute/vms/terraform.tfstate",
    )
    assert plan.folder_moved is False
    # the renamed view sees the unit (and its includes) at the new path only
    view = load(
        moves.RenamedTree(WorkTree(example_repo), "live/cluster/vms", "live/cluster/compute/vms"),
        None,
    )
    assert "live/cluster/compute/vms" in view.units and "live/cluster/vms" not in view.units
    assert view.units["live/cluster/compute/vms"].tier == "cluster"


@pytest.mark.parametrize(
    ("old_has", "new_has", "blocked"),
    [(True, False, True), (True, True, False), (False, True, False), (False, False, False)],
)
def test_a_moved_unit_is_blocked_only_while_its_state_waits_at_the_old_key(
    example_repo: Path, old_has: bool, new_has: bool, blocked: bool
) -> None:
    from tooling.core.plan.affected import Affected, AffectedUnit

    git(example_repo, "mv", OLD, NEW)
    for key, present in ((OLD_KEY, old_has), (NEW_KEY, new_has)):
        if present:
            _local(example_repo, key).parent.mkdir(parents=True, exist_ok=True)
            _local(example_repo, key).write_text("{}")
    model = load(WorkTree(example_repo), None)
    change = Affected(
        base="b",
        head="h",
        uncommitted=True,
        units=(
            AffectedUnit(
                path=NEW,
                change="moved",
                moved_from=OLD,
                reasons=(),
                tier="cloud",
                executor="hosted",
            ),
        ),
        dependents=(),
    )
    assert moves.moved_unit_blocked(example_repo, model, change, NEW) is blocked
