"""``invoke drift``: real terragrunt and tofu on the applied sandbox, a change made
outside OpenTofu, the local GitHub API server, and moto's S3 for the lock.

The out-of-band change edits the unit's *state* (the record OpenTofu keeps of
reality): a ``terraform_data`` attribute changed there is what a real object
changed in a console looks like to the next plan. The built-in
``terraform_data`` provider's refresh returns the stored object unchanged, so
OpenTofu shows this drift as a planned in-place update (exit code 2 with
``-detailed-exitcode``), not in ``resource_drift``; real providers report
both, and the pure tests below cover ``resource_drift``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from ghserver import GitHubAPI
from infra_fixtures import EXAMPLE_UNITS, Invoked, apply_everything, commit_all, invoke

from tooling.core.plan.planjson import COUNT_KEYS, summarize
from tooling.core.plan.results import Result
from tooling.core.report import drift as drift_report

DNS = "live/cloud/dns"
GITOPS = "live/cluster/gitops"
DNS_RECORD = 'terraform_data.record["api"]'
GITOPS_KUSTOMIZATION = 'terraform_data.kustomization["apps"]'
ALL_UNITS = EXAMPLE_UNITS


# --------------------------------------------------------------------------- helpers


def apply_sandbox(repo: Path, tmp_path: Path) -> None:
    """Apply every unit the way the pipeline does: plan, then apply the saved plans (again
    while a re-plan on real outputs waits for a new approval)."""
    apply_everything(repo, tmp_path / "applied")


def edit_state_json(state: dict[str, Any], name: str, key: str, field: str, value: object) -> None:
    """Change one attribute of a ``terraform_data`` instance, as a console edit would."""
    for resource in state["resources"]:
        if resource["name"] != name:
            continue
        for instance in resource["instances"]:
            if instance.get("index_key") == key:
                for attribute in ("input", "output"):
                    instance["attributes"][attribute]["value"][field] = value
                state["serial"] += 1
                return
    raise AssertionError(f"no {name}[{key!r}] in the state")


def change_out_of_band(
    repo: Path, unit: str, name: str, key: str, field: str, value: object
) -> bytes:
    """Edit the unit's local state file; return its previous bytes (to restore)."""
    path = repo / ".iac" / "state" / unit / "terraform.tfstate"
    before = path.read_bytes()
    state = json.loads(before)
    edit_state_json(state, name, key, field, value)
    path.write_text(json.dumps(state, indent=2))
    return before


