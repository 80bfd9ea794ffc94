"""A split matrix end to end: `invoke matrix --max-legs`, `invoke plan --from-matrix --leg`,
`invoke report --merge`, and the workflows' report steps merging the legs (real git,
tofu and terragrunt; the local GitHub API server)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from ghserver import GitHubAPI
from infra_fixtures import commit_all, edit, git, invoke, read_summary
from schema_check import problems

from tooling.commands import ci as flow
from tooling.core.ci import steps
from tooling.core.plan.gates import Gate
from tooling.core.plan.results import Result
from tooling.io.forge import Forge

pytestmark = pytest.mark.e2e

HOSTED = {"executor": "hosted", "runs_on": ["ubuntu-latest"]}
LAN = {"executor": "lan", "runs_on": ["self-hosted", "lan"]}
CLOUD = ["live/cloud/dns", "live/cloud/iam", "live/cloud/registry"]


def _change_three_cloud_units_and_the_cluster(repo: Path) -> None:
    """dns alone; iam and registry (which reads iam) together; the cluster's chain."""
    git(repo, "checkout", "--quiet", "-b", "wide")
    edit(repo, "live/cloud/dns/terragrunt.hcl", "ttl = 60", "ttl = 120")
    edit(
        repo,
        "live/cloud/iam/terragrunt.hcl",
        'github_org = "example-org"',
        'github_org = "example-org" # x',
    )
    edit(repo, "live/cloud/registry/terragrunt.hcl", 'include "root"', '# registry\ninclude "root"')
    edit(repo, "live/cluster/tier.hcl", 'gate       = "auto"', 'gate       = "auto" # reviewed')
    commit_all(repo, "three cloud units and the cluster tier")


def _matrix(repo: Path, *args: str) -> dict[str, Any]:
    ran = invoke(repo, "matrix", "--base", "main", *args)
    assert ran.returncode == 0, ran.output
    doc: dict[str, Any] = json.loads(ran.stdout)
    return doc


def _units(doc: dict[str, Any]) -> dict[str, list[str]]:
    return {str(e.get("leg") or e["executor"]): e["units"] for e in doc["include"]}


def test_max_legs_splits_an_executor_keeping_dependent_units_together(example_repo: Path) -> None:
    _change_three_cloud_units_and_the_cluster(example_repo)
    one = _matrix(example_repo)
    assert [e["executor"] for e in one["include"]] == ["hosted", "lan"]
    assert "leg" not in json.dumps(one)  # today's matrix unchanged without --max-legs
    assert _matrix(example_repo, "--max-legs", "1") == one
    split = _matrix(example_repo, "--max-legs", "4")
    assert _units(split) == {
        "hosted-1-of-2": ["live/cloud/dns"],
        "hosted-2-of-2": ["live/cloud/iam", "live/cloud/registry"],
        # the cluster's four units read each other: one part, one leg, today's entry
        "lan": [
            "live/cluster/network",
            "live/cluster/vms",
            "live/cluster/os",
            "live/cluster/gitops",
        ],
    }
    assert {e["runs_on"][0] for e in split["include"] if e["executor"] == "hosted"} == {
        "ubuntu-latest"
    }


def test_a_deleted_unit_shares_a_leg_with_the_units_it_read_at_the_base(
    example_repo: Path,
) -> None:
    """registry (which read iam) is deleted while iam changes: the head's graph no longer
    links them, the base's does, so the destroy and the update are in one leg."""
    git(example_repo, "checkout", "--quiet", "-b", "retire")
    shutil.rmtree(example_repo / "live/cloud/registry")
    edit(
        example_repo,
        "live/cloud/iam/terragrunt.hcl",
        'github_org = "example-org"',
        'github_org = "example-org" # x',
    )
    edit(example_repo, "live/cloud/dns/terragrunt.hcl", "ttl = 60", "ttl = 120")
    commit_all(example_repo, "retire the registry; touch iam and dns")
    legs = _units(_matrix(example_repo, "--max-legs", "4"))
    assert sorted(map(sorted, legs.values())) == [
        ["live/cloud/dns"],
        ["live/cloud/iam", "live/cloud/registry"],
    ]


