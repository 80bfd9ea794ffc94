"""`invoke apply` under faults: the approval path as the workflow runs it, a gate
that cannot be edited into `auto`, interrupts, a killed tool, a stale lock.

Real terragrunt and tofu, local state or moto's S3 with S3-native locking.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from infra_fixtures import (
    GIT_ENV,
    apply_unit,
    bucket_keys,
    commit_all,
    local_unit,
    s3_state_bucket,
    units_by_path,
)
from test_apply import SLOW_MODULE, _apply, _plan, _popen_apply

pytestmark = pytest.mark.e2e

AUTO = {"live/cloud/dns", "live/cloud/iam", "live/cloud/registry", "live/cluster/network"}
MANUAL = {"live/cluster/vms", "live/cluster/os", "live/cluster/gitops"}


def _record(out: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((out / "apply.json").read_text())
    return doc


def _mocks_as_real(repo: Path) -> None:
    """Make the cluster's mock outputs the values its upstreams really output, so that the
    re-plans after the upstreams apply are the plans the reviewer approved (with other
    values an approval does not carry over: tests/test_apply_honesty.py)."""
    zone = hashlib.md5(b"cloudflare-zone:example.net").hexdigest()
    for rel, old, new in (
        ("live/cluster/vms", '"vmbr-mock"', '"vmbr1"'),
        ("live/cluster/vms", "vlan_id = 0", "vlan_id = 40"),
        ("live/cluster/vms", '"10.0.0.1"', '"10.40.0.1"'),
        ("live/cluster/os", '"10.0.0.1', '"10.40.0.1'),
        ("live/cluster/gitops", "https://10.0.0.11:6443", "https://10.40.0.11:6443"),
        ("live/cluster/gitops", '"mock-zone"', f'"{zone}"'),
    ):
        path = repo / rel / "terragrunt.hcl"
        assert old in path.read_text(), (rel, old)
        path.write_text(path.read_text().replace(old, new))
    commit_all(repo, "mocks shaped like the real outputs")


def test_the_approval_path_in_the_workflows_order_applies_the_waiting_units_on_the_same_folder(
    example_repo: Path, tmp_path: Path
) -> None:
    _mocks_as_real(example_repo)
    out = tmp_path / "reviewed"
    _plan(example_repo, out, "--all")
    # 1. the apply job: auto units
    code, results, output = _apply(example_repo, out)
    assert code == 0, output
    assert {p for p, r in results.items() if r["result"] == "applied"} == AUTO
    assert {p for p, r in results.items() if r["result"] == "waiting-approval"} == MANUAL
    # 2. the approval job: the same folder, with the first run's apply.json in it
    code, results, output = _apply(example_repo, out, "--approve-manual")
    assert code == 0, output
    assert {p: r["result"] for p, r in results.items()} == dict.fromkeys(AUTO | MANUAL, "applied")
    assert all(results[p]["earlier"] for p in AUTO), results
    assert not any(results[p]["earlier"] for p in MANUAL)
    assert "Saved plan is stale" not in output
    # 3. a re-run: nothing applied twice, nothing forgotten
    code, results, output = _apply(example_repo, out, "--approve-manual")
    assert code == 0, output
    assert {p: (r["result"], r["earlier"]) for p, r in results.items()} == dict.fromkeys(
        AUTO | MANUAL, ("applied", True)
    )
    record = _record(out)
    assert len(record["runs"]) == 3
    assert [u["result"] for u in record["runs"][0]["units"]].count("applied") == len(AUTO)
    final = _plan(example_repo, tmp_path / "after", "--all")
    assert {u["status"] for u in final["units"]} == {"no-changes"}


def test_editing_summary_json_to_auto_does_not_let_a_vm_change_apply(
    example_repo: Path, tmp_path: Path
) -> None:
    apply_unit(
        example_repo, "live/cluster/network", tmp_path / "network"
    )  # no cascade: vms plans on real outputs
    out = tmp_path / "plans"
    summary = _plan(example_repo, out, "--unit", "live/cluster/vms")
    assert units_by_path(summary)["live/cluster/vms"]["gate"]["decision"] == "manual"
    assert units_by_path(summary)["live/cluster/vms"]["mocked_dependencies"] == []
    for unit in summary["units"]:
        unit["gate"] = {"decision": "auto", "reasons": ["edited"]}
    (out / "summary.json").write_text(json.dumps(summary))
    _code, results, output = _apply(example_repo, out)
    assert results["live/cluster/vms"]["result"] == "waiting-approval", output
    assert "summary.json said auto" in results["live/cluster/vms"]["reason"]
    assert not (example_repo / ".iac/state/live/cluster/vms/terraform.tfstate").exists()


@pytest.mark.parametrize(
    ("break_it", "named"),
    [
        (lambda u: u.update(status="applied-already"), "at units/0/status: not one of"),
        (lambda u: u.pop("path"), "at units/0: a required field is missing: path"),
        (lambda u: u.update(plan_sha256=["a"]), "at units/0/plan_sha256: expected string or null"),
    ],
)
def test_a_summary_unit_that_is_not_a_planned_unit_stops_the_apply_naming_it(
    example_repo: Path, tmp_path: Path, break_it: Any, named: str
) -> None:
    out = tmp_path / "plans"
    summary = _plan(example_repo, out, "--unit", "live/cloud/dns")
    assert [u["status"] for u in summary["units"]] == ["changes"]
    written = (out / "summary.json").read_text()
    break_it(summary["units"][0])
    (out / "summary.json").write_text(json.dumps(summary))
    code, results, output = _apply(example_repo, out)
    assert code == 1 and results == {}, output
    # refused by the reader of summary.json (its schema), before any unit is looked at
    assert f"{out.resolve() / 'summary.json'}: a summary.json refused: {named}" in output
    assert not (example_repo / ".iac/state/live/cloud/dns/terraform.tfstate").exists()
    (out / "summary.json").write_text(written)  # the folder's documents match their schema again


def test_sigint_reaches_opentofu_and_the_record_says_what_it_did(
    example_repo: Path, tmp_path: Path, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    s3, bucket = s3_state_bucket(monkeypatch, aws_env, f"apply-{tmp_path.name}")
    local_unit(example_repo, "slow", SLOW_MODULE, "\ninputs = {\n  seconds = 30\n}\n")
    commit_all(example_repo, "slow unit")
    out = tmp_path / "plans"
    _plan(example_repo, out, "--unit", "live/cloud/slow", "--unit", "live/cloud/dns")
    proc = _popen_apply(example_repo, out)
    deadline = time.monotonic() + 90
    while "live/cloud/slow/terraform.tfstate.tflock" not in bucket_keys(s3, bucket):
        assert time.monotonic() < deadline and proc.poll() is None, "the apply never took the lock"
        time.sleep(0.1)
    time.sleep(2)  # inside the provisioner's sleep
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=120)
    assert time.monotonic() - started < 25, (
        "OpenTofu never saw the interrupt: the apply ran to its end"
    )
    assert proc.returncode == 130, output
    log = (out / "units/live/cloud/slow/apply.log").read_text()
    assert "Interrupt received" in log, log  # OpenTofu's own words
    doc = _record(out)
    results = {u["path"]: u for u in doc["units"]}
    assert doc["interrupted"] is True
    assert results["live/cloud/slow"]["result"] == "failed"
    assert "OpenTofu stopped gracefully" in results["live/cloud/slow"]["reason"]
    assert not any(k.endswith(".tflock") for k in bucket_keys(s3, bucket)), (
        "the lock was not released"
    )
    assert "live/cloud/slow/terraform.tfstate" in bucket_keys(s3, bucket), "no state was written"


def test_a_killed_tool_leaves_opentofu_to_finish_and_the_next_run_records_it(
    example_repo: Path, tmp_path: Path, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    s3, bucket = s3_state_bucket(monkeypatch, aws_env, f"apply-{tmp_path.name}")
    local_unit(example_repo, "slow", SLOW_MODULE, "\ninputs = {\n  seconds = 8\n}\n")
    commit_all(example_repo, "slow unit")
    out = tmp_path / "plans"
    _plan(example_repo, out, "--unit", "live/cloud/slow")
    proc = _popen_apply(example_repo, out)
    deadline = time.monotonic() + 90
    while "live/cloud/slow/terraform.tfstate.tflock" not in bucket_keys(s3, bucket):
        assert time.monotonic() < deadline and proc.poll() is None, "the apply never took the lock"
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert _record(out)["units"][0]["result"] == "running"
    deadline = time.monotonic() + 90
    while any(k.endswith(".tflock") for k in bucket_keys(s3, bucket)):
        assert time.monotonic() < deadline, "OpenTofu never finished: the lock is still held"
        time.sleep(0.2)
    state = json.loads(
        s3.get_object(Bucket=bucket, Key="live/cloud/slow/terraform.tfstate")["Body"].read()
    )
    assert [r["type"] for r in state["resources"]] == ["terraform_data"]
    assert state["resources"][0]["instances"][0].get("status") != "tainted"
    code, results, output = _apply(example_repo, out)
    assert code == 0, output
    assert (
        results["live/cloud/slow"]["result"] == "applied" and results["live/cloud/slow"]["earlier"]
    )
    assert "Apply complete!" in (out / "units/live/cloud/slow/apply.log").read_text()


def test_a_stale_lock_is_named_with_id_holder_age_and_the_runbooks_command_which_works(
    example_repo: Path, tmp_path: Path, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    s3, bucket = s3_state_bucket(monkeypatch, aws_env, f"apply-{tmp_path.name}")
    out = tmp_path / "plans"
    _plan(example_repo, out, "--unit", "live/cloud/dns", "--unit", "live/cloud/iam")
    lock_id = "0a1b2c3d-1111-2222-3333-444455556666"
    s3.put_object(
        Bucket=bucket,
        Key="live/cloud/dns/terraform.tfstate.tflock",
        Body=json.dumps(
            {
                "ID": lock_id,
                "Operation": "OperationTypeApply",
                "Info": "",
                "Who": "runner@gone-host",
                "Version": "1.12.6",
                "Created": "2026-01-02T03:04:05.000000000Z",
                "Path": f"{bucket}/live/cloud/dns/terraform.tfstate",
            }
        ),
    )
    code, results, output = _apply(example_repo, out)
    assert code == 1
    dns = results["live/cloud/dns"]
    assert dns["result"] == "failed"
    assert f"lock ID {lock_id}" in dns["reason"] and "held by runner@gone-host" in dns["reason"]
    assert "ago" in dns["reason"]
    command = f"cd live/cloud/dns && terragrunt force-unlock -force {lock_id}"
    assert command in output and command in dns["reason"]
    assert "-lock=false" not in output + (out / "apply.md").read_text() + json.dumps(results)
    assert "live/cloud/dns/terraform.tfstate.tflock" in bucket_keys(s3, bucket), (
        "the tool unlocked by itself"
    )
    assert results["live/cloud/iam"]["result"] == "applied"
    # the runbook's command, as printed, releases it; the re-run continues from the failure point
    from tooling.io.workspace import Workspace

    ran = subprocess.run(
        command,
        shell=True,
        cwd=example_repo,
        env={**os.environ, **GIT_ENV, **Workspace(example_repo).tool_env},
        capture_output=True,
        text=True,
        check=False,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    code, results, output = _apply(example_repo, out)
    assert code == 0, output
    assert (
        results["live/cloud/dns"]["result"] == "applied"
        and not results["live/cloud/dns"]["earlier"]
    )
    assert results["live/cloud/iam"]["result"] == "applied" and results["live/cloud/iam"]["earlier"]
    assert [len(r["units"]) for r in _record(out)["runs"]] == [2, 2]


def test_two_applies_of_one_folder_the_second_refuses_while_the_first_runs(
    example_repo: Path, tmp_path: Path
) -> None:
    local_unit(example_repo, "slow", SLOW_MODULE)
    commit_all(example_repo, "slow unit")
    out = tmp_path / "plans"
    _plan(example_repo, out, "--unit", "live/cloud/slow")
    first = _popen_apply(example_repo, out)
    deadline = time.monotonic() + 90
    while not (out / "apply.json").exists():
        assert time.monotonic() < deadline and first.poll() is None, "the first apply never started"
        time.sleep(0.1)
    ran = subprocess.run(
        [sys.executable, "-m", "invoke", "apply", "--plans", str(out)],
        cwd=example_repo,
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out1, _ = first.communicate(timeout=120)
    assert ran.returncode == 1 and "another run is writing to this folder" in ran.stderr, ran.stderr
    assert first.returncode == 0, out1
    assert _record(out)["units"][0]["result"] == "applied"
