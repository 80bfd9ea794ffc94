"""Ctrl-C and SIGTERM in the middle of a plan or an apply, with the real tools.

OpenTofu must get exactly one interrupt, however long it takes to stop: a
second one ("Two interrupts received. Exiting immediately") leaves state
unsaved and the lock held. Terragrunt 1.1.3, told of an interrupt, sends
OpenTofu one of its own 15 s later, so the tooling never signals Terragrunt,
only what it started. The slow part here is a data source that reads remote
state from a local HTTP server which answers after 25 s: OpenTofu cannot stop
before the read returns, so each test waits past Terragrunt's 15 s. The
assertions read OpenTofu's own output in the unit's log, and the state
backend (moto's S3 on loopback) for the lock.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from infra_fixtures import (
    GIT_ENV,
    bucket_keys,
    commit_all,
    invoke,
    local_unit,
    read_summary,
    s3_state_bucket,
    serving,
    units_by_path,
)

pytestmark = pytest.mark.e2e

ANSWER_AFTER = 25.0  # seconds: longer than Terragrunt's 15 s signal-forwarding delay


class _SlowState(BaseHTTPRequestHandler):
    """An HTTP state backend that answers every read after ANSWER_AFTER seconds (404: no state)."""

    def do_GET(self) -> None:
        self.server.reads.set()  # type: ignore[attr-defined]
        time.sleep(ANSWER_AFTER)
        self.send_response(404)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def slow_state(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, threading.Event]]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _SlowState)
    httpd.daemon_threads = True
    httpd.reads = threading.Event()  # type: ignore[attr-defined]
    with serving(httpd):
        yield f"http://127.0.0.1:{httpd.server_address[1]}", httpd.reads  # type: ignore[attr-defined]


def _start(repo: Path, *args: str, group: bool) -> subprocess.Popen[str]:
    """``invoke ARGS`` as a process; ``group``: in a session of its own, as a terminal's job."""
    return subprocess.Popen(
        [sys.executable, "-m", "invoke", *args],
        cwd=repo,
        env={**os.environ, **GIT_ENV},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=group,
    )


def _interrupt(proc: subprocess.Popen[str], reads: threading.Event, *, group: bool) -> str:
    assert reads.wait(120), "OpenTofu never started reading the slow state"
    time.sleep(1)
    if group:  # Ctrl-C on a terminal: SIGINT to the whole foreground job
        os.killpg(proc.pid, signal.SIGINT)
    else:  # `kill -INT PID`, or a CI runner cancelling the step: only our process
        proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=180)
    return output


def _slow_unit(repo: Path, url: str) -> None:
    """``live/cloud/slow``: its plan reads remote state from the slow server at ``url``."""
    local_unit(
        repo,
        "slow",
        'data "terraform_remote_state" "slow" {\n  backend = "http"\n'
        f'  config = {{\n    address = "{url}/state"\n  }}\n}}\n',
    )
    commit_all(repo, "a unit whose plan reads slow remote state")


def _one_interrupt(log: str) -> None:
    assert log.count("Interrupt received") == 1, log  # OpenTofu's own words
    assert "Two interrupts received" not in log, log


@pytest.mark.parametrize("group", [False, True], ids=["kill-tool", "ctrl-c-on-terminal"])
def test_an_interrupted_plan_stops_opentofu_once_and_reports_an_incomplete_plan_apply_refuses(
    example_repo: Path,
    tmp_path: Path,
    aws_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    slow_state: tuple[str, threading.Event],
    group: bool,
) -> None:
    url, reads = slow_state
    s3, bucket = s3_state_bucket(monkeypatch, aws_env, f"int-{tmp_path.name}")
    _slow_unit(example_repo, url)
    out = tmp_path / "plans"
    proc = _start(
        example_repo,
        "plan",
        "--out",
        str(out),
        "--unit",
        "live/cloud/slow",
        "--unit",
        "live/cloud/dns",
        group=group,
    )
    output = _interrupt(proc, reads, group=group)

    assert proc.returncode == 130, output
    assert "Traceback" not in output, output
    assert "SIGINT received: stopping the plans" in output
    summary = read_summary(out)
    assert summary["interrupted"] is True
    units = units_by_path(summary)
    assert units["live/cloud/slow"]["status"] == "error"
    assert units["live/cloud/slow"]["error"].startswith("interrupted: ")
    _one_interrupt((out / "units/live/cloud/slow/plan.log").read_text())
    assert "**Interrupted:**" in (out / "comment.md").read_text()
    assert not any(k.endswith(".tflock") for k in bucket_keys(s3, bucket)), "a lock was left"

    refused = invoke(example_repo, "apply", "--plans", str(out))
    assert refused.returncode == 1, refused.output
    assert "this plan was interrupted before every unit finished; nothing applied" in refused.output
    assert not (out / "apply.json").exists()


def test_an_interrupted_apply_waits_for_the_read_in_flight_saves_state_and_releases_the_lock(
    example_repo: Path,
    tmp_path: Path,
    aws_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    slow_state: tuple[str, threading.Event],
) -> None:
    """The read depends on a resource of the same apply, so it happens during the apply."""
    url, reads = slow_state
    s3, bucket = s3_state_bucket(monkeypatch, aws_env, f"inta-{tmp_path.name}")
    local_unit(
        example_repo,
        "later",
        'resource "terraform_data" "first" {\n  input = "x"\n}\n\n'
        'data "terraform_remote_state" "after" {\n  backend = "http"\n'
        f'  config = {{\n    address = "{url}/${{terraform_data.first.id}}"\n  }}\n}}\n',
    )
    commit_all(example_repo, "a unit whose apply reads slow remote state")
    out = tmp_path / "plans"
    planned = invoke(example_repo, "plan", "--out", str(out), "--unit", "live/cloud/later")
    assert planned.returncode == 0, planned.output
    assert reads.is_set() is False, "the read was meant to wait for the apply"
    proc = _start(example_repo, "apply", "--plans", str(out), group=False)
    output = _interrupt(proc, reads, group=False)

    assert proc.returncode == 130, output
    log = (out / "units/live/cloud/later/apply.log").read_text()
    _one_interrupt(log)
    record = json.loads((out / "apply.json").read_text())
    assert record["interrupted"] is True
    keys = bucket_keys(s3, bucket)
    assert not any(k.endswith(".tflock") for k in keys), "the lock was not released"
    state = json.loads(
        s3.get_object(Bucket=bucket, Key="live/cloud/later/terraform.tfstate")["Body"].read()
    )
    assert [r["type"] for r in state["resources"] if r["mode"] == "managed"] == [
        "terraform_data"
    ], "the resource created before the interrupt is not in the saved state"


def test_an_interrupted_drift_check_stops_opentofu_once_and_leaves_the_issue_alone(
    example_repo: Path, tmp_path: Path, slow_state: tuple[str, threading.Event]
) -> None:
    url, reads = slow_state
    _slow_unit(example_repo, url)
    out = tmp_path / "drift"
    proc = _start(example_repo, "drift", "--out", str(out), "--executor", "hosted", group=False)
    output = _interrupt(proc, reads, group=False)

    assert proc.returncode == 130, output
    assert "the drift issue was not touched" in output
    doc = json.loads((out / "drift.json").read_text())
    assert "live/cloud/slow" in doc["errors"]
    _one_interrupt((out / "units/live/cloud/slow/plan.log").read_text())