def run_drift(
    repo: Path, out: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[Invoked, dict[str, Any]]:
    ran = invoke(repo, "drift", "--out", str(out), *args, env=env)
    doc: dict[str, Any] = (
        json.loads((out / "drift.json").read_text()) if (out / "drift.json").exists() else {}
    )
    return ran, doc


def units_of(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {u["path"]: u for u in doc["units"]}


def writes(api: GitHubAPI) -> list[tuple[str, str]]:
    return [call for call in api.calls() if call[0] != "GET"]


def issue_count(api: GitHubAPI) -> int:
    return len([n for n, rec in api.state.issues.items() if not rec["is_pull"]])


# --------------------------------------------------------------------------- end to end


def test_out_of_band_change_opens_one_issue_for_that_unit_and_fixing_it_closes_it(
    example_repo: Path, tmp_path: Path, github_api: GitHubAPI
) -> None:
    gh = github_api.env()
    apply_sandbox(example_repo, tmp_path)

    # In sync: exit 0, nothing drifted, no issue opened.
    ran, doc = run_drift(example_repo, tmp_path / "d0", "--issue", env=gh)
    assert ran.returncode == 0, ran.output
    assert [u["path"] for u in doc["units"]] == list(ALL_UNITS)
    assert doc["drifted"] == [] and doc["errors"] == []
    assert {u["status"] for u in doc["units"]} == {"in-sync"}
    assert {u["exit_code"] for u in doc["units"]} == {0}
    assert doc["issue"] == {"number": None, "url": None, "action": "none"}
    assert writes(github_api) == []

    # Someone changes a DNS record outside OpenTofu.
    change_out_of_band(example_repo, DNS, "record", "api", "content", "198.51.100.66")
    ran, doc = run_drift(example_repo, tmp_path / "d1", "--issue", env=gh)
    assert ran.returncode == 0, ran.output  # drift is reported, not an error
    assert "drift is reported, not an error" in ran.stderr
    assert doc["drifted"] == [DNS]
    dns = units_of(doc)[DNS]
    assert dns["status"] == "drifted" and dns["drifted"] is True
    assert dns["exit_code"] == 2
    assert dns["drift"] == [DNS_RECORD]
    assert dns["changes"] == [{"address": DNS_RECORD, "action": "update"}]
    assert dns["counts"]["update"] == 1
    assert all(u["status"] == "in-sync" for path, u in units_of(doc).items() if path != DNS)
    # the plan text says what differs; the binary plans are gone
    assert "198.51.100.66" in (tmp_path / "d1" / dns["text_file"]).read_text()
    assert not list((tmp_path / "d1").rglob("*.tfplan"))
    md = (tmp_path / "d1" / "drift.md").read_text()
    assert f"`{DNS}`" in md and "**drifted**" in md

    # One issue, labelled, listing that unit only.
    assert issue_count(github_api) == 1
    (number,) = github_api.state.issues
    issue = github_api.state.issue_json(number)
    assert issue["state"] == "open"
    assert [label["name"] for label in issue["labels"]] == ["drift"]
    assert drift_report.MARKER in issue["body"]
    assert DNS in issue["title"]
    assert f"`{DNS}`" in issue["body"] and f"`{DNS_RECORD}`" in issue["body"]
    for other in ALL_UNITS:
        if other != DNS:
            assert other not in issue["body"], other
    assert doc["issue"]["number"] == number and doc["issue"]["action"] == "created"

    # Unchanged re-run: the same issue, not one write.
    before = len(github_api.requests)
    ran, doc = run_drift(example_repo, tmp_path / "d2", "--issue", env=gh)
    assert ran.returncode == 0, ran.output
    assert doc["drifted"] == [DNS]
    assert doc["issue"]["action"] == "unchanged"
    assert [r.method for r in github_api.requests[before:]] == ["GET"] * (
        len(github_api.requests) - before
    )
    assert issue_count(github_api) == 1

    # Fixed the pipeline's way: plan the unit, apply the saved plan.
    fix = tmp_path / "fix"
    planned = invoke(example_repo, "plan", "--unit", DNS, "--out", str(fix))
    assert planned.returncode == 0, planned.output
    applied = invoke(example_repo, "apply", "--plans", str(fix))
    assert applied.returncode == 0, applied.output

    ran, doc = run_drift(example_repo, tmp_path / "d3", "--issue", env=gh)
    assert ran.returncode == 0, ran.output
    assert doc["drifted"] == []
    assert doc["issue"] == {"number": number, "url": issue["html_url"], "action": "closed"}
    assert github_api.state.issue_json(number)["state"] == "closed"
    (closing,) = github_api.state.comments_on(number)
    assert f"drift resolved: `{DNS}`" in closing["body"] and "No drift remains" in closing["body"]

    # In sync again and the issue closed: nothing is opened or reopened.
    ran, doc = run_drift(example_repo, tmp_path / "d4", "--issue", env=gh)
    assert ran.returncode == 0, ran.output
    assert doc["issue"]["action"] == "none"
    assert issue_count(github_api) == 1
    assert github_api.state.issue_json(number)["state"] == "closed"


def test_each_executor_updates_only_its_units_and_a_failed_plan_keeps_its_entry(
    example_repo: Path, tmp_path: Path, github_api: GitHubAPI
) -> None:
    gh = github_api.env()
    apply_sandbox(example_repo, tmp_path)
    dns_before = change_out_of_band(example_repo, DNS, "record", "api", "content", "198.51.100.66")
    change_out_of_band(example_repo, GITOPS, "kustomization", "apps", "prune", False)

    # The hosted leg sees only its units: dns.
    ran, doc = run_drift(example_repo, tmp_path / "h1", "--executor", "hosted", "--issue", env=gh)
    assert ran.returncode == 0, ran.output
    assert doc["executor"] == "hosted"
    assert [u["path"] for u in doc["units"]] == [
        p for p in ALL_UNITS if p.startswith("live/cloud/")
    ]
    assert doc["drifted"] == [DNS]
    (number,) = github_api.state.issues
    assert GITOPS not in github_api.state.issue_json(number)["body"]

    # The lan leg adds gitops to the same issue and keeps dns.
    ran, doc = run_drift(example_repo, tmp_path / "l1", "--executor", "lan", "--issue", env=gh)
    assert ran.returncode == 0, ran.output
    assert doc["drifted"] == [GITOPS]
    assert units_of(doc)[GITOPS]["drift"] == [GITOPS_KUSTOMIZATION]
    assert issue_count(github_api) == 1
    issue = github_api.state.issue_json(number)
    assert f"`{DNS}`" in issue["body"] and f"`{GITOPS}`" in issue["body"]
    assert issue["title"].startswith("Drift in 2 units")
    assert f"new drift: `{GITOPS}`" in github_api.state.comments_on(number)[-1]["body"]

    # dns's state is unreadable: its plan fails (exit 1), and its entry stays:
    # it was not checked, so nobody may conclude its drift is gone.
    state_file = example_repo / ".iac" / "state" / DNS / "terraform.tfstate"
    state_file.write_text("{ not json")
    ran, doc = run_drift(example_repo, tmp_path / "h2", "--executor", "hosted", "--issue", env=gh)
    assert ran.returncode == 1, ran.output
    assert units_of(doc)[DNS]["status"] == "error" and DNS in doc["errors"]
    assert "not checked (plan failed)" in ran.stderr
    issue = github_api.state.issue_json(number)
    assert issue["state"] == "open" and f"`{DNS}`" in issue["body"]

    # dns restored (the backup of its state): removed from the issue, which
    # stays open for gitops.
    state_file.write_bytes(dns_before)
    ran, doc = run_drift(example_repo, tmp_path / "h3", "--executor", "hosted", "--issue", env=gh)
    assert ran.returncode == 0, ran.output
    assert doc["drifted"] == [] and doc["issue"]["action"] == "updated"
    issue = github_api.state.issue_json(number)
    assert issue["state"] == "open"
    assert f"`{DNS}`" not in issue["body"] and f"`{GITOPS}`" in issue["body"]
    assert issue["title"] == f"Drift: {GITOPS} differs from the code"
    assert f"drift resolved: `{DNS}`" in github_api.state.comments_on(number)[-1]["body"]


def test_drift_plans_without_the_lock_against_s3_state(
    example_repo: Path, tmp_path: Path, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A held (or stuck) lock blocks plans and applies, not drift: the plan role cannot
    write lock files, and a plan never writes state. The lock is left alone."""
    endpoint = aws_env["AWS_ENDPOINT_URL"]
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    bucket = f"drift-{tmp_path.name.lower().replace('_', '-')}"[:60]
    s3.create_bucket(Bucket=bucket)
    monkeypatch.setenv("IAC_STATE_BUCKET", bucket)
    monkeypatch.setenv("IAC_STATE_ENDPOINT", endpoint)
    plans = tmp_path / "p"
    assert invoke(example_repo, "plan", "--unit", DNS, "--out", str(plans)).returncode == 0
    applied = invoke(example_repo, "apply", "--plans", str(plans))
    assert applied.returncode == 0, applied.output

    key = f"{DNS}/terraform.tfstate"
    lock = json.dumps(
        {
            "ID": "3f1d6a52-9c55-4f1e-8d4b-2b7f2a3c9e10",
            "Operation": "OperationTypeApply",
            "Info": "",
            "Who": "runner@lan-1",
            "Version": "1.12.6",
            "Created": "2026-01-01T00:00:00Z",
            "Path": f"{bucket}/{key}",
        }
    )
    s3.put_object(Bucket=bucket, Key=f"{key}.tflock", Body=lock.encode())
    blocked = invoke(example_repo, "plan", "--unit", DNS, "--out", str(tmp_path / "blocked"))
    assert (
        blocked.returncode == 1
        and "runner@lan-1" in (tmp_path / "blocked" / "units" / DNS / "plan.log").read_text()
    )

    state = json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    edit_state_json(state, "record", "www", "ttl", 3600)
    s3.put_object(Bucket=bucket, Key=key, Body=json.dumps(state).encode())

    ran, doc = run_drift(example_repo, tmp_path / "d", "--executor", "hosted")
    assert ran.returncode == 0, ran.output
    dns = units_of(doc)[DNS]
    assert dns["status"] == "drifted" and dns["drift"] == ['terraform_data.record["www"]']
    assert "-lock=false" in (tmp_path / "d" / "units" / DNS / "plan.log").read_text()
    assert s3.get_object(Bucket=bucket, Key=f"{key}.tflock")["Body"].read().decode() == lock


def test_drift_redacts_the_attributes_policy_toml_declares(
    example_repo: Path, tmp_path: Path
) -> None:
    url = "000000000000.dkr.ecr.us-east-1.amazonaws.com/web"  # registry's repository input.url
    policy = example_repo / "policy.toml"
    text = policy.read_text(encoding="utf-8")
    assert text.rstrip().endswith('# docker_container = ["env"]')  # the table comes last
    policy.write_text(text + 'terraform_data = ["input.url"]\n', encoding="utf-8")
    commit_all(example_repo, "declare the repository URLs sensitive")
    out = tmp_path / "drift"
    ran, doc = run_drift(example_repo, out, "--executor", "hosted")
    # nothing is applied in the example: the registry's plan creates its repositories
    assert units_of(doc)["live/cloud/registry"]["drifted"] is True, ran.output
    plan_txt = next(out.rglob("live/cloud/registry/plan.txt")).read_text(encoding="utf-8")
    assert "url" in plan_txt and "(redacted)" in plan_txt
    for written in out.rglob("*"):
        if written.is_file() and written.suffix in (".txt", ".log", ".md", ".json"):
            assert url not in written.read_text(encoding="utf-8"), written
    assert url not in ran.output


def test_bad_usage_and_a_missing_token_fail_before_planning(
    example_repo: Path, tmp_path: Path
) -> None:
    ran = invoke(example_repo, "drift", "--executor", "nowhere", "--out", str(tmp_path / "a"))
    assert ran.returncode == 2
    assert "--executor nowhere" in ran.stderr and "hosted, lan" in ran.stderr
    ran = invoke(example_repo, "drift", "--issue", "--out", str(tmp_path / "b"))
    assert ran.returncode == 1
    assert "GITHUB_TOKEN is not set" in ran.stderr
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    assert "Traceback" not in ran.output
    # the output folder is emptied first: never one that holds something else
    precious = tmp_path / "notes"
    precious.mkdir()
    (precious / "todo.txt").write_text("keep me")
    ran = invoke(example_repo, "drift", "--out", str(precious))
    assert ran.returncode == 2 and "todo.txt" in ran.stderr
    assert (precious / "todo.txt").read_text() == "keep me"


# --------------------------------------------------------------------------- pure parts


def _result(plan: dict[str, Any], exit_code: int) -> Result:
    summary = summarize(plan)
    return Result(
        "live/cloud/registry",
        "cloud",
        "hosted",
        "all",
        "changes" if summary.has_changes else "no-changes",
        counts=summary.counts,
        summary=summary,
        exit_code=exit_code,
    )


def _rc(address: str, actions: list[str]) -> dict[str, Any]:
    return {
        "address": address,
        "mode": "managed",
        "type": "aws_s3_bucket",
        "change": {"actions": actions, "before": {"a": 1}, "after": {"a": 2}},
    }


@pytest.mark.parametrize(
    ("plan", "exit_code", "status", "drift", "outside"),
    [
        ({"resource_changes": [_rc("x.a", ["no-op"])]}, 0, "in-sync", [], []),
        # a real provider's refresh saw the object change; the code ignores it (no planned change)
        (
            {
                "resource_changes": [_rc("x.a", ["no-op"])],
                "resource_drift": [_rc("x.a", ["update"])],
            },
            0,
            "drifted",
            ["x.a"],
            [("x.a", "update")],
        ),
        # changed outside and reverted by the plan: listed once, outside first
        (
            {
                "resource_changes": [_rc("x.a", ["update"]), _rc("x.b", ["create"])],
                "resource_drift": [_rc("x.a", ["update"])],
            },
            2,
            "drifted",
            ["x.a", "x.b"],
            [("x.a", "update")],
        ),
        # deleted outside OpenTofu: the plan creates it again
        (
            {
                "resource_changes": [_rc("x.a", ["create"])],
                "resource_drift": [_rc("x.a", ["delete"])],
            },
            2,
            "drifted",
            ["x.a"],
            [("x.a", "delete")],
        ),
        # only the exit code says so (e.g. an output-only difference)
        ({"resource_changes": []}, 2, "drifted", [], []),
    ],
)
def test_classify(
    plan: dict[str, Any],
    exit_code: int,
    status: str,
    drift: list[str],
    outside: list[tuple[str, str]],
) -> None:
    verdict = drift_report.classify(_result(plan, exit_code))
    assert verdict.status == status
    assert list(verdict.drift) == drift
    assert list(verdict.changed_outside) == outside


def test_classify_a_failed_plan_is_not_checked() -> None:
    failed = Result("live/x", "cloud", "hosted", "all", "error", error="Error: boom")
    blocked = Result(
        "live/y", "cloud", "hosted", "all", "not-planned", error="its dependency failed"
    )
    assert (
        drift_report.classify(failed).status == "error"
        and not drift_report.classify(failed).checked
    )
    assert drift_report.classify(blocked).status == "not-planned"


def _unit(path: str, status: str, drift: tuple[str, ...] = ()) -> drift_report.UnitDrift:
    return drift_report.UnitDrift(path, "cloud", "hosted", status, drift=drift)


def _entry(path: str, seen: str = "2026-01-01") -> drift_report.Entry:
    counts = dict.fromkeys(COUNT_KEYS, 0)
    return drift_report.Entry(path, "cloud", "hosted", counts, ("x.a",), 0, seen, "abc", None)


def test_merge_keeps_unchecked_and_other_executors_units_and_drops_removed_units() -> None:
    previous = {p: _entry(p) for p in ("live/a", "live/b", "live/c", "live/gone", "live/lan")}
    merged = drift_report.merge(
        previous,
        [
            _unit(
                "live/a", "drifted", ("x.b",)
            ),  # still drifted: first seen kept, addresses updated
            _unit("live/b", "in-sync"),  # resolved
            _unit("live/c", "error"),  # not checked: kept as it was
            _unit("live/new", "drifted", ("y.a",)),  # new
        ],
        order=["live/new", "live/a", "live/b", "live/c", "live/lan"],
        head="0123456789abcdef",
        today="2026-02-02",
        run_url=None,
    )
    assert [e.path for e in merged.entries] == ["live/new", "live/a", "live/c", "live/lan"]
    by_path = {e.path: e for e in merged.entries}
    assert by_path["live/a"].first_seen == "2026-01-01" and by_path["live/a"].addresses == ("x.b",)
    assert by_path["live/c"] == previous["live/c"]
    assert (
        by_path["live/new"].first_seen == "2026-02-02"
        and by_path["live/new"].first_commit == "0123456789ab"
    )
    assert merged.added == ("live/new",)
    assert merged.resolved == ("live/b",)
    assert merged.gone == ("live/gone",)


def test_issue_body_round_trips_its_state_and_survives_hostile_text() -> None:
    entries = [
        _entry("live/a"),
        drift_report.Entry(
            "live/b",
            "cluster",
            "lan",
            _entry("x").counts,
            ('terraform_data.x["-->"]',),
            3,
            "2026-01-02",
            "def",
            "https://x/runs/1",
        ),
    ]
    body = drift_report.issue_body(entries)
    assert body.startswith(drift_report.MARKER)
    block = body[body.rfind(drift_report.STATE_OPEN) :]
    assert block.count("-->") == 1, "an address must not end the hidden block early"
    assert drift_report.parse_state(body) == {e.path: e for e in entries}
    assert "… and 3 more" in body
    assert drift_report.parse_state("no block here") == {}
    assert (
        drift_report.parse_state(drift_report.STATE_OPEN + "{broken" + drift_report.STATE_CLOSE)
        == {}
    )


def test_issue_body_fits_githubs_limit_however_many_addresses() -> None:
    counts = _entry("x").counts
    addresses = tuple(f'module.big.terraform_data.item["{"k" * 60}-{i}"]' for i in range(20))
    entries = [
        drift_report.Entry(
            f"live/t/u{n:03}", "cloud", "hosted", counts, addresses, 7, "2026-01-01", "abc"
        )
        for n in range(120)
    ]
    body = drift_report.issue_body(entries)
    assert len(body) <= drift_report.BODY_BUDGET
    state = drift_report.parse_state(body)
    assert list(state) == [e.path for e in entries], "every unit stays listed"
    assert all(e.more >= 7 for e in state.values())
