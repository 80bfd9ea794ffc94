"""The foundation end to end: real terragrunt + tofu, the sandbox catalog, local and S3 state."""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from pathlib import Path

import boto3
import infra_fixtures
import pytest
from infra_fixtures import (
    REPO,
    apply_unit,
    commit_all,
    invoke,
    plan_one,
    read_summary,
    units_by_path,
)

from tooling.core.plan.targets import Target
from tooling.engine.plan.unitplanner import plan_unit
from tooling.io import terragrunt
from tooling.io.workspace import Workspace

pytestmark = pytest.mark.e2e

EXAMPLE_UNITS = set(infra_fixtures.EXAMPLE_UNITS)


def _plan_and_apply(ws: Workspace, unit: str, out: Path) -> dict[str, int]:
    return apply_unit(ws.root, unit, out)


def _plan(ws: Workspace, unit: str, out: Path) -> dict[str, int]:
    counts: dict[str, int] = plan_one(ws.root, unit, out).counts  # type: ignore[attr-defined]
    return counts


def test_plan_all_on_the_embedded_default_plans_every_unit(
    example_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "plans"
    ran = invoke(example_repo, "plan", "--all", "--out", str(out))
    assert ran.returncode == 0, ran.output
    first_line = ran.stderr.splitlines()[0]
    assert "sandbox module catalog" in first_line and "local state" in first_line
    summary = read_summary(out)
    units = units_by_path(summary)
    assert set(units) == EXAMPLE_UNITS
    order = [u["path"] for u in summary["units"]]  # type: ignore[union-attr]
    # DAG order: every dependency before its dependents
    for before, after in [
        ("live/cluster/network", "live/cluster/vms"),
        ("live/cluster/vms", "live/cluster/os"),
        ("live/cluster/os", "live/cluster/gitops"),
        ("live/cloud/iam", "live/cloud/registry"),
        ("live/cloud/dns", "live/cluster/gitops"),
    ]:
        assert order.index(before) < order.index(after)
    for unit in units.values():
        assert unit["status"] == "changes"
        assert unit["counts"]["create"] > 0  # type: ignore[index]
        assert set(unit["counts"]) >= {"create", "update", "delete", "replace"}  # type: ignore[arg-type]
        assert unit["tier"] in ("cloud", "cluster")
        assert unit["executor"] == ("hosted" if unit["tier"] == "cloud" else "lan")
    # the per-unit table is printed, on stdout (the result; progress goes to stderr)
    assert re.search(r"live/cluster/vms\s+cluster/lan\s+\d+", ran.stdout)


def test_unit_plans_and_applies_on_local_state(example_repo: Path, tmp_path: Path) -> None:
    ws = Workspace(example_repo)
    counts = _plan_and_apply(ws, "live/cloud/dns", tmp_path / "p1")
    assert counts["create"] == 5
    state = example_repo / ".iac" / "state" / "live" / "cloud" / "dns" / "terraform.tfstate"
    assert state.is_file() and '"terraform_data"' in state.read_text()
    assert _plan(ws, "live/cloud/dns", tmp_path / "p2") == dict.fromkeys(counts, 0)


def test_newer_standin_tag_changes_the_plan(example_repo: Path, tmp_path: Path) -> None:
    ws = Workspace(example_repo)
    _plan_and_apply(ws, "live/cloud/dns", tmp_path / "p1")
    unit_file = example_repo / "live/cloud/dns/terragrunt.hcl"
    unit_file.write_text(unit_file.read_text().replace("?ref=v1.1.0", "?ref=v1.2.0"))
    commit_all(example_repo, "bump dns to v1.2.0")
    counts = _plan(Workspace(example_repo), "live/cloud/dns", tmp_path / "p2")
    assert counts["update"] == 1 and counts["create"] == 0 and counts["replace"] == 0
    unit_file.write_text(unit_file.read_text().replace("?ref=v1.2.0", "?ref=v2.0.0"))
    counts = _plan(Workspace(example_repo), "live/cloud/dns", tmp_path / "p3")
    assert counts["replace"] >= 1


def test_changed_terragrunt_pin_refuses_before_planning(example_repo: Path, tmp_path: Path) -> None:
    pins = example_repo / ".tool-versions"
    pins.write_text(pins.read_text().replace("terragrunt 1.1.3", "terragrunt 1.1.2"))
    out = tmp_path / "plans"
    ran = invoke(example_repo, "plan", "--all", "--out", str(out))
    assert ran.returncode == 1, ran.output
    assert "1.1.2" in ran.stderr and "1.1.3" in ran.stderr
    assert "Traceback" not in ran.output
    assert not (out / "summary.json").exists()
    assert not list(example_repo.glob("live/**/.terragrunt-cache"))


SLOW_MODULE = """
resource "terraform_data" "slow" {
  input = "x"
  provisioner "local-exec" {
    command = "sleep 4"
  }
}
"""

SLOW_UNIT = """
include "root" {
  path = find_in_parent_folders("root.hcl")
}
terraform {
  source = "${get_repo_root()}/testmods/slow"
}
"""


def _s3_env(moto_endpoint: str, bucket: str) -> dict[str, str]:
    return {
        "IAC_STATE_BUCKET": bucket,
        "IAC_STATE_ENDPOINT": moto_endpoint,
        "IAC_STATE_REGION": "us-east-1",
    }


def test_s3_backend_keeps_one_state_object_per_unit_and_locks_during_apply(
    example_repo: Path, tmp_path: Path, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint = aws_env["AWS_ENDPOINT_URL"]
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    bucket = f"state-{tmp_path.name.lower().replace('_', '-')}"[:60]
    s3.create_bucket(Bucket=bucket)
    for key, value in _s3_env(endpoint, bucket).items():
        monkeypatch.setenv(key, value)
    ws = Workspace(example_repo)
    assert ws.settings.state_backend == "s3"
    _plan_and_apply(ws, "live/cloud/dns", tmp_path / "p1")
    _plan_and_apply(ws, "live/cluster/network", tmp_path / "p2")
    keys = {o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])}
    assert keys == {"live/cloud/dns/terraform.tfstate", "live/cluster/network/terraform.tfstate"}
    assert not (example_repo / ".iac" / "state").exists()

    # The lock: a unit whose apply takes a few seconds; the .tflock object must
    # exist while it runs and be gone afterwards.
    (example_repo / "testmods" / "slow").mkdir(parents=True)
    (example_repo / "testmods" / "slow" / "main.tf").write_text(SLOW_MODULE)
    (example_repo / "live" / "cloud" / "slow").mkdir()
    (example_repo / "live" / "cloud" / "slow" / "terragrunt.hcl").write_text(SLOW_UNIT)
    commit_all(example_repo, "slow unit")
    ws = Workspace(example_repo)
    u = ws.model().units["live/cloud/slow"]
    out = tmp_path / "p3"
    result = plan_unit(
        Target(u.path, u.tier, u.executor, "named", example_repo / u.path),
        out,
        ws.tool_env,
        policy=ws.policy,
    )
    assert result.status == "changes", result.error
    assert result.plan_file is not None
    applied: list[terragrunt.Run] = []
    thread = threading.Thread(
        target=lambda: applied.append(
            terragrunt.run(
                terragrunt.apply_args(out / result.plan_file), example_repo / u.path, ws.tool_env
            )
        )
    )
    thread.start()
    seen_lock = False
    deadline = time.monotonic() + 60
    while thread.is_alive() and time.monotonic() < deadline:
        listed = {o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])}
        if "live/cloud/slow/terraform.tfstate.tflock" in listed:
            seen_lock = True
            break
        time.sleep(0.1)
    thread.join(timeout=120)
    assert applied and applied[0].returncode == 0, (
        applied[0].stderr if applied else "apply did not finish"
    )
    assert seen_lock, "no .tflock object was seen while apply held the lock"
    keys = {o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])}
    assert "live/cloud/slow/terraform.tfstate" in keys
    assert not any(k.endswith(".tflock") for k in keys), "the lock was not released"


def test_the_tools_on_path_print_exactly_the_pinned_versions(tools: None) -> None:
    pins = dict(
        line.split()[:2]
        for line in (REPO / ".tool-versions").read_text().splitlines()
        if line.strip()
    )
    quiet = {**os.environ, "TF_CLI_CONFIG_FILE": os.devnull}
    tofu = subprocess.run(
        ["tofu", "version"], capture_output=True, text=True, env=quiet, check=True
    )
    assert f"OpenTofu v{pins['opentofu']}\n" in tofu.stdout
    terragrunt = subprocess.run(
        ["terragrunt", "--version"], capture_output=True, text=True, check=True
    )
    assert terragrunt.stdout.strip() == f"terragrunt version v{pins['terragrunt']}"