def test_max_legs_in_policy_toml_splits_without_the_flag_and_the_flag_overrides_it(
    example_repo: Path,
) -> None:
    edit(
        example_repo,
        "policy.toml",
        'runs_on = ["ubuntu-latest"]',
        'runs_on = ["ubuntu-latest"]\nmax_legs = 3',
    )
    commit_all(example_repo, "hosted over up to 3 legs")
    _change_three_cloud_units_and_the_cluster(example_repo)
    assert set(_units(_matrix(example_repo))) == {"hosted-1-of-2", "hosted-2-of-2", "lan"}
    assert set(_units(_matrix(example_repo, "--max-legs", "1"))) == {"hosted", "lan"}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0", "--max-legs 0: pass a whole number from 1 to 256"),
        ("257", "--max-legs 257: pass a whole number from 1 to 256 (GitHub starts at most 256"),
        ("two", "--max-legs two: pass a whole number"),
        ("$(id)", "--max-legs $(id): pass a whole number"),
    ],
)
def test_a_bad_max_legs_is_a_usage_error_naming_githubs_limit(
    example_repo: Path, value: str, message: str
) -> None:
    ran = invoke(example_repo, "matrix", "--max-legs", value)
    assert ran.returncode == 2, ran.output
    assert message in ran.stderr
    assert ran.stdout == ""


def test_a_bad_max_legs_in_policy_toml_is_refused_before_anything_runs(example_repo: Path) -> None:
    edit(
        example_repo,
        "policy.toml",
        'runs_on = ["ubuntu-latest"]',
        'runs_on = ["ubuntu-latest"]\nmax_legs = 300',
    )
    ran = invoke(example_repo, "matrix")
    assert ran.returncode != 0
    assert "[executors.hosted] max_legs must be a whole number from 1 to 256" in ran.stderr


def test_each_leg_plans_only_its_units_and_the_merge_is_one_report_of_the_same_schema(
    example_repo: Path, tmp_path: Path
) -> None:
    _change_three_cloud_units_and_the_cluster(example_repo)
    doc = _matrix(example_repo, "--max-legs", "2")
    matrix_file = tmp_path / "matrix with space $(x).json"
    matrix_file.write_text(json.dumps(doc))
    folders = []
    for leg in ("hosted-1-of-2", "hosted-2-of-2"):
        out = tmp_path / f"plan-{leg}"
        # leg 1 from the matrix's file; leg 2 from its own entry, as the workflow passes it
        entry = next(e for e in doc["include"] if e.get("leg") == leg)
        source = str(matrix_file) if leg.startswith("hosted-1") else json.dumps(entry)
        ran = invoke(
            example_repo,
            "plan",
            "--base",
            "main",
            "--from-matrix",
            source,
            "--leg",
            leg,
            "--out",
            str(out),
        )
        assert ran.returncode == 0, ran.output
        summary = read_summary(out)
        assert [u["path"] for u in summary["units"]] == _units(doc)[leg]  # type: ignore[index]
        assert summary["executor"] == "hosted"
        assert summary["leg"] == {  # type: ignore[index]
            "id": leg,
            "index": int(leg.split("-")[1]),
            "count": 2,
            "units": _units(doc)[leg],
        }
        assert all(u["seconds"] > 0 for u in summary["units"])  # type: ignore[index,union-attr]
        folders.append(out)
    merged = tmp_path / "merged"
    ran = invoke(
        example_repo,
        "report",
        "--merge",
        str(folders[1]),
        "--merge",
        str(folders[0]),
        "--out",
        str(merged),
    )
    assert ran.returncode == 0, ran.output
    summary = read_summary(merged)
    assert problems("summary", summary) == []
    assert sorted(u["path"] for u in summary["units"]) == CLOUD  # type: ignore[union-attr,index]
    assert summary["legs"] == ["hosted-1-of-2", "hosted-2-of-2"]
    assert "leg" not in summary
    comment = (merged / "comment.md").read_text()
    for unit in CLOUD:
        assert unit in comment
    assert comment.startswith(steps.PLAN_MARKER)
    # the plans travel with the merged report: each plan file it names is there
    for unit in summary["units"]:  # type: ignore[union-attr]
        if unit["plan_file"]:  # type: ignore[index]
            assert (merged / unit["plan_file"]).is_file()  # type: ignore[index,operator]


