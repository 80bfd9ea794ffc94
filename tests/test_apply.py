"""`invoke apply` end to end: gates, binding, cascade, failures, locks and interruption.

Real terragrunt and tofu on the sandbox catalog, local state and moto's S3.
"""

from __future__ import annotations

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
    invoke,
    local_unit,
    read_summary,
    s3_state_bucket,
    units_by_path,
)

pytestmark = pytest.mark.e2e


def _plan(repo: Path, out: Path, *args: str) -> dict[str, Any]:
    ran = invoke(repo, "plan", "--out", str(out), *args)
    assert ran.returncode in (0, 1), ran.output
    return read_summary(out)


def _apply(repo: Path, out: Path, *args: str) -> tuple[int, dict[str, dict[str, Any]], str]:
    ran = invoke(repo, "apply", "--plans", str(out), *args)
    doc = (
        json.loads((out / "apply.json").read_text())
        if (out / "apply.json").exists()
        else {"units": []}
    )
    assert "Traceback" not in ran.output, ran.output
    return ran.returncode, {u["path"]: u for u in doc["units"]}, ran.output


def test_auto_units_apply_manual_ones_wait_then_approval_and_cascade_finish_the_job(
    example_repo: Path, tmp_path: Path
) -> None:
    summary = _plan(example_repo, tmp_path / "p1", "--all")
    gates = {u["path"]: u["gate"]["decision"] for u in summary["units"]}
    assert gates["live/cluster/vms"] == "manual" and gates["live/cluster/os"] == "manual"
    code, results, output = _apply(example_repo, tmp_path / "p1")
    assert code == 0, output
    status = {p: r["result"] for p, r in results.items()}
    assert status["live/cloud/dns"] == "applied"
    assert status["live/cloud/iam"] == "applied"
    assert status["live/cluster/network"] == "applied"
    # registry was planned against iam's mock outputs: re-planned after iam applied, still auto
    assert (
        status["live/cloud/registry"] == "applied"
        and results["live/cloud/registry"]["cascaded"] is True
    )
    assert status["live/cluster/vms"] == "waiting-approval"
    assert status["live/cluster/os"] == "waiting-approval"
    assert status["live/cluster/gitops"] == "waiting-approval"  # downstream of them: not applied
    apply_md = (tmp_path / "p1" / "apply.md").read_text()
    assert "waiting for approval" in apply_md
    # the waiting reason names every node the plan touches, grouped, never cut
    vms_reason = results["live/cluster/vms"]["reason"]
    assert "touches 3 nodes/VMs: node-1, node-2, node-3" in vms_reason
    # network applied in this run: vms is re-planned on its real outputs before the
    # approval is asked for (tests/test_apply_waves.py), and waits with that re-plan
    assert "manual gate: " in vms_reason and "…" not in vms_reason
    assert vms_reason.startswith("re-planned against its upstream's real outputs")
    assert "touches 3 nodes/VMs: node-1, node-2, node-3" in apply_md

    summary = _plan(example_repo, tmp_path / "p2", "--all")
    assert {u["path"] for u in summary["units"] if u["status"] == "changes"} == {
        "live/cluster/vms",
        "live/cluster/os",
        "live/cluster/gitops",
    }
    code, results, output = _apply(example_repo, tmp_path / "p2", "--approve-manual")
    assert code == 0, output
    assert results["live/cluster/vms"]["result"] == "applied"
    # os was planned against vms' mock node IPs (10.0.0.x): its re-plan on the real ones
    # (10.40.0.x) is not the plan that was approved, so it waits for a new approval
    assert (
        results["live/cluster/os"]["result"] == "waiting-approval"
        and results["live/cluster/os"]["cascaded"] is True
    )
    assert "differs from the approved plan" in results["live/cluster/os"]["reason"]
    assert results["live/cluster/gitops"]["result"] == "waiting-approval"

    # the new plan of os (on real outputs) is approved and applied; gitops (auto), planned
    # on os' mock endpoint, is re-planned on the real one and applies as an auto unit does
    _plan(example_repo, tmp_path / "p3", "--all")
    code, results, output = _apply(example_repo, tmp_path / "p3", "--approve-manual")
    assert code == 0, output
    assert results["live/cluster/os"]["result"] == "applied"
    assert not results["live/cluster/os"]["cascaded"]
    assert (
        results["live/cluster/gitops"]["result"] == "applied"
        and results["live/cluster/gitops"]["cascaded"] is True
    )

    final = _plan(example_repo, tmp_path / "p4", "--all")
    assert {u["path"]: u["status"] for u in final["units"]} == dict.fromkeys(
        [u["path"] for u in final["units"]], "no-changes"
    )


