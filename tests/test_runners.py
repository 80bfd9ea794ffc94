"""LAN runner health: `invoke runners`, the routing job's check, the one runner issue.

Against the local GitHub API server (its ``/actions/runners`` answers as
GitHub does); ``invoke runners`` runs in the test's process (the same tasks,
parser and exit codes as the command line) in this repository, whose
policy.toml declares ``hosted`` (GitHub-hosted) and ``lan`` (self-hosted).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from ghserver import GitHubAPI
from infra_fixtures import REPO, commit_all, edit, git, invoke, invoke_in_process

from tooling.core.ci import runners
from tooling.errors import ToolingError
from tooling.io.forge import runners_forge_from_env
from tooling.model.policy import policy_from

ROUTES = '{"hosted": ["ubuntu-latest"], "lan": ["self-hosted", "lan"]}'


def _env(api: GitHubAPI) -> dict[str, str]:
    # the runners token is its own secret; the workflow token stays for the issues
    return {**api.env(), "GITHUB_TOKEN": "", "IAC_RUNNERS_TOKEN": api.token}


def _lan(doc: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = next(e for e in doc["executors"] if e["executor"] == "lan")
    return entry


# --------------------------------------------------------------------------- pure


@pytest.mark.parametrize(
    ("status", "busy", "state"),
    [
        ("online", False, "idle"),
        ("online", True, "busy"),
        ("offline", False, "offline"),
        ("offline", True, "offline"),
    ],
)
def test_a_busy_runner_is_online_and_an_offline_one_is_not(
    status: str, busy: bool, state: str
) -> None:
    assert runners.runner_state({"status": status, "busy": busy}) == state


def test_a_runner_must_carry_every_label_of_the_executor_case_insensitively() -> None:
    runner = {"labels": [{"name": "self-hosted"}, {"name": "Linux"}, {"name": "LAN"}]}
    assert runners.carries(runner, ["self-hosted", "lan"])
    assert not runners.carries({"labels": [{"name": "self-hosted"}]}, ["self-hosted", "lan"])


# --------------------------------------------------------------------------- invoke runners


def test_runners_lists_each_executors_runners_and_their_state(github_api: GitHubAPI) -> None:
    github_api.state.add_runner("lan-1", ["lan"], busy=True)
    github_api.state.add_runner("lan-2", ["lan"], status="offline")
    github_api.state.add_runner("gpu-1", ["gpu"])  # not the LAN executor's
    ran = invoke_in_process(REPO, "runners", "--json", env=_env(github_api))  # schema-checked
    assert ran.returncode == 0, ran.output
    doc = json.loads(ran.stdout)
    hosted = next(e for e in doc["executors"] if e["executor"] == "hosted")
    assert hosted == {
        "executor": "hosted",
        "runs_on": ["ubuntu-latest"],
        "self_hosted": False,
        "online": None,
        "runners": [],
    }
    lan = _lan(doc)
    assert lan["online"] == 1
    assert [(r["name"], r["state"]) for r in lan["runners"]] == [
        ("lan-1", "busy"),
        ("lan-2", "offline"),
    ]
    text = invoke_in_process(REPO, "runners", env=_env(github_api))
    assert text.returncode == 0, text.output
    assert "lan: 1 online [self-hosted, lan]" in text.stdout
    assert "busy     lan-1" in text.stdout and "offline  lan-2" in text.stdout
    sent = [r for r in github_api.requests if r.path.endswith("/actions/runners")]
    assert sent and all(r.header("Authorization") == f"Bearer {github_api.token}" for r in sent)


def test_require_fails_in_one_line_within_seconds_when_no_lan_runner_is_online(
    github_api: GitHubAPI,
) -> None:
    github_api.state.add_runner("lan-1", ["lan"], status="offline")
    started = time.monotonic()
    ran = invoke_in_process(REPO, "runners", "--require", "lan", env=_env(github_api))
    elapsed = time.monotonic() - started
    assert ran.returncode == 1, ran.output
    errors = [line for line in ran.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, ran.stderr
    assert "executor lan: no online self-hosted runner with labels [self-hosted, lan]" in errors[0]
    assert "all offline (lan-1)" in errors[0] and "docs/runbooks.md" in errors[0]
    assert elapsed < 60
    # a busy runner is online: the job waits its turn, it is not stuck
    github_api.state.set_runner("lan-1", status="online", busy=True)
    assert (
        invoke_in_process(REPO, "runners", "--require", "lan", env=_env(github_api)).returncode == 0
    )
    # the hosted executor never waits for a self-hosted runner
    github_api.state.set_runner("lan-1", status="offline")
    assert (
        invoke_in_process(REPO, "runners", "--require", "hosted", env=_env(github_api)).returncode
        == 0
    )


def test_require_an_undeclared_executor_is_bad_usage(github_api: GitHubAPI) -> None:
    ran = invoke_in_process(REPO, "runners", "--require", "gpu", env=_env(github_api))
    assert ran.returncode == 2, ran.output
    assert "declares no such executor (hosted, lan)" in ran.stderr


def test_a_token_that_may_not_list_runners_says_which_token_to_create(
    github_api: GitHubAPI,
) -> None:
    github_api.state.fail_next(403, "Resource not accessible by integration", path="/repos")
    ran = invoke_in_process(REPO, "runners", env=_env(github_api))
    assert ran.returncode == 1, ran.output
    assert "HTTP 403" in ran.stderr and "IAC_RUNNERS_TOKEN" in ran.stderr
    assert "Administration: read" in ran.stderr


def test_the_runners_token_comes_before_the_workflow_token_and_one_is_required() -> None:
    env = {"GITHUB_REPOSITORY": "o/r", "GITHUB_TOKEN": "ghs_workflow", "IAC_RUNNERS_TOKEN": "pat"}
    assert runners_forge_from_env(env)._token == "pat"
    assert runners_forge_from_env({**env, "IAC_RUNNERS_TOKEN": ""})._token == "ghs_workflow"
    with pytest.raises(ToolingError, match="IAC_RUNNERS_TOKEN"):
        runners_forge_from_env({"GITHUB_REPOSITORY": "o/r"})


def test_runners_are_listed_across_pages(github_api: GitHubAPI) -> None:
    for i in range(105):  # GitHub's pages hold at most 100
        github_api.state.add_runner(
            f"lan-{i:03}", ["lan"], status="offline" if i < 104 else "online"
        )
    from tooling.io.forge import Forge

    forge = Forge(github_api.token, "example-org/infrastructure", github_api.url)
    assert len(forge.list_runners()) == 105
    declared = policy_from({"executors": {"lan": {"runs_on": ["self-hosted", "lan"]}}}).executors
    doc = runners.report(declared, forge.list_runners())
    assert _lan(doc)["online"] == 1 and runners.unavailable(_lan(doc)) is None


def test_runners_stops_in_one_line_when_the_next_page_points_back_at_itself(
    github_api: GitHubAPI,
) -> None:
    github_api.state.add_runner("lan-1", ["lan"])
    github_api.state.break_links("/actions/runners", "self")
    started = time.monotonic()
    ran = invoke_in_process(REPO, "runners", env=_env(github_api))
    assert ran.returncode == 1, ran.output
    errors = [line for line in ran.stderr.splitlines() if line.strip()]
    assert len(errors) == 1, ran.stderr
    assert "GitHub API GET /repos/example-org/infrastructure/actions/runners:" in errors[0]
    assert "loops" in errors[0] and "Traceback" not in ran.output
    assert len(github_api.calls("GET", "/repos/example-org/infrastructure/actions/runners")) == 1
    assert time.monotonic() - started < 30


# --------------------------------------------------------------------------- the scheduled check


def test_the_scheduled_check_opens_one_issue_keeps_it_and_closes_it_when_a_runner_is_back(
    github_api: GitHubAPI,
) -> None:
    github_api.state.add_runner("lan-1", ["lan"], status="offline")
    env = {**github_api.env(), "IAC_RUNNERS_TOKEN": github_api.token}
    for _ in range(2):  # the second run finds the issue and writes nothing
        ran = invoke_in_process(REPO, "runners", "--issue", env=env)
        assert ran.returncode == 0, ran.output
    opened = [n for n, i in github_api.state.issues.items() if not i["is_pull"]]
    assert len(opened) == 1
    issue = github_api.state.issue_json(opened[0])
    assert issue["state"] == "open" and issue["title"] == "No online runner for executor lan"
    assert [label["name"] for label in issue["labels"]] == ["runners"]
    assert runners.marker("lan") in issue["body"] and "all offline (lan-1)" in issue["body"]
    assert len(github_api.calls("POST", "/repos/example-org/infrastructure/issues")) == 1
    assert github_api.calls("PATCH") == []
    github_api.state.set_runner("lan-1", status="online")
    ran = invoke_in_process(REPO, "runners", "--issue", env=env)
    assert ran.returncode == 0, ran.output
    assert f"#{opened[0]} closed" in ran.stderr
    closed = github_api.state.issue_json(opened[0])
    assert closed["state"] == "closed"
    assert "online again (lan-1" in github_api.state.comments_on(opened[0])[-1]["body"]
    # and a later outage opens a new one, not the closed one
    github_api.state.set_runner("lan-1", status="offline")
    assert invoke_in_process(REPO, "runners", "--issue", env=env).returncode == 0
    assert len([i for i in github_api.state.issues.values() if i["state"] == "open"]) == 1


# --------------------------------------------------------------------------- the routing job


def test_matrix_with_runners_leaves_out_a_lan_leg_without_runner_and_keeps_the_hosted_leg(
    example_repo: Path, github_api: GitHubAPI, tmp_path: Path
) -> None:
    github_api.state.add_runner("lan-1", ["lan"], status="offline")
    git(example_repo, "checkout", "--quiet", "-b", "mixed")
    edit(example_repo, "live/cluster/vms/terragrunt.hcl", "?ref=v1.1.0", "?ref=v1.2.0")
    edit(example_repo, "live/cloud/dns/terragrunt.hcl", "ttl = 60", "ttl = 120")
    commit_all(example_repo, "a cloud and a cluster change")
    outputs = tmp_path / "github_output"
    env = {**_env(github_api), "GITHUB_OUTPUT": str(outputs)}
    started = time.monotonic()
    ran = invoke(example_repo, "matrix", "--base", "main", "--routes", ROUTES, "--runners", env=env)
    assert time.monotonic() - started < 60
    assert ran.returncode == 0, ran.output
    assert [leg["executor"] for leg in json.loads(ran.stdout)["include"]] == ["hosted"]
    values = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    assert values["any"] == "true" and values["any_unavailable"] == "true"
    assert [leg["executor"] for leg in json.loads(values["matrix"])["include"]] == ["hosted"]
    (missing,) = json.loads(values["unavailable"])["include"]
    assert missing["executor"] == "lan"
    assert missing["message"].startswith("executor lan: no online self-hosted runner")
    assert f"::error::{missing['message']}" in ran.stderr
    # a runner back online: both legs are dispatched
    github_api.state.set_runner("lan-1", status="online")
    outputs.unlink()
    ran = invoke(example_repo, "matrix", "--base", "main", "--routes", ROUTES, "--runners", env=env)
    assert ran.returncode == 0, ran.output
    assert [leg["executor"] for leg in json.loads(ran.stdout)["include"]] == ["hosted", "lan"]
    assert "any_unavailable=false" in outputs.read_text()


def test_a_hosted_only_change_never_asks_for_the_runners(
    example_repo: Path, github_api: GitHubAPI, tmp_path: Path
) -> None:
    git(example_repo, "checkout", "--quiet", "-b", "dns")
    edit(example_repo, "live/cloud/dns/terragrunt.hcl", "ttl = 60", "ttl = 120")
    commit_all(example_repo, "a cloud change")
    env = {**github_api.env(), "GITHUB_TOKEN": "", "GITHUB_OUTPUT": str(tmp_path / "out")}
    ran = invoke(example_repo, "matrix", "--base", "main", "--routes", ROUTES, "--runners", env=env)
    assert ran.returncode == 0, ran.output  # no runners token needed
    assert github_api.requests == []