def _leg_folder(
    tmp_path: Path, name: str, leg: dict[str, Any] | None, units: list[str], **extra: Any
) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    doc = {
        "version": 1,
        "base": "b" * 40,
        "head": "a" * 40,
        "executor": "hosted",
        "tools": {"opentofu": "1.12.6"},
        "interrupted": False,
        "units": [
            Result(
                u, "cloud", "hosted", "modified", "no-changes", seconds=1.5, gate=Gate("none", ())
            ).to_json()
            for u in units
        ],
        **({"leg": leg} if leg else {}),
        **extra,
    }
    (folder / "summary.json").write_text(json.dumps(doc))
    return folder


def _leg(index: int, count: int, units: list[str]) -> dict[str, Any]:
    return {"id": f"hosted-{index}-of-{count}", "index": index, "count": count, "units": units}


@pytest.mark.parametrize(
    ("second", "message"),
    [
        ({"head": "c" * 40}, "has head 'cccc"),
        ({"base": "d" * 40}, "has base 'dddd"),
        ({"tools": {"opentofu": "1.6.0"}}, "the legs planned different toolss"),
    ],
)
def test_the_merge_refuses_legs_of_different_runs_in_one_line(
    example_repo: Path, tmp_path: Path, second: dict[str, Any], message: str
) -> None:
    a = _leg_folder(tmp_path, "a", _leg(1, 2, ["x"]), ["x"])
    b = _leg_folder(tmp_path, "b", _leg(2, 2, ["y"]), ["y"], **second)
    ran = invoke(
        example_repo, "report", "--merge", str(a), "--merge", str(b), "--out", str(tmp_path / "m")
    )
    assert ran.returncode == 1, ran.output
    (line,) = [ln for ln in ran.stderr.splitlines() if ln.strip()]
    assert message.split("'")[0] in line, line
    assert not (tmp_path / "m" / "summary.json").exists()


def test_the_merge_refuses_a_unit_in_two_legs_and_a_missing_leg(
    example_repo: Path, tmp_path: Path
) -> None:
    a = _leg_folder(tmp_path, "a", _leg(1, 3, ["x"]), ["x"])
    b = _leg_folder(tmp_path, "b", _leg(2, 3, ["x"]), ["x"])
    c = _leg_folder(tmp_path, "c", _leg(3, 3, ["z"]), ["z"])
    ran = invoke(
        example_repo,
        "report",
        "--merge",
        str(a),
        "--merge",
        str(b),
        "--merge",
        str(c),
        "--out",
        str(tmp_path / "m"),
    )
    assert ran.returncode == 1
    assert "unit x is in" in ran.stderr and "a unit must be planned by one leg" in ran.stderr
    ran = invoke(
        example_repo, "report", "--merge", str(a), "--merge", str(c), "--out", str(tmp_path / "m")
    )
    assert ran.returncode == 1
    assert "leg(s) hosted-2-of-3 missing" in ran.stderr
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "summary.json").write_text("{not json")
    ran = invoke(
        example_repo,
        "report",
        "--merge",
        str(a),
        "--merge",
        str(broken),
        "--out",
        str(tmp_path / "m"),
    )
    assert (
        ran.returncode == 1 and "summary.json: a leg's summary.json refused: not JSON" in ran.stderr
    )
    ran = invoke(
        example_repo, "report", "--merge", str(tmp_path / "nowhere"), "--out", str(tmp_path / "m")
    )
    assert ran.returncode == 1 and "not found: pass the folders the legs'" in ran.stderr
    ran = invoke(example_repo, "report")
    assert ran.returncode == 2 and "report needs --merge DIR" in ran.stderr


