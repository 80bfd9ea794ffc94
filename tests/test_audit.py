"""The audit trail: every apply writes a record before it starts and one after it ends;
`invoke audit` lists them, names a damaged record, and checks the chain.

Real tofu/terragrunt applies of the example repository, with S3 state on
moto's server (the records land in the state bucket under ``audit/``) and with
local state (under ``.iac/state/audit/``). The tests of the reader and the
chain write records with the tooling's own writer (or damage them by hand) in a
real repository with local state, and run `invoke audit` on them.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from infra_fixtures import (
    Invoked,
    bucket_keys,
    commit_all,
    git,
    invoke,
    invoke_in_process,
    local_unit,
    make_example_repo,
    read_summary,
    s3_state_bucket,
)
from schema_check import summary_doc, summary_unit

from tooling.core.apply import audit
from tooling.core.apply.record import ApplyRecord, RunEntry, UnitApply
from tooling.core.plan.summary import Summary
from tooling.errors import ToolingError

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


def test_every_apply_writes_a_record_before_and_one_after_to_the_state_bucket_and_audit_lists_them(
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
    keys = sorted(k for k in bucket_keys(s3, bucket) if k.startswith("audit/"))
    # one record before the apply, one after, the second naming the first by its digest
    assert len(keys) == 2 and keys[0].endswith("-started.json"), keys
    assert keys[1].endswith("-completed.json")
    first = s3.get_object(Bucket=bucket, Key=keys[0])["Body"].read()
    begun = json.loads(first)
    assert begun["state"] == "started" and begun["previous"] is None
    assert begun["units"] == [{"path": "live/cloud/iam", "plan_sha256": digest["live/cloud/iam"]}]
    stored = json.loads(s3.get_object(Bucket=bucket, Key=keys[1])["Body"].read())
    assert stored["state"] == "completed" and stored["apply"] == begun["apply"]
    link = {"key": keys[0], "sha256": _sha256(first)}
    assert stored["started"] == link and stored["previous"] == link
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
    assert len(records) == 4 and records[:2] == [begun, stored]
    assert records[3]["approve_manual"] is True and records[3]["approved_by"] == "reviewer"
    assert records[2]["approved_by"] == "reviewer"  # on whose word, before anything is applied
    assert records[3]["run"]["attempt"] == "3"
    assert records[2]["previous"]["key"] == keys[1]  # the chain goes on from the first apply
    assert len([k for k in bucket_keys(s3, bucket) if k.startswith("audit/")]) == 4
    today = datetime.now(UTC).date()
    assert len(_records(example_repo, "--since", today.isoformat())) == 4
    assert _records(example_repo, "--since", (today + timedelta(days=1)).isoformat()) == []
    listing = invoke(example_repo, "audit")
    assert listing.returncode == 0, listing.output
    lines = listing.stdout.splitlines()
    assert len(lines) == 2
    assert f"{head[:12]} applied run 4242: live/cloud/iam applied" in lines[0]
    assert "approved by reviewer run 4242" in lines[1]


def test_with_local_state_the_records_go_under_the_local_state_folder(
    example_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "plans"
    planned = invoke(example_repo, "plan", "--out", str(out), "--unit", "live/cloud/iam")
    assert planned.returncode == 0, planned.output
    applied = invoke(example_repo, "apply", "--plans", str(out))
    assert applied.returncode == 0, applied.output
    files = sorted((example_repo / ".iac" / "state" / "audit").rglob("*.json"))
    assert [f.name.rsplit("-", 1)[1] for f in files] == ["started.json", "completed.json"]
    docs = [json.loads(f.read_text()) for f in files]
    assert docs[1]["units"][0]["path"] == "live/cloud/iam" and docs[1]["result"] == "applied"
    assert _records(example_repo) == docs
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


# ------------------------------------------------------------------ reading back, the chain

HEAD = "a" * 40
SUMMARY = Summary.from_json(
    summary_doc([summary_unit("live/cloud/iam", plan_sha256="b" * 64)], head=HEAD)
)
#: a record as the first version of the trail wrote it (one per apply, after it, no chain)
V1_RECORD = {
    "version": 1,
    "at": "2020-01-02T03:04:05Z",
    "commit": HEAD,
    "plans_head": HEAD,
    "approve_manual": True,
    "approved_by": "reviewer",
    "run": {"id": "7", "attempt": "1", "workflow": "apply", "job": None, "url": None, "actor": "m"},
    "result": "applied",
    "units": [
        {"path": "live/cloud/dns", "plan_sha256": "c" * 64, "result": "applied", "reason": ""}
    ],
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A real repository with local state: the trail is ``.iac/state/audit/``."""
    return make_example_repo(tmp_path / "infra")


