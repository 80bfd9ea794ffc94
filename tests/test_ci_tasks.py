"""The workflows' steps as tasks: routing, the apply base, the merged reports.

The pure decisions (tooling.core.ci.steps) as tables; the flows (tooling.commands.ci)
against real git repositories and the local GitHub API server.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ghserver import BOT, GitHubAPI
from infra_fixtures import commit_all, git
from schema_check import summary_doc, summary_unit

from tooling.commands import ci as flow
from tooling.commands import mergequeue
from tooling.core.ci import steps
from tooling.errors import ToolingError
from tooling.io.forge import Forge

ROUTES = {"hosted": ["ubuntu-latest"], "lan": ["self-hosted", "lan"]}
HOSTED = {"executor": "hosted", "runs_on": ["ubuntu-latest"], "units": ["live/cloud/dns"]}
LAN = {"executor": "lan", "runs_on": ["self-hosted", "lan"], "units": ["live/cluster/vms"]}
RUN_ENV = {
    "GITHUB_SERVER_URL": "https://github.com",
    "GITHUB_REPOSITORY": "example-org/infrastructure",
    "GITHUB_RUN_ID": "42",
}


# --------------------------------------------------------------------------- routing


def test_routes_accept_each_executor_on_its_own_runner() -> None:
    assert steps.checked_legs({"include": [HOSTED, LAN]}, ROUTES) == [HOSTED, LAN]
    assert steps.matrix_outputs([]) == {"matrix": '{"include":[]}', "any": "false"}


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({}, "no 'include' list"),
        (
            {"include": [{**LAN, "runs_on": ["ubuntu-latest"]}]},
            r"executor lan must run on \['self-hosted', 'lan'\]",
        ),
        (
            {"include": [{**HOSTED, "runs_on": ["self-hosted", "lan"]}]},
            "executor hosted must run on",
        ),
        (
            {"include": [{"executor": "gpu", "runs_on": ["gpu"]}]},
            "executor 'gpu', which the workflow's routes do not declare",
        ),
        ({"include": [HOSTED, HOSTED]}, "lists executor hosted twice"),
    ],
)
def test_routes_refuse_a_misrouted_matrix(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolingError, match=message):
        steps.checked_legs(doc, ROUTES)


@pytest.mark.parametrize(
    "text", ["", "[1]", '{"hosted": []}', '{"hosted": "ubuntu-latest"}', "{nope"]
)
def test_bad_routes_are_refused(text: str) -> None:
    with pytest.raises(ToolingError, match="--routes"):
        steps.parse_routes(text)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"base": "a\nmatrix=evil"}, "must be one line"),
        ({"bad name": "x"}, "not a step output name"),
    ],
)
def test_outputs_cannot_inject_another_output(values: dict[str, str], message: str) -> None:
    with pytest.raises(ToolingError, match=message):
        steps.output_lines(values)


# --------------------------------------------------------------------------- the apply base

SHA_A, SHA_B = "a" * 40, "b" * 40


@pytest.mark.parametrize(
    ("candidates", "ancestors", "expected"),
    [
        ([SHA_A, SHA_B], {SHA_A, SHA_B}, SHA_A),  # the last applied commit wins
        ([SHA_A, SHA_B], {SHA_B}, SHA_B),  # not an ancestor (a force-push): the push's before
        ([None, SHA_B], {SHA_B}, SHA_B),  # no successful run yet
        ([None, "0" * 40], {"0" * 40}, None),  # a new branch's before is no commit
        (["abc", "HEAD~3"], {"abc", "HEAD~3"}, None),  # only full SHAs
        ([None, None], set(), None),
    ],
)
def test_choose_base(
    candidates: list[str | None], ancestors: set[str], expected: str | None
) -> None:
    assert steps.choose_base(candidates, lambda sha: sha in ancestors) == expected


def _history(repo: Path) -> list[str]:
    return git(repo, "rev-list", "--reverse", "HEAD").split()


def _forge(api: GitHubAPI, pr: int | None = None) -> Forge:
    return Forge(api.token, "example-org/infrastructure", api.url, pr_number=pr)


def test_apply_base_is_the_head_of_the_last_successful_apply_run(
    example_repo: Path, github_api: GitHubAPI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tooling.io.workspace import Workspace

    for n in range(3):
        (example_repo / f"n{n}.md").write_text(f"{n}\n")
        commit_all(example_repo, f"commit {n}")
    commits = _history(example_repo)
    github_api.state.add_run("apply.yml", commits[-3])
    github_api.state.add_run("apply.yml", commits[-2], conclusion="failure")
    github_api.state.add_run("plan.yml", commits[-1])
    out = tmp_path / "out"
    monkeypatch.setenv("GITHUB_OUTPUT", str(out))
    ws = Workspace.here(example_repo)

    assert flow.apply_base(ws, before=commits[-2], forge=_forge(github_api)) == commits[-3]
    assert out.read_text() == f"base={commits[-3]}\n"
    (call,) = [r for r in github_api.requests if "/actions/" in r.path]
    assert call.path.endswith("/actions/workflows/apply.yml/runs")
    assert call.param("branch") == "main" and call.param("status") == "success"

    # no successful run: the push's before; nothing usable: HEAD^
    github_api.state.runs.clear()
    assert flow.apply_base(ws, before=commits[-2], forge=_forge(github_api)) == commits[-2]
    assert flow.apply_base(ws, before="0" * 40, forge=_forge(github_api)) == commits[-2]
    # a run whose head is not in this history (a force-push) is skipped
    github_api.state.add_run("apply.yml", "c" * 40)
    assert flow.apply_base(ws, before=commits[-3], forge=_forge(github_api)) == commits[-3]


# --------------------------------------------------------------------------- reports


def _plans(root: Path, reports: dict[str, dict[str, Any] | None]) -> Path:
    """plan-EXECUTOR folders as the artifacts arrive: comment.md and summary.json (None: the leg died)."""
    for executor, summary in reports.items():
        folder = root / f"plan-{executor}"
        folder.mkdir(parents=True)
        if summary is None:
            continue
        (folder / "summary.json").write_text(json.dumps(summary))
        (folder / "comment.md").write_text(
            f"{steps.PLAN_MARKER}\n**{executor}: 1 to change**\n\n| unit |\n\n<details>{'x' * 100}</details>\n"
        )
    return root


def _summary(*units: tuple[str, str, str]) -> dict[str, Any]:
    return summary_doc(
        [
            summary_unit(path, status, gate={"decision": decision, "reasons": [f"{path} reason"]})
            for path, status, decision in units
        ]
    )


def _event(tmp_path: Path, number: int, head_sha: str = "f" * 40) -> dict[str, str]:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": number, "head": {"sha": head_sha}}}))
    return {**RUN_ENV, "GITHUB_EVENT_PATH": str(event)}


def test_the_plan_comment_is_one_sticky_comment_with_every_executor_updated_in_place(
    github_api: GitHubAPI, tmp_path: Path
) -> None:
    pr = github_api.state.add_pull("feature")["number"]
    human = github_api.state.add_comment(
        pr, f"{steps.PLAN_MARKER}\nforged by a human"
    )  # the marker, but not ours
    plans = _plans(
        tmp_path / "plans", {"hosted": _summary(("live/cloud/dns", "changes", "auto")), "lan": None}
    )
    matrix = json.dumps({"include": [HOSTED, LAN]})
    env = _event(tmp_path, pr)

    flow.plan_comment(plans=plans, matrix=matrix, forge=_forge(github_api, pr), environ=env)
    flow.plan_comment(plans=plans, matrix=matrix, forge=_forge(github_api, pr), environ=env)

    comments = github_api.state.comments_on(pr)
    assert comments[0]["id"] == human["id"] and comments[0]["body"].endswith("forged by a human")
    (ours,) = [c for c in comments if c["user"]["type"] == "Bot"]
    body = ours["body"]
    assert "### Executor `hosted`" in body and "hosted: 1 to change" in body
    assert "**No report**: the lan plan did not finish" in body
    assert "https://github.com/example-org/infrastructure/actions/runs/42" in body
    assert body.count(steps.PLAN_MARKER) == 1
    writes = [m for m, p in github_api.calls() if m != "GET" and "/statuses/" not in p]
    assert writes == ["POST", "PATCH"]  # posted once, then updated in place


def test_no_affected_unit_posts_nothing_but_updates_an_earlier_comment(
    github_api: GitHubAPI, tmp_path: Path
) -> None:
    pr = github_api.state.add_pull("docs")["number"]
    env = _event(tmp_path, pr)
    empty = json.dumps({"include": []})
    flow.plan_comment(
        plans=tmp_path / "none", matrix=empty, forge=_forge(github_api, pr), environ=env
    )
    assert github_api.state.comments_on(pr) == []
    github_api.state.add_comment(pr, f"{steps.PLAN_MARKER}\nold plan", user=BOT)
    flow.plan_comment(
        plans=tmp_path / "none", matrix=empty, forge=_forge(github_api, pr), environ=env
    )
    (comment,) = github_api.state.comments_on(pr)
    assert "No infrastructure unit is affected by this pull request." in comment["body"]


def test_an_oversized_report_keeps_each_verdict_and_table() -> None:
    big = steps.Section(
        "hosted",
        f"{steps.PLAN_MARKER}\n**verdict**\n\n| table |\n\n<details>{'x' * 70_000}</details>",
    )
    body = steps.plan_comment("f" * 40, [big, steps.Section("lan", "**lan ok**")], "RUN")
    assert len(body) <= steps.BUDGET
    assert "**verdict**" in body and "| table |" in body and "**lan ok**" in body
    assert "artifact `plan-hosted`" in body
    huge = [steps.Section(f"e{i}", "v" * 40_000 + "\n<details>") for i in range(3)]
    assert "too large for a comment" in steps.plan_comment("f" * 40, huge, "RUN")


def test_the_apply_report_offers_only_executors_with_waiting_units_after_a_successful_auto_job(
    github_api: GitHubAPI, tmp_path: Path
) -> None:
    sha = "e" * 40
    pr = github_api.state.add_pull("feature")["number"]
    github_api.state.merge(pr, sha)
    plans = _plans(
        tmp_path / "plans",
        {
            "hosted": _summary(("live/cloud/dns", "changes", "auto")),
            "lan": _summary(
                ("live/cluster/vms", "changes", "manual"), ("live/cluster/os", "no-changes", "none")
            ),
        },
    )
    matrix = json.dumps({"include": [HOSTED, LAN]})
    out, summary = tmp_path / "output", tmp_path / "summary.md"
    env = {
        **RUN_ENV,
        "GITHUB_SHA": sha,
        "GITHUB_OUTPUT": str(out),
        "GITHUB_STEP_SUMMARY": str(summary),
    }

    flow.apply_report(
        plans=plans, matrix=matrix, apply_result="success", forge=_forge(github_api), environ=env
    )

    outputs = dict(line.split("=", 1) for line in out.read_text().splitlines())
    assert json.loads(outputs["manual_matrix"]) == {
        "include": [{"executor": "lan", "runs_on": ["self-hosted", "lan"]}]
    }
    assert outputs["manual_any"] == "true"
    (comment,) = github_api.state.comments_on(pr)
    assert comment["body"].startswith(steps.APPLY_MARKER)
    assert "**Waiting for approval in the `infra-manual` environment**" in comment["body"]
    assert "- `live/cluster/vms` (lan): live/cluster/vms reason" in comment["body"]
    assert "live/cluster/os" not in comment["body"].split("### Executor")[0]
    assert (
        "Waiting for approval" in summary.read_text()
        and steps.APPLY_MARKER not in summary.read_text()
    )

    # the auto job failed: nothing is offered for approval; the same comment is updated
    out.write_text("")
    flow.apply_report(
        plans=plans, matrix=matrix, apply_result="failure", forge=_forge(github_api), environ=env
    )
    outputs = dict(line.split("=", 1) for line in out.read_text().splitlines())
    assert outputs == {"manual_matrix": '{"include":[]}', "manual_any": "false"}
    (comment,) = github_api.state.comments_on(pr)
    assert "not offered for approval because the auto job failed" in comment["body"]


def test_the_apply_report_without_a_merged_pull_request_goes_to_the_summary_only(
    github_api: GitHubAPI, tmp_path: Path
) -> None:
    plans = _plans(tmp_path / "plans", {"hosted": _summary(("live/cloud/dns", "changes", "auto"))})
    env = {**RUN_ENV, "GITHUB_SHA": "d" * 40, "GITHUB_STEP_SUMMARY": str(tmp_path / "s.md")}
    flow.apply_report(
        plans=plans,
        matrix=json.dumps({"include": [HOSTED]}),
        apply_result="success",
        forge=_forge(github_api),
        environ=env,
    )
    assert [m for m, p in github_api.calls() if "/statuses/" not in p] == ["GET"]
    assert "Auto units: applied" in (tmp_path / "s.md").read_text()


@pytest.mark.parametrize("matrix", ["", "{nope", '{"include": [{"runs_on": []}]}'])
def test_a_bad_matrix_argument_is_refused(matrix: str, tmp_path: Path) -> None:
    with pytest.raises(ToolingError):
        flow.apply_report(
            plans=tmp_path, matrix=matrix, apply_result="success", forge=object(), environ={}
        )


def test_manual_gate_reads_the_plans_gate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "output"
    monkeypatch.setenv("GITHUB_OUTPUT", str(out))
    (tmp_path / "summary.json").write_text(
        json.dumps(_summary(("apps/billing", "changes", "manual")))
    )
    assert flow.manual_gate(plans=tmp_path) is True
    (tmp_path / "summary.json").write_text(
        json.dumps(_summary(("apps/billing", "no-changes", "manual")))
    )
    assert flow.manual_gate(plans=tmp_path) is False
    assert out.read_text() == "manual=true\nmanual=false\n"
    (tmp_path / "summary.json").write_text("{broken")
    with pytest.raises(ToolingError, match="not JSON"):
        flow.manual_gate(plans=tmp_path)
    with pytest.raises(ToolingError, match="not found"):
        flow.manual_gate(plans=tmp_path / "missing")


# --------------------------------------------------------------------------- reviewed plans


def _event_env(tmp_path: Path, name: str, event: dict[str, Any], sha: str = "") -> dict[str, str]:
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event))
    return {"GITHUB_EVENT_NAME": name, "GITHUB_EVENT_PATH": str(path), "GITHUB_SHA": sha}


def test_reviewed_run_of_a_merge_group_is_its_pull_requests_last_plan_run_at_its_head(
    github_api: GitHubAPI, tmp_path: Path
) -> None:
    head, base = "a" * 40, "b" * 40
    number = int(github_api.state.add_pull(head="change", head_sha=head)["number"])
    github_api.state.add_run("plan.yml", head, event="pull_request", run_id=4242)
    github_api.state.add_run("plan.yml", "c" * 40, event="pull_request", run_id=4343)
    ref = f"refs/heads/gh-readonly-queue/main/pr-{number}-{base}"
    env = _event_env(tmp_path, "merge_group", {"merge_group": {"head_ref": ref}})
    out = tmp_path / "reviewed"
    got = mergequeue.reviewed_run(out=out, forge=_forge(github_api), environ=env)
    assert got == {"run_id": "4242", "compare": "true"} and out.is_dir()

    other = int(github_api.state.add_pull(head="other", head_sha="d" * 40)["number"])
    env = _event_env(
        tmp_path,
        "merge_group",
        {"merge_group": {"head_ref": f"refs/heads/gh-readonly-queue/main/pr-{other}-{base}"}},
    )
    with pytest.raises(ToolingError, match=f"pull request #{other} has no successful plan.yml run"):
        mergequeue.reviewed_run(out=out, forge=_forge(github_api), environ=env)


def test_reviewed_run_after_a_merge_prefers_the_merge_groups_plans_and_a_direct_push_compares_nothing(
    github_api: GitHubAPI, tmp_path: Path
) -> None:
    head, merged = "a" * 40, "e" * 40
    number = int(github_api.state.add_pull(head="change", head_sha=head)["number"])
    github_api.state.merge(number, merged)
    github_api.state.add_run("plan.yml", head, event="pull_request", run_id=11)
    env = _event_env(tmp_path, "push", {}, sha=merged)
    out = tmp_path / "reviewed"
    assert mergequeue.reviewed_run(out=out, forge=_forge(github_api), environ=env)["run_id"] == "11"
    github_api.state.add_run("plan.yml", merged, event="merge_group", run_id=12)
    assert mergequeue.reviewed_run(out=out, forge=_forge(github_api), environ=env)["run_id"] == "12"
    direct = _event_env(tmp_path, "push", {}, sha="f" * 40)
    assert mergequeue.reviewed_run(out=out, forge=_forge(github_api), environ=direct) == {
        "run_id": "",
        "compare": "false",
    }


def test_reviewed_check_fails_naming_each_unit_that_differs_and_passes_otherwise(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    same = summary_unit("live/cloud/iam")
    differs = summary_unit("live/cloud/dns")
    differs["gate"] = {
        "decision": "manual",
        "reasons": ["differs from the reviewed plan: terraform_data.record: other values of input"],
    }
    leg = tmp_path / "plans" / "plan-hosted"
    leg.mkdir(parents=True)
    (leg / "summary.json").write_text(json.dumps(summary_doc([same, differs])))
    assert mergequeue.reviewed_check(plans=tmp_path / "plans", plan_result="success") == 1
    err = capsys.readouterr().err
    assert "::error::live/cloud/dns: differs from the reviewed plan: terraform_data.record" in err
    assert "live/cloud/iam" not in err
    (leg / "summary.json").write_text(json.dumps(summary_doc([same])))
    assert mergequeue.reviewed_check(plans=tmp_path / "plans", plan_result="success") == 0
    assert mergequeue.reviewed_check(plans=tmp_path / "plans", plan_result="failure") == 1


def test_a_merge_groups_branch_names_its_pull_request() -> None:
    assert steps.queued_pull("refs/heads/gh-readonly-queue/main/pr-12-" + "a" * 40) == 12
    assert steps.queued_pull("gh-readonly-queue/release/v1/pr-7-" + "b" * 40) == 7
    assert steps.queued_pull("refs/heads/feature/pr-12") is None