def test_a_hostile_leg_summary_cannot_make_the_merge_read_files_outside_its_folder(
    example_repo: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-VALUE")
    a = _leg_folder(tmp_path, "a", _leg(1, 1, ["x"]), ["x"])
    doc = json.loads((a / "summary.json").read_text())
    doc["units"][0]["status"] = "changes"
    doc["units"][0]["text_file"] = "../secret.txt"
    (a / "summary.json").write_text(json.dumps(doc))
    ran = invoke(example_repo, "report", "--merge", str(a), "--out", str(tmp_path / "m"))
    assert ran.returncode == 1, ran.output
    assert "at units/0/text_file: not of the form ^units/" in ran.stderr
    assert "TOP-SECRET-VALUE" not in ran.output
    assert not (tmp_path / "m").exists()
    shutil.rmtree(a)  # an input broken on purpose, not a document the tooling wrote


def test_a_leg_that_lists_a_unit_this_change_does_not_affect_is_refused(
    example_repo: Path, tmp_path: Path
) -> None:
    _change_three_cloud_units_and_the_cluster(example_repo)
    doc = {
        "include": [
            {**HOSTED, "units": ["live/cloud/dns"], "leg": "hosted-1-of-2"},
            {**HOSTED, "units": ["live/cloud/ns-gone"], "leg": "hosted-2-of-2"},
        ]
    }
    ran = invoke(
        example_repo,
        "plan",
        "--base",
        "main",
        "--from-matrix",
        json.dumps(doc),
        "--leg",
        "hosted-2-of-2",
        "--out",
        str(tmp_path / "o"),
    )
    assert ran.returncode == 1
    assert (
        "leg hosted-2-of-2 lists live/cloud/ns-gone, which this change does not affect"
        in ran.stderr
    )
    ran = invoke(example_repo, "plan", "--from-matrix", json.dumps(doc), "--leg", "hosted-9-of-2")
    assert (
        ran.returncode == 1
        and "the matrix has no such leg (legs: hosted-1-of-2, hosted-2-of-2)" in ran.stderr
    )
    ran = invoke(example_repo, "plan", "--from-matrix", "no such file", "--leg", "x")
    assert ran.returncode == 2 and "not JSON and not a readable file" in ran.stderr
    ran = invoke(
        example_repo,
        "plan",
        "--from-matrix",
        json.dumps(doc),
        "--leg",
        "hosted-1-of-2",
        "--executor",
        "lan",
    )
    assert ran.returncode == 2
    assert "--leg hosted-1-of-2 is a leg of executor hosted, not lan" in ran.stderr
    ran = invoke(example_repo, "plan", "--leg", "hosted-1-of-2")
    assert ran.returncode == 2 and "--from-matrix and --leg go together" in ran.stderr
    ran = invoke(
        example_repo,
        "plan",
        "--from-matrix",
        json.dumps(doc),
        "--leg",
        "hosted-1-of-2",
        "--all",
    )
    assert ran.returncode == 2


def test_the_plan_comment_merges_a_split_executors_legs_and_says_when_one_is_missing(
    github_api: GitHubAPI, tmp_path: Path
) -> None:
    pr = github_api.state.add_pull("wide")["number"]
    plans = tmp_path / "plans"
    plans.mkdir()
    for n, unit in ((1, "live/cloud/iam"), (2, "live/cloud/dns"), (3, "live/cloud/registry")):
        shutil.move(
            _leg_folder(tmp_path, f"l{n}", _leg(n, 3, [unit]), [unit]),
            plans / f"plan-hosted-{n}-of-3",
        )
    matrix = {
        "include": [
            {**HOSTED, "units": [u], "leg": f"hosted-{n}-of-3"}
            for n, u in enumerate(["live/cloud/iam", "live/cloud/dns", "live/cloud/registry"], 1)
        ]
    }
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": pr, "head": {"sha": "a" * 40}}}))
    env = {
        "GITHUB_REPOSITORY": "example-org/infrastructure",
        "GITHUB_RUN_ID": "7",
        "GITHUB_EVENT_PATH": str(event),
    }
    forge = Forge(github_api.token, "example-org/infrastructure", github_api.url, pr_number=pr)
    flow.plan_comment(plans=plans, matrix=json.dumps(matrix), forge=forge, environ=env)
    (comment,) = [c for c in github_api.state.comments_on(pr)]
    body = comment["body"]
    assert body.count("### Executor `hosted`") == 1  # one section: the legs merged
    for unit in ("live/cloud/iam", "live/cloud/dns", "live/cloud/registry"):
        assert unit in body
    statuses = [p for m, p in github_api.calls() if "/statuses/" in p]
    assert len(statuses) == 1  # one status for the executor, not one per leg
    # a leg that did not finish: the executor has no report, and its status fails
    shutil.rmtree(plans / "plan-hosted")
    shutil.rmtree(plans / "plan-hosted-2-of-3")
    flow.plan_comment(plans=plans, matrix=json.dumps(matrix), forge=forge, environ=env)
    (comment,) = [c for c in github_api.state.comments_on(pr)]
    assert "**No report**: the hosted plan did not finish" in comment["body"]


def test_a_merge_too_large_for_one_comment_keeps_the_plan_reports_size_rules(
    example_repo: Path, tmp_path: Path
) -> None:
    """Four legs of 100 units, each with a 3 KB plan text: the merged comment.md stays
    within GitHub's 65,536 characters and still lists every unit in its table."""
    folders = []
    for n in range(1, 5):
        units = [f"live/cloud/u{n}-{i:03}" for i in range(100)]
        folder = _leg_folder(tmp_path, f"leg{n}", _leg(n, 4, units), units)
        doc = json.loads((folder / "summary.json").read_text())
        for unit in doc["units"]:
            unit["status"] = "changes"
            unit["counts"]["update"] = 1
            unit["changes"] = [{"address": "terraform_data.x", "action": "update"}]
            unit["text_file"] = f"units/{unit['path']}/plan.txt"
            (folder / unit["text_file"]).parent.mkdir(parents=True)
            (folder / unit["text_file"]).write_text("  ~ update in-place\n" * 150)
        (folder / "summary.json").write_text(json.dumps(doc))
        folders.append(folder)
    merged = tmp_path / "merged"
    args = [a for f in folders for a in ("--merge", str(f))]
    ran = invoke(example_repo, "report", *args, "--out", str(merged))
    assert ran.returncode == 0, ran.output
    comment = (merged / "comment.md").read_text()
    assert len(comment) <= 65_536
    assert "live/cloud/u1-000" in comment and "live/cloud/u4-099" in comment
    assert len(read_summary(merged)["units"]) == 400  # type: ignore[arg-type]


def test_a_timings_file_that_is_missing_or_not_json_is_refused_in_one_line(
    example_repo: Path, tmp_path: Path
) -> None:
    ran = invoke(example_repo, "matrix", "--max-legs", "2", "--timings", str(tmp_path / "none"))
    assert ran.returncode == 1
    assert "not found" in ran.stderr and "pass the summary.json of a plan folder" in ran.stderr
    bad = tmp_path / "bad $(id).json"
    bad.write_text("[1, 2")
    ran = invoke(example_repo, "matrix", "--max-legs", "2", "--timings", str(bad))
    assert ran.returncode == 1 and "not JSON" in ran.stderr
    assert ran.stdout == ""