def test_a_plan_file_changed_by_one_byte_is_refused_even_with_approval(
    example_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "plans"
    summary = _plan(example_repo, out, "--unit", "live/cloud/dns", "--unit", "live/cloud/iam")
    plan_file = out / units_by_path(summary)["live/cloud/dns"]["plan_file"]
    data = bytearray(plan_file.read_bytes())
    data[-1] ^= 0x01
    plan_file.write_bytes(bytes(data))
    code, results, _ = _apply(example_repo, out, "--approve-manual")
    assert code == 1
    assert results["live/cloud/dns"]["result"] == "refused"
    assert "does not match the reviewed plan" in results["live/cloud/dns"]["reason"]
    assert results["live/cloud/iam"]["result"] == "applied"  # independent units continue
    assert not (example_repo / ".iac/state/live/cloud/dns/terraform.tfstate").exists()


def test_plans_made_for_another_commit_are_refused(example_repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "plans"
    _plan(example_repo, out, "--unit", "live/cloud/dns")
    (example_repo / "NOTES.md").write_text("a later commit\n")
    commit_all(example_repo, "later")
    code, results, _ = _apply(example_repo, out)
    assert code == 1
    assert results["live/cloud/dns"]["result"] == "refused"
    assert "the plans were made for commit" in results["live/cloud/dns"]["reason"]


def test_state_changed_out_of_band_after_planning_is_refused_as_stale(
    example_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "plans"
    _plan(example_repo, out, "--unit", "live/cloud/dns")
    apply_unit(
        example_repo, "live/cloud/dns", tmp_path / "elsewhere"
    )  # someone else applied meanwhile
    code, results, _ = _apply(example_repo, out)
    assert code == 1
    assert results["live/cloud/dns"]["result"] == "refused"
    assert "state changed since this plan was made" in results["live/cloud/dns"]["reason"]


FLAKY_MODULE = """
resource "terraform_data" "flaky" {
  input = "x"
  provisioner "local-exec" {
    command = "exit 3"
  }
}

output "id" {
  value = terraform_data.flaky.input
}
"""

SLOW_MODULE = """
variable "seconds" {
  type    = number
  default = 6
}

resource "terraform_data" "slow" {
  input = var.seconds
  provisioner "local-exec" {
    command = "sleep ${var.seconds}"
  }
}
"""


def test_an_upstream_failure_stops_its_dependents_and_fails_the_run(
    example_repo: Path, tmp_path: Path
) -> None:
    local_unit(example_repo, "flaky", FLAKY_MODULE)
    local_unit(
        example_repo,
        "after",
        'output "ok" {\n  value = "ok"\n}\n',
        '\ndependency "flaky" {\n  config_path = "../flaky"\n  mock_outputs = { id = "mock" }\n'
        '  mock_outputs_allowed_terraform_commands = ["validate", "plan"]\n}\n',
    )
    commit_all(example_repo, "a flaky unit and its dependent")
    out = tmp_path / "plans"
    summary = _plan(
        example_repo,
        out,
        "--unit",
        "live/cloud/flaky",
        "--unit",
        "live/cloud/after",
        "--unit",
        "live/cloud/dns",
    )
    assert {u["path"]: u["status"] for u in summary["units"]}["live/cloud/after"] in (
        "changes",
        "no-changes",
    )
    code, results, _ = _apply(example_repo, out)
    assert code == 1
    assert results["live/cloud/flaky"]["result"] == "failed"
    assert results["live/cloud/after"]["result"] == "not-run"
    assert "live/cloud/flaky" in results["live/cloud/after"]["reason"]
    assert results["live/cloud/dns"]["result"] == "applied"


def _popen_apply(repo: Path, out: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "invoke", "apply", "--plans", str(out)],
        cwd=repo,
        env={**os.environ, **GIT_ENV},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_two_concurrent_applies_of_one_unit_one_proceeds_the_other_names_the_lock(
    example_repo: Path, tmp_path: Path, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    s3, bucket = s3_state_bucket(monkeypatch, aws_env, f"apply-{tmp_path.name}")
    # long enough that the second apply meets the lock even on a loaded machine
    local_unit(example_repo, "slow", SLOW_MODULE, "\ninputs = {\n  seconds = 25\n}\n")
    commit_all(example_repo, "slow unit")
    _plan(example_repo, tmp_path / "a", "--unit", "live/cloud/slow")
    _plan(example_repo, tmp_path / "b", "--unit", "live/cloud/slow")
    first = _popen_apply(example_repo, tmp_path / "a")
    deadline = time.monotonic() + 60
    while "live/cloud/slow/terraform.tfstate.tflock" not in bucket_keys(s3, bucket):
        assert time.monotonic() < deadline and first.poll() is None, (
            "the first apply never took the lock"
        )
        time.sleep(0.1)
    second = _popen_apply(example_repo, tmp_path / "b")
    out2, _ = second.communicate(timeout=120)
    out1, _ = first.communicate(timeout=120)
    assert first.returncode == 0, out1
    assert second.returncode == 1, out2
    b = {u["path"]: u for u in json.loads((tmp_path / "b" / "apply.json").read_text())["units"]}
    assert b["live/cloud/slow"]["result"] == "failed"
    assert "locked by another run (lock ID " in b["live/cloud/slow"]["reason"]
    assert "If that run is still going, wait" in b["live/cloud/slow"]["reason"]
    assert "-lock=false" not in out2
    assert not any(k.endswith(".tflock") for k in bucket_keys(s3, bucket))


def test_sigint_during_apply_stops_gracefully_and_reports_what_was_not_applied(
    example_repo: Path, tmp_path: Path, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    s3, bucket = s3_state_bucket(monkeypatch, aws_env, f"apply-{tmp_path.name}")
    local_unit(example_repo, "slow", SLOW_MODULE, "\ninputs = {\n  seconds = 20\n}\n")
    (example_repo / "live/cloud/zz-last").mkdir()
    (example_repo / "live/cloud/zz-last/terragrunt.hcl").write_text(
        (example_repo / "live/cloud/dns/terragrunt.hcl")
        .read_text()
        .replace('"example.net"', '"last.example.net"')
    )
    commit_all(example_repo, "slow unit between two others")
    out = tmp_path / "plans"
    _plan(
        example_repo,
        out,
        "--unit",
        "live/cloud/dns",
        "--unit",
        "live/cloud/slow",
        "--unit",
        "live/cloud/zz-last",
    )
    proc = _popen_apply(example_repo, out)
    assert proc.stdout is not None
    seen: list[str] = []
    for line in proc.stdout:
        seen.append(line)
        if "live/cloud/dns: applied" in line:
            break
    deadline = time.monotonic() + 60
    while "live/cloud/slow/terraform.tfstate.tflock" not in bucket_keys(s3, bucket):
        assert time.monotonic() < deadline, "".join(seen)
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=120)
    output = "".join(seen) + rest
    assert proc.returncode != 0, output
    assert "asking terragrunt to stop gracefully" in output
    doc = json.loads((out / "apply.json").read_text())
    results = {u["path"]: u["result"] for u in doc["units"]}
    assert doc["interrupted"] is True
    assert results == {
        "live/cloud/dns": "applied",
        "live/cloud/slow": "failed",
        "live/cloud/zz-last": "not-run",
    }
    assert not any(k.endswith(".tflock") for k in bucket_keys(s3, bucket)), (
        "the lock was not released"
    )
    replan = _plan(
        example_repo,
        tmp_path / "again",
        "--unit",
        "live/cloud/dns",
        "--unit",
        "live/cloud/slow",
        "--unit",
        "live/cloud/zz-last",
    )
    status = {u["path"]: u["status"] for u in replan["units"]}
    assert status == {
        "live/cloud/dns": "no-changes",
        "live/cloud/slow": "changes",
        "live/cloud/zz-last": "changes",
    }


def test_a_deleted_unit_is_destroyed_only_with_approval_from_its_base_revision(
    example_repo: Path, tmp_path: Path
) -> None:
    import shutil

    from infra_fixtures import git

    shutil.copytree(example_repo / "live/cloud/iam", example_repo / "live/cloud/legacy")
    commit_all(example_repo, "a legacy unit")
    apply_unit(example_repo, "live/cloud/legacy", tmp_path / "a1")
    git(example_repo, "checkout", "--quiet", "-b", "retire")
    git(example_repo, "rm", "-r", "--quiet", "live/cloud/legacy")
    commit_all(example_repo, "retire legacy")
    out = tmp_path / "plans"
    summary = _plan(example_repo, out, "--base", "main")
    legacy = units_by_path(summary)["live/cloud/legacy"]
    assert legacy["destroy"] is True and legacy["gate"]["decision"] == "manual"
    code, results, _ = _apply(example_repo, out)
    assert code == 0 and results["live/cloud/legacy"]["result"] == "waiting-approval"
    state = example_repo / ".iac/state/live/cloud/legacy/terraform.tfstate"
    assert '"terraform_data"' in state.read_text()
    code, results, output = _apply(example_repo, out, "--approve-manual")
    assert code == 0, output
    assert results["live/cloud/legacy"]["result"] == "applied"
    assert '"terraform_data"' not in state.read_text()  # every resource destroyed