def _bytes(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, indent=2).encode()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _audit(repo: Path, *args: str) -> Invoked:
    return invoke_in_process(repo, "audit", *args)


def _put(repo: Path, name: str, data: bytes, day: str = "2020/01/02") -> str:
    """A file under the trail, as anything able to write there could leave it; its key."""
    key = f"audit/{day}/{name}"
    path = repo / ".iac/state" / key
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return key


def _write_apply(repo: Path, *, complete: bool = True) -> list[str]:
    """The records the apply writes (started, then completed): their keys."""
    from tooling.engine.apply.audit import append_audit, start_audit
    from tooling.io.workspace import Workspace

    ws = Workspace(repo)
    start = start_audit(ws, SUMMARY, head=HEAD, approve_manual=False)
    if not complete:
        return [start.key]
    units = (UnitApply("live/cloud/iam", "applied", ""),)
    doc = ApplyRecord(HEAD, HEAD, False, False, runs=(RunEntry(None, False, False, units),))
    where = append_audit(ws, start, doc, SUMMARY)  # s3://BUCKET/audit/… or …/.iac/state/audit/…
    return [start.key, "audit/" + where.split("/audit/", 1)[1]]


def _keys(repo: Path) -> list[str]:
    base = repo / ".iac/state"
    return sorted(p.relative_to(base).as_posix() for p in (base / "audit").rglob("*.json"))


def test_escape_shows_c0_del_c1_and_bidi_controls_and_keeps_every_other_character() -> None:
    from tooling.core.text.terminal import escape_line as escape

    assert escape("Zoë 名前 \\x path/a-b") == "Zoë 名前 \\x path/a-b"
    assert escape("\x1b]0;owned\x07") == "\\x1b]0;owned\\x07"
    assert escape("a\x9b31mb\x7f\r\n\t") == "a\\x9b31mb\\x7f\\x0d\\x0a\\x09"
    bidi = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
    assert escape(bidi) == "".join(f"\\u{ord(c):04x}" for c in bidi)


def test_the_audit_schema_is_a_valid_2020_12_schema_and_the_writers_records_match_it(
    repo: Path,
) -> None:
    from jsonschema import Draft202012Validator

    from tooling.io import artifacts

    schema = json.loads(
        (Path(__file__).parent.parent / "tooling/schemas/audit.schema.json").read_text()
    )
    Draft202012Validator.check_schema(schema)
    assert schema["$id"] == "https://iac-tooling.invalid/schemas/audit.schema.json"
    for key in _write_apply(repo):
        data = (repo / ".iac/state" / key).read_bytes()
        assert artifacts.parse(data, artifacts.AUDIT_RECORD, source=key)["version"] == 2
    started = json.loads((repo / ".iac/state" / _write_apply(repo, complete=False)[0]).read_text())
    for broken in ({**started, "state": "completed"}, {**started, "previous": {"key": "x"}}):
        with pytest.raises(ToolingError, match="an audit record refused"):
            artifacts.parse(_bytes(broken), artifacts.AUDIT_RECORD, source="k")


def test_one_damaged_record_is_named_and_every_readable_record_is_still_listed(
    repo: Path,
) -> None:
    good = _put(repo, "20200102T030405.000001Z-aaaaaaaaaaaa-1.json", _bytes(V1_RECORD))
    wrong = _put(
        repo,
        "20200102T030406.000001Z-aaaaaaaaaaaa-2.json",
        _bytes({**V1_RECORD, "run": "x"}),
    )
    garbled = _put(repo, "20200102T030407.000001Z-aaaaaaaaaaaa-3.json", b'{"version": 1, "at"')
    later = {**V1_RECORD, "at": "2020-01-02T03:04:08Z", "approved_by": "second"}
    _put(repo, "20200102T030408.000001Z-aaaaaaaaaaaa-4.json", _bytes(later))

    ran = _audit(repo)
    assert ran.returncode == 1, ran.output
    lines = ran.stdout.splitlines()
    assert len(lines) == 2, ran.output
    assert lines[0].startswith("2020-01-02T03:04:05Z aaaaaaaaaaaa applied approved by reviewer")
    assert "approved by second" in lines[1]
    problems = [line for line in ran.stderr.splitlines() if "audit/2020" in line]
    assert len(problems) == 2, ran.stderr
    assert (
        wrong in problems[0] and "an audit record refused: at run: expected object" in problems[0]
    )
    assert garbled in problems[1] and "not JSON" in problems[1]
    assert good not in ran.stderr
    assert "Traceback" not in ran.output
    # the same in --json: the readable records, and the problems named
    doc = json.loads(_audit(repo, "--json").stdout)
    assert len(doc["records"]) == 2 and len(doc["problems"]) == 2


