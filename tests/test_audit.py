"""The audit trail: every apply appends one record to the state store; `invoke audit` lists them.

Real tofu/terragrunt applies of the example repository, with S3 state on
moto's server (the records land in the state bucket under ``audit/``) and with
local state (under ``.iac/state/audit/``).
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from infra_fixtures import bucket_keys, git, invoke, read_summary, s3_state_bucket

from tooling.core import audit

RUN_ENV = {
    "GITHUB_SERVER_URL": "https://github.com",
    "GITHUB_REPOSITORY": "example-org/infrastructure",
    "GITHUB_RUN_ID": "4242",
    "GITHUB_RUN_ATTEMPT": "2",
    "GITHUB_WORKFLOW": "apply",
    "GITHUB_ACTOR": "merger",
}


def _records(repo: Path, *args: str) -> list[dict[str, Any]]:
    ran = invoke(repo, "audit", "--json", *args)
    assert ran.returncode == 0, ran.output
    records: list[dict[str, Any]] = json.loads(ran.stdout)["records"]
    return records


@pytest.mark.parametrize(
    ("results", "interrupted", "word"),
    [
        (["applied", "no-changes"], False, "applied"),
        (["applied", "failed"], False, "failed"),
        (["refused"], False, "failed"),
        (["waiting-approval", "no-changes"], False, "nothing"),
        (["applied"], True, "interrupted"),
    ],
)
def test_an_apply_has_one_overall_result(results: list[str], interrupted: bool, word: str) -> None:
    assert audit.overall(results, interrupted) == word


def test_record_keys_sort_in_time_order_and_since_keeps_that_day_on() -> None:
    keys = [
        "audit/2026/12/03/20261203T101500Z-abc-1.json",
        "audit/2026/11/30/20261130T235959Z-abc-2.json",
        "audit/2026/12/02/20261202T000000Z-abc-3.json",
        "audit/README",  # not a record
    ]
    assert audit.keys_since(keys, date(2026, 12, 2)) == [
        "audit/2026/12/02/20261202T000000Z-abc-3.json",
        "audit/2026/12/03/20261203T101500Z-abc-1.json",
    ]
    assert len(audit.keys_since(keys, None)) == 3


def test_every_apply_appends_one_record_to_the_state_bucket_and_audit_lists_them(
    example_repo: Path, tmp_path: Path, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    s3, bucket = s3_state_bucket(monkeypatch, aws_env, f"audit-{tmp_path.name}")
    out = tmp_path / "plans"
    planned = invoke(example_repo, "plan", "--out", str(out), "--unit", "live/cloud/iam")
    assert planned.returncode == 0, planned.output
    digest = {u["path"]: u["plan_sha256"] for u in read_summary(out)["units"]}  # type: ignore[index, union-attr]
    applied = invoke(example_repo, "apply", "--plans", str(out), env=RUN_ENV)
    assert applied.returncode == 0, applied.output
    head = git(example_repo, "rev-parse", "HEAD").strip()
    keys = [k for k in bucket_keys(s3, bucket) if k.startswith("audit/")]
    assert len(keys) == 1 and keys[0].endswith(".json")
    stored = json.loads(s3.get_object(Bucket=bucket, Key=keys[0])["Body"].read())
    assert stored["commit"] == head and stored["plans_head"] == head
    assert stored["result"] == "applied"
    assert stored["units"] == [
        {
            "path": "live/cloud/iam",
            "plan_sha256": digest["live/cloud/iam"],
            "result": "applied",
            "reason": stored["units"][0]["reason"],
        }
    ]
    assert len(str(stored["units"][0]["plan_sha256"])) == 64
    assert stored["approve_manual"] is False and stored["approved_by"] is None
    assert stored["run"] == {
        "id": "4242",
        "attempt": "2",
        "workflow": "apply",
        "job": None,
        "url": "https://github.com/example-org/infrastructure/actions/runs/4242",
        "actor": "merger",
    }
    # the approval job: a second apply of the same folder appends a second record
    again = invoke(
        example_repo,
        "apply",
        "--plans",
        str(out),
        "--approve-manual",
        env={**RUN_ENV, "GITHUB_RUN_ATTEMPT": "3", "IAC_APPROVED_BY": "reviewer"},
    )
    assert again.returncode == 0, again.output
    records = _records(example_repo)
    assert len(records) == 2 and records[0] == stored
    assert records[1]["approve_manual"] is True and records[1]["approved_by"] == "reviewer"
    assert records[1]["run"]["attempt"] == "3"
    assert len([k for k in bucket_keys(s3, bucket) if k.startswith("audit/")]) == 2
    today = datetime.now(UTC).date()
    assert len(_records(example_repo, "--since", today.isoformat())) == 2
    assert _records(example_repo, "--since", (today + timedelta(days=1)).isoformat()) == []
    listing = invoke(example_repo, "audit")
    assert listing.returncode == 0, listing.output
    lines = listing.stdout.splitlines()
    assert len(lines) == 2
    assert f"{head[:12]} applied run 4242: live/cloud/iam applied" in lines[0]
    assert "approved by reviewer run 4242" in lines[1]


def test_with_local_state_the_record_goes_under_the_local_state_folder(
    example_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "plans"
    planned = invoke(example_repo, "plan", "--out", str(out), "--unit", "live/cloud/iam")
    assert planned.returncode == 0, planned.output
    applied = invoke(example_repo, "apply", "--plans", str(out))
    assert applied.returncode == 0, applied.output
    files = sorted((example_repo / ".iac" / "state" / "audit").rglob("*.json"))
    assert len(files) == 1
    doc = json.loads(files[0].read_text())
    assert doc["units"][0]["path"] == "live/cloud/iam" and doc["result"] == "applied"
    assert _records(example_repo) == [doc]
    assert "audit record: " in applied.stderr


def test_two_records_of_one_second_keep_their_order_whatever_their_random_suffix() -> None:
    doc = {"commit": "c" * 40}
    first = datetime(2026, 12, 4, 10, 15, 0, 1000, tzinfo=UTC)
    later = datetime(2026, 12, 4, 10, 15, 0, 2000, tzinfo=UTC)
    keys = [
        audit.key(doc, at=later, suffix="00000000"),
        audit.key(doc, at=first, suffix="ffffffff"),
    ]
    assert audit.keys_since(keys, None) == keys[::-1]
    assert audit.keys_since(keys, date(2026, 12, 4)) == keys[::-1]
    assert keys[1] == "audit/2026/12/04/20261204T101500.001000Z-cccccccccccc-ffffffff.json"