def test_names_run_ids_and_unit_paths_from_a_record_are_printed_escaped_never_obeyed(
    repo: Path,
) -> None:
    hostile = {
        **V1_RECORD,
        "approved_by": "eve\x1b]0;owned\x07\u202e",
        "run": {**V1_RECORD["run"], "id": "7\x1b[2J\x9b"},  # type: ignore[dict-item]
        "units": [{**V1_RECORD["units"][0], "path": "live/\x1b[31mred\r"}],  # type: ignore[index]
    }
    _put(repo, "20200102T030405.000001Z-aaaaaaaaaaaa-1.json", _bytes(hostile))
    ran = _audit(repo)
    assert ran.returncode == 0, ran.output
    for raw in ("\x1b", "\x07", "\x9b", "\u202e", "\r"):
        assert raw not in ran.stdout
    line = ran.stdout.strip()
    assert "approved by eve\\x1b]0;owned\\x07\\u202e run 7\\x1b[2J\\x9b" in line
    assert "live/\\x1b[31mred\\x0d applied" in line


def test_the_apply_writes_a_started_record_then_a_completion_naming_it_and_the_one_before(
    repo: Path,
) -> None:
    first = _write_apply(repo)
    second = _write_apply(repo)
    trail = repo / ".iac/state"
    docs = [json.loads((trail / k).read_bytes()) for k in [*first, *second]]
    assert [d["state"] for d in docs] == ["started", "completed", "started", "completed"]
    assert docs[0]["previous"] is None  # the first record of the trail
    assert docs[0]["units"] == [{"path": "live/cloud/iam", "plan_sha256": "b" * 64}]
    for i in (1, 2, 3):  # each names the record written before it, by key and bytes
        prior = [*first, *second][i - 1]
        assert docs[i]["previous"] == {
            "key": prior,
            "sha256": _sha256((trail / prior).read_bytes()),
        }
    assert docs[1]["started"] == docs[1]["previous"] and docs[1]["apply"] == docs[0]["apply"]
    assert docs[3]["started"]["key"] == second[0] and docs[2]["apply"] != docs[0]["apply"]
    ran = _audit(repo)
    assert ran.returncode == 0, ran.output
    assert len(ran.stdout.splitlines()) == 2  # one line per apply
    assert all(" applied: live/cloud/iam applied" in line for line in ran.stdout.splitlines())


def test_a_started_record_no_completion_names_is_listed_as_interrupted(repo: Path) -> None:
    _write_apply(repo)
    _write_apply(repo, complete=False)
    ran = _audit(repo)
    assert ran.returncode == 0, ran.output
    lines = ran.stdout.splitlines()
    assert len(lines) == 2 and " applied: " in lines[0]
    assert (
        "interrupted (started, never completed: killed, or still running): "
        "live/cloud/iam not completed" in lines[1]
    )


def test_a_deleted_record_is_named_by_the_record_after_it_and_audit_exits_1(repo: Path) -> None:
    first = _write_apply(repo)
    _write_apply(repo)
    (repo / ".iac/state" / first[1]).unlink()  # the first apply's completion
    ran = _audit(repo)
    assert ran.returncode == 1, ran.output
    assert f"{first[1]}: missing: " in ran.stderr and "deleted" in ran.stderr
    # the interrupted-looking start is still listed, and so is the second apply
    assert len(ran.stdout.splitlines()) == 2


def test_an_edited_record_is_named_and_audit_exits_1(repo: Path) -> None:
    first = _write_apply(repo)
    _write_apply(repo)
    path = repo / ".iac/state" / first[0]
    edited = {**json.loads(path.read_bytes()), "approve_manual": True, "approved_by": "someone"}
    path.write_bytes(_bytes(edited))  # still a valid record: only the chain tells
    ran = _audit(repo)
    assert ran.returncode == 1, ran.output
    changed = [line for line in ran.stderr.splitlines() if "changed after it was written" in line]
    assert len(changed) == 2, ran.stderr  # named by its completion and by its successor
    assert all(line.startswith(f"{first[0]}: ") for line in changed)


def test_two_applies_at_once_branch_the_chain_and_that_is_not_a_problem(repo: Path) -> None:
    from tooling.engine.apply.audit import append_audit, start_audit
    from tooling.io.workspace import Workspace

    _write_apply(repo)
    before = _keys(repo)[-1]
    ws = Workspace(repo)
    one = start_audit(ws, SUMMARY, head=HEAD, approve_manual=False)
    two = start_audit(ws, SUMMARY, head=HEAD, approve_manual=False)
    apply_doc = ApplyRecord(HEAD, None, False, False, runs=(RunEntry(None, False, False),))
    append_audit(ws, two, apply_doc, SUMMARY)
    append_audit(ws, one, apply_doc, SUMMARY)
    trail = repo / ".iac/state"
    # the second start saw the first (keys are written one after the other here); both
    # completions name their own start: every record is named by a later one
    assert json.loads((trail / two.key).read_bytes())["previous"]["key"] == one.key
    assert json.loads((trail / one.key).read_bytes())["previous"]["key"] == before
    ran = _audit(repo)
    assert ran.returncode == 0, ran.output
    assert len(ran.stdout.splitlines()) == 3
    # two that listed the trail at the same moment: both name the same newest record
    from tooling.io.auditlog import AuditLog

    newest = _keys(repo)[-1]
    link = audit.link(newest, (trail / newest).read_bytes())
    log = AuditLog(repo, ws.settings)
    for apply_id in ("a" * 16, "b" * 16):
        at = datetime.now(UTC)
        doc = audit.started(
            SUMMARY,
            apply_id=apply_id,
            head=HEAD,
            approve_manual=False,
            at=at,
            env={},
            previous=link,
        )
        log.put(audit.key(doc, at=at, suffix=f"{apply_id}-started"), audit.encode(doc), done="")
    _write_apply(repo)  # names one of the two: the other is named by nothing yet
    ran = _audit(repo)
    assert ran.returncode == 0, ran.output
    assert len(ran.stdout.splitlines()) == 6


def test_two_first_records_written_at_once_are_both_starts_of_the_chain(repo: Path) -> None:
    """Two applies that listed an empty trail at the same moment: neither names a previous."""
    started = {
        "version": 2,
        "state": "started",
        "apply": "0" * 16,
        "at": "2020-01-02T03:04:05Z",
        "commit": HEAD,
        "plans_head": HEAD,
        "approve_manual": False,
        "approved_by": None,
        "run": V1_RECORD["run"],
        "units": [],
        "previous": None,
    }
    _put(repo, "20200102T030405.000001Z-aaaaaaaaaaaa-0-started.json", _bytes(started))
    _put(
        repo,
        "20200102T030405.000002Z-aaaaaaaaaaaa-1-started.json",
        _bytes({**started, "apply": "1" * 16}),
    )
    _write_apply(repo)
    assert _audit(repo).returncode == 0
    # but a record without a previous after chained ones is named
    _put(
        repo,
        "20991231T000000.000000Z-aaaaaaaaaaaa-2-started.json",
        _bytes({**started, "apply": "2" * 16}),
        day="2099/12/31",
    )
    ran = _audit(repo)
    assert ran.returncode == 1 and "names no previous record" in ran.stderr, ran.output


def test_since_still_checks_the_link_to_the_record_before_that_day(repo: Path) -> None:
    old = _put(repo, "20200102T030405.000001Z-aaaaaaaaaaaa-1.json", _bytes(V1_RECORD))
    _write_apply(repo)
    today = datetime.now(UTC).date().isoformat()
    assert _audit(repo, "--since", today).returncode == 0
    _put(repo, old.split("/")[-1], _bytes({**V1_RECORD, "approved_by": "mallory"}))
    ran = _audit(repo, "--since", today)
    assert ran.returncode == 1 and f"{old}: changed after it was written" in ran.stderr
    assert len(ran.stdout.splitlines()) == 1  # the apply of today, listed all the same


def test_a_record_over_the_limit_in_the_bucket_is_refused_by_its_size_and_the_rest_listed(
    repo: Path, tmp_path: Path, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tooling.io.artifacts import AUDIT_RECORD

    s3, bucket = s3_state_bucket(monkeypatch, aws_env, f"audit-big-{tmp_path.name}")
    big = "audit/2020/01/02/20200102T030406.000001Z-aaaaaaaaaaaa-2.json"
    s3.put_object(Bucket=bucket, Key=big, Body=b" " * (AUDIT_RECORD.limit + 1))
    wrong = "audit/2020/01/02/20200102T030407.000001Z-aaaaaaaaaaaa-3.json"
    s3.put_object(Bucket=bucket, Key=wrong, Body=b"\xff\xfe not text")
    key = "audit/2020/01/02/20200102T030405.000001Z-aaaaaaaaaaaa-1.json"
    s3.put_object(Bucket=bucket, Key=key, Body=_bytes(V1_RECORD))
    _write_apply(repo)  # through the bucket: its start names the garbled record, the newest
    ran = _audit(repo)
    assert ran.returncode == 1, ran.output
    assert len(ran.stdout.splitlines()) == 2, ran.output
    assert f"s3://{bucket}/{big}: refused, larger than 1 MiB" in ran.stderr
    assert f"s3://{bucket}/{wrong}: an audit record refused: not UTF-8" in ran.stderr
    assert "Traceback" not in ran.output


# ------------------------------------------------------------------ end to end


def test_a_record_deleted_after_two_real_applies_is_named_by_invoke_audit(
    example_repo: Path, tmp_path: Path
) -> None:
    for name in ("first", "second"):
        out = tmp_path / name
        planned = invoke(example_repo, "plan", "--out", str(out), "--unit", "live/cloud/iam")
        assert planned.returncode == 0, planned.output
        applied = invoke(example_repo, "apply", "--plans", str(out))
        assert applied.returncode == 0, applied.output
    assert invoke(example_repo, "audit").returncode == 0
    trail = example_repo / ".iac/state"
    files = sorted((trail / "audit").rglob("*.json"))
    gone = files[len(files) // 2 - 1]  # the last record of the first apply
    gone.unlink()
    ran = invoke(example_repo, "audit")
    assert ran.returncode == 1, ran.output
    assert f"{gone.relative_to(trail).as_posix()}: missing: " in ran.stderr


def test_an_apply_killed_after_it_started_is_listed_as_interrupted_at_the_time_it_ran(
    example_repo: Path, tmp_path: Path
) -> None:
    """SIGKILL between the apply and the record after it: the record before it stays."""
    from test_apply import SLOW_MODULE, _popen_apply

    local_unit(example_repo, "slow", SLOW_MODULE, "\ninputs = {\n  seconds = 8\n}\n")
    commit_all(example_repo, "slow unit")
    out = tmp_path / "plans"
    planned = invoke(example_repo, "plan", "--out", str(out), "--unit", "live/cloud/slow")
    assert planned.returncode == 0, planned.output
    proc = _popen_apply(example_repo, out)
    deadline = time.monotonic() + 120
    record = out / "apply.json"
    # OpenTofu is applying: the folder's record says so (saved just before it starts)
    while not (record.is_file() and '"result": "running"' in record.read_text()):
        assert time.monotonic() < deadline and proc.poll() is None, "the apply never started"
        time.sleep(0.1)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    state = example_repo / ".iac/state/live/cloud/slow/terraform.tfstate"
    lock = state.parent / ".terraform.tfstate.lock.info"
    # OpenTofu finishes on its own: the state saved, the lock released
    while not (state.is_file() and state.stat().st_size > 0) or lock.exists():
        assert time.monotonic() < deadline, "OpenTofu never saved the state"
        time.sleep(0.2)

    ran = invoke(example_repo, "audit")
    assert ran.returncode == 0, ran.output
    (line,) = ran.stdout.splitlines()
    assert "interrupted (started, never completed" in line and "live/cloud/slow" in line
    killed_at = line.split()[0]
    # the next run finds it applied earlier, and says so at its own time; the killed run
    # stays listed at the time it ran, with the plan it was given
    time.sleep(1)
    again = invoke(example_repo, "apply", "--plans", str(out))
    assert again.returncode == 0, again.output
    ran = invoke(example_repo, "audit", "--json")
    records = json.loads(ran.stdout)["records"]
    assert [r["state"] for r in records] == ["started", "started", "completed"]
    assert records[0]["at"] == killed_at and records[2]["at"] > killed_at
    assert records[0]["units"][0]["plan_sha256"] == records[2]["units"][0]["plan_sha256"]
    assert "applied by an earlier run that was stopped" in records[2]["units"][0]["reason"]
    lines = invoke(example_repo, "audit").stdout.splitlines()
    assert len(lines) == 2 and "interrupted" in lines[0] and " applied" in lines[1]
