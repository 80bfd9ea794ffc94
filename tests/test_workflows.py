"""Tests of the GitHub Actions workflows in ``.github/workflows/``.

GitHub cannot run here, so these tests hold the workflows to their contract
statically: the files parse, every action is pinned by commit SHA, permissions
are explicit and minimal, each executor's jobs land on the right runner with the
right identity, untrusted strings never reach a script through ``${{ }}``, and
``actionlint`` (pinned in .tool-versions, installed by ``invoke setup``; it runs
shellcheck on the scripts when shellcheck is on PATH) reports nothing.

Note: YAML 1.1 reads the key ``on`` as the boolean ``True``; :func:`triggers`
looks up both.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sysconfig
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
GITHUB_DIR = REPO_ROOT / ".github"
WORKFLOWS_DIR = GITHUB_DIR / "workflows"
WORKFLOWS = ("plan.yml", "apply.yml", "bump.yml", "drift.yml", "check.yml", "app-infra.yml")

SHA_REF = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[0-9a-f]{40}$")
USES_LINE = re.compile(r"^\s*(?:-\s+)?uses:\s*(?P<ref>[^\s#]+)\s*(?P<rest>.*)$")
VERSION_COMMENT = re.compile(r"^#\s*v\d+(?:\.\d+){0,2}\b")
HOSTED = ["ubuntu-latest"]
LAN = ["self-hosted", "lan"]


@cache
def _load(name: str) -> dict[str, Any]:
    doc = yaml.safe_load((WORKFLOWS_DIR / name).read_text(encoding="utf-8"))
    assert isinstance(doc, dict), f"{name}: not a mapping"
    return doc


def load(name: str) -> dict[str, Any]:
    return _load(name)


def raw(name: str) -> str:
    return (WORKFLOWS_DIR / name).read_text(encoding="utf-8")


def triggers(doc: dict[Any, Any]) -> dict[str, Any]:
    """The ``on:`` block (YAML 1.1 parses the key ``on`` as ``True``)."""
    on = doc["on"] if "on" in doc else doc.get(True)
    if isinstance(on, str):
        return {on: None}
    if isinstance(on, list):
        return dict.fromkeys(on)
    assert isinstance(on, dict), "no 'on:' block"
    return on


def jobs(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    result = doc["jobs"]
    assert isinstance(result, dict) and result
    return result


def steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    return list(job.get("steps") or [])


def runs(job: dict[str, Any]) -> str:
    return "\n".join(s.get("run", "") for s in steps(job))


def steps_using(job: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [s for s in steps(job) if str(s.get("uses", "")).split("@")[0] == action]


def all_workflow_files() -> list[Path]:
    return sorted([*WORKFLOWS_DIR.glob("*.yml"), *WORKFLOWS_DIR.glob("*.yaml")])


# --------------------------------------------------------------------------- every workflow


def test_the_six_workflows_exist() -> None:
    missing = [name for name in WORKFLOWS if not (WORKFLOWS_DIR / name).is_file()]
    assert not missing, f"missing workflows: {missing}"


@pytest.mark.parametrize("path", all_workflow_files(), ids=lambda p: p.name)
def test_parses_with_name_triggers_and_jobs(path: Path) -> None:
    doc = load(path.name)
    assert doc.get("name")
    assert triggers(doc)
    assert jobs(doc)


def test_no_pull_request_target_anywhere() -> None:
    for path in GITHUB_DIR.rglob("*"):
        if path.is_file():
            assert "pull_request_target" not in path.read_text(
                encoding="utf-8", errors="replace"
            ), path
    for path in all_workflow_files():
        assert "pull_request_target" not in triggers(load(path.name)), path.name


def test_nothing_under_github_references_bootstrap() -> None:
    for path in GITHUB_DIR.rglob("*"):
        if path.is_file():
            assert "bootstrap/" not in path.read_text(encoding="utf-8", errors="replace"), (
                f"{path.relative_to(REPO_ROOT)} references bootstrap/, which never runs in CI"
            )


@pytest.mark.parametrize("path", all_workflow_files(), ids=lambda p: p.name)
def test_permissions_explicit_at_top_and_per_job(path: Path) -> None:
    doc = load(path.name)
    assert "permissions" in doc, f"{path.name}: no top-level permissions"
    top = doc["permissions"]
    assert top == {} or (
        isinstance(top, dict) and all(v in ("read", "none") for v in top.values())
    ), f"{path.name}: top-level permissions must be {{}} or read-only, got {top!r}"
    for name, job in jobs(doc).items():
        assert "permissions" in job, f"{path.name}: job {name} has no explicit permissions"
        perms = job["permissions"]
        assert isinstance(perms, dict), (
            f"{path.name}: job {name}: permissions must be a mapping, not {perms!r}"
        )
        assert "write-all" not in str(perms) and "read-all" not in str(perms)


@pytest.mark.parametrize("path", all_workflow_files(), ids=lambda p: p.name)
def test_every_job_has_a_timeout(path: Path) -> None:
    for name, job in jobs(load(path.name)).items():
        timeout = job.get("timeout-minutes")
        assert isinstance(timeout, int) and 0 < timeout <= 120, (
            f"{path.name}: job {name}: timeout-minutes {timeout!r}"
        )


@pytest.mark.parametrize("path", all_workflow_files(), ids=lambda p: p.name)
def test_every_action_is_pinned_by_full_sha_with_a_version_comment(path: Path) -> None:
    found = 0
    for lineno, line in enumerate(raw(path.name).splitlines(), 1):
        match = USES_LINE.match(line)
        if not match:
            continue
        ref = match["ref"].strip("'\"")
        if ref.startswith("./"):
            continue  # a local action or workflow of this repository
        found += 1
        assert not ref.startswith("docker://"), (
            f"{path.name}:{lineno}: docker actions are not allowed"
        )
        assert SHA_REF.match(ref), (
            f"{path.name}:{lineno}: {ref} is not pinned to a full 40-hex commit SHA"
        )
        assert VERSION_COMMENT.match(match["rest"]), (
            f"{path.name}:{lineno}: {ref} has no '# vX.Y.Z' comment"
        )
    assert found, f"{path.name}: no action found (is the test reading the right file?)"


def test_each_action_is_pinned_to_one_sha_and_one_version_everywhere() -> None:
    pins: dict[str, set[str]] = {}
    for path in all_workflow_files():
        for line in raw(path.name).splitlines():
            match = USES_LINE.match(line)
            if match and not match["ref"].startswith("./"):
                pins.setdefault(match["ref"].split("@")[0], set()).add(
                    match["ref"] + " " + match["rest"].strip()
                )
    drifting = {action: sorted(refs) for action, refs in pins.items() if len(refs) > 1}
    assert not drifting, f"actions pinned differently in different places: {drifting}"


@pytest.mark.parametrize("path", all_workflow_files(), ids=lambda p: p.name)
def test_no_expression_inside_run_scripts(path: Path) -> None:
    """Untrusted strings (titles, branch names) reach scripts through env: only.

    Stricter than the usual rule: no ``${{ }}`` at all inside a ``run:``, so a
    trusted-looking expression cannot become an injection later.
    """
    for name, job in jobs(load(path.name)).items():
        for step in steps(job):
            script = step.get("run", "")
            for bad in ("github.event.pull_request.title", "github.head_ref", "head.ref", "${{"):
                assert bad not in script, (
                    f"{path.name}: job {name}, step {step.get('name')!r}: {bad!r} inside run:"
                )


@pytest.mark.parametrize("path", all_workflow_files(), ids=lambda p: p.name)
def test_bash_scripts_are_strict(path: Path) -> None:
    doc = load(path.name)
    assert doc.get("defaults", {}).get("run", {}).get("shell") == "bash", (
        f"{path.name}: defaults.run.shell"
    )
    for name, job in jobs(doc).items():
        for step in steps(job):
            if "run" in step:
                assert step.get("shell", "bash") == "bash"
                assert step["run"].lstrip().startswith("set -euo pipefail"), (
                    f"{path.name}: job {name}, step {step.get('name')!r} does not start with set -euo pipefail"
                )


@pytest.mark.parametrize("path", all_workflow_files(), ids=lambda p: p.name)
def test_python_is_311_with_pip_cache(path: Path) -> None:
    for name, job in jobs(load(path.name)).items():
        for step in steps_using(job, "actions/setup-python"):
            assert str(step["with"]["python-version"]) == "3.11", f"{path.name}: job {name}"
            assert step["with"].get("cache") == "pip", f"{path.name}: job {name}"


@pytest.mark.parametrize("path", all_workflow_files(), ids=lambda p: p.name)
def test_checkouts_do_not_keep_the_token_except_to_push(path: Path) -> None:
    for name, job in jobs(load(path.name)).items():
        pushes = (job.get("permissions") or {}).get("contents") == "write"
        for step in steps_using(job, "actions/checkout"):
            keep = (step.get("with") or {}).get("persist-credentials", True)
            assert keep is False or pushes, (
                f"{path.name}: job {name}: checkout must set persist-credentials: false"
            )


@pytest.mark.parametrize("path", all_workflow_files(), ids=lambda p: p.name)
def test_vault_secrets_stay_in_step_outputs(path: Path) -> None:
    for name, job in jobs(load(path.name)).items():
        for step in steps_using(job, "hashicorp/vault-action"):
            with_ = step["with"]
            assert with_["method"] == "jwt", (
                f"{path.name}: job {name}: vault login must be JWT/OIDC"
            )
            assert with_.get("exportEnv") is False, (
                f"{path.name}: job {name}: exportEnv must be false"
            )
            assert with_.get("exportToken", False) is False
            assert "vars." in with_["role"], "the vault role comes from a repository variable"
            assert step.get("if") == "matrix.executor == 'lan'"
            assert (job.get("permissions") or {}).get("id-token") == "write"


def test_id_token_only_where_an_identity_is_assumed() -> None:
    for path in all_workflow_files():
        for name, job in jobs(load(path.name)).items():
            assumes = steps_using(job, "aws-actions/configure-aws-credentials") or steps_using(
                job, "hashicorp/vault-action"
            )
            has = (job.get("permissions") or {}).get("id-token") == "write"
            assert has == bool(assumes), (
                f"{path.name}: job {name}: id-token: write iff it assumes an identity"
            )


# --------------------------------------------------------------------------- plan.yml


def test_plan_runs_on_pull_request_and_the_merge_queue_only() -> None:
    assert set(triggers(load("plan.yml"))) == {"pull_request", "merge_group"}


def test_the_merge_queue_plans_against_the_reviewed_plans_and_its_check_names_what_differs() -> (
    None
):
    wf = jobs(load("plan.yml"))
    plan = wf["plan"]
    find = next(s for s in steps(plan) if "invoke reviewed-run" in s.get("run", ""))
    assert find["if"] == "github.event_name == 'merge_group'"
    (download,) = [
        s for s in steps_using(plan, "actions/download-artifact") if "run-id" in s["with"]
    ]
    assert download["with"]["run-id"] == "${{ steps.reviewed.outputs.run_id }}"
    for step in (s for s in steps(plan) if "invoke plan" in s.get("run", "")):
        assert '${REVIEWED:+--reviewed "${REVIEWED}"}' in step["run"]
    check = wf["reviewed"]
    assert "github.event_name == 'merge_group'" in check["if"]
    assert check["permissions"] == {"contents": "read"}
    (run,) = [s for s in steps(check) if "invoke reviewed-check" in s.get("run", "")]
    assert run["env"]["PLAN_RESULT"] == "${{ needs.plan.result }}"
    # the apply after the merge compares with the reviewed plans (the merge group's first)
    apply = jobs(load("apply.yml"))["apply"]
    assert any("invoke reviewed-run" in s.get("run", "") for s in steps(apply))
    for step in (s for s in steps(apply) if "invoke apply" in s.get("run", "")):
        assert '${REVIEWED:+--reviewed "${REVIEWED}"}' in step["run"]


def test_plan_matrix_job_computes_the_matrix_from_the_base() -> None:
    job = jobs(load("plan.yml"))["matrix"]
    checkout = steps_using(job, "actions/checkout")[0]
    assert checkout["with"]["fetch-depth"] == 0
    step = next(s for s in steps(job) if "invoke matrix" in s.get("run", ""))
    assert 'invoke matrix --base "${BASE}"' in step["run"]
    assert step["env"]["BASE"] == (
        "${{ github.event.merge_group.base_sha || format('origin/{0}', github.base_ref) }}"
    )
    assert job["outputs"]["matrix"] == "${{ steps.matrix.outputs.matrix }}"
    assert step["id"] == "matrix"
    # the routing guard: each executor on its own runner
    assert '--routes "${ROUTES}"' in step["run"]
    assert yaml.safe_load(step["env"]["ROUTES"]) == {
        "hosted": ["ubuntu-latest"],
        "lan": ["self-hosted", "lan"],
    }


def test_plan_routes_each_executor_to_its_runner_and_identity() -> None:
    job = jobs(load("plan.yml"))["plan"]
    assert job["needs"] == "matrix" or "matrix" in job["needs"]
    assert job["strategy"]["matrix"] == "${{ fromJSON(needs.matrix.outputs.matrix) }}"
    assert job["strategy"]["fail-fast"] is False
    assert job["runs-on"] == "${{ matrix.runs_on }}"
    assert "needs.matrix.outputs.any == 'true'" in job["if"]
    assert "github.event.pull_request.head.repo.full_name == github.repository" in job["if"]
    # actions/pull-requests: read: the merge queue finds the pull request's reviewed plans
    assert job["permissions"] == {
        "contents": "read",
        "id-token": "write",
        "actions": "read",
        "pull-requests": "read",
    }
    # hosted: the read-only plan role by OIDC
    (aws,) = steps_using(job, "aws-actions/configure-aws-credentials")
    assert aws["if"] == "matrix.executor == 'hosted'"
    assert aws["with"]["role-to-assume"] == "${{ vars.AWS_PLAN_ROLE_ARN }}"
    # lan: the vault, values only in the plan step's env
    (vault,) = steps_using(job, "hashicorp/vault-action")
    assert vault["with"]["role"] == "${{ vars.VAULT_PLAN_ROLE }}"
    lan_plan = next(
        s
        for s in steps(job)
        if s.get("if") == "matrix.executor == 'lan'" and "invoke plan" in s.get("run", "")
    )
    assert any("steps.vault.outputs." in str(v) for v in lan_plan["env"].values())
    hosted_plan = next(
        s
        for s in steps(job)
        if s.get("if") == "matrix.executor == 'hosted'" and "invoke plan" in s.get("run", "")
    )
    assert "steps.vault" not in str(hosted_plan.get("env", {}))
    for plan_step in (lan_plan, hosted_plan):
        assert "--executor" in plan_step["run"] and "--out" in plan_step["run"]
        assert "--comment" not in plan_step["run"], (
            "the comment job posts; the legs hold no write token"
        )
    # the routing is checked on the runner before any credential
    names = [s.get("name", "") for s in steps(job)]
    preflight = names.index(next(n for n in names if n.startswith("Preflight")))
    assert preflight < steps(job).index(aws) and preflight < steps(job).index(vault)
    assert "runner.environment" in str(steps(job)[preflight]["env"])
    # each leg uploads its plan folder
    (upload,) = steps_using(job, "actions/upload-artifact")
    assert upload["with"]["name"] == "plan-${{ matrix.leg || matrix.executor }}"
    assert upload["if"] == "always()"


def test_plan_comment_job_holds_the_only_write_token() -> None:
    doc = load("plan.yml")
    comment = jobs(doc)["comment"]
    assert set(comment["needs"]) == {"matrix", "plan"}
    assert comment["permissions"] == {"pull-requests": "write", "statuses": "write"}
    assert steps_using(comment, "actions/download-artifact")
    assert 'invoke plan-comment --plans "${RUNNER_TEMP}/plans" --matrix "${MATRIX}"' in runs(
        comment
    )
    assert steps_using(comment, "actions/checkout")[0]["with"]["persist-credentials"] is False
    for name, job in jobs(doc).items():
        if name != "comment":
            assert all(
                v in ("read", "none") or k == "id-token" for k, v in job["permissions"].items()
            ), name
    assert "final `comment` job" in raw("plan.yml").split("\nname:", 1)[0], (
        "explain the choice at the top"
    )


# --------------------------------------------------------------------------- apply.yml


def test_apply_runs_on_push_to_main_only() -> None:
    on = triggers(load("apply.yml"))
    assert set(on) == {"push"}
    assert on["push"]["branches"] == ["main"]


def test_apply_plans_with_the_apply_identity_in_the_auto_environment() -> None:
    doc = load("apply.yml")
    job = jobs(doc)["apply"]
    assert job["environment"] == "infra-auto"
    assert job["runs-on"] == "${{ matrix.runs_on }}"
    assert job["strategy"]["matrix"] == "${{ fromJSON(needs.matrix.outputs.matrix) }}"
    assert job["strategy"]["fail-fast"] is False
    assert job["concurrency"] == {
        "group": "apply-${{ matrix.executor }}",
        "cancel-in-progress": False,
    }
    assert job["permissions"] == {
        "contents": "read",
        "id-token": "write",
        "actions": "read",
        "pull-requests": "read",
    }
    (aws,) = steps_using(job, "aws-actions/configure-aws-credentials")
    assert aws["with"]["role-to-assume"] == "${{ vars.AWS_APPLY_ROLE_ARN }}"
    (vault,) = steps_using(job, "hashicorp/vault-action")
    assert vault["with"]["role"] == "${{ vars.VAULT_APPLY_ROLE }}"
    script = runs(job)
    assert "invoke plan --base" in script
    assert 'invoke apply --plans "${RUNNER_TEMP}/plan" ${REVIEWED:+--reviewed "${REVIEWED}"}\n' in (
        script + "\n"
    )
    assert "--approve-manual" not in script
    # the plan folder is uploaded before anything is applied
    names = [s.get("name", "") for s in steps(job)]
    upload = names.index("Upload the plan folder")
    first_apply = min(i for i, s in enumerate(steps(job)) if "invoke apply" in s.get("run", ""))
    assert upload < first_apply
    assert steps(job)[upload]["with"]["name"] == "plan-${{ matrix.leg || matrix.executor }}"


def test_apply_base_is_the_last_applied_commit() -> None:
    job = jobs(load("apply.yml"))["matrix"]
    assert job["permissions"] == {"contents": "read", "actions": "read"}
    assert steps_using(job, "actions/checkout")[0]["with"]["fetch-depth"] == 0
    script = runs(job)
    assert 'invoke apply-base --before "${BEFORE}"' in script
    assert 'invoke matrix --base "${BASE}"' in script
    base = next(s for s in steps(job) if s.get("id") == "base")
    assert base["env"]["BEFORE"] == "${{ github.event.before }}"


def test_apply_report_comments_on_the_merged_pr_and_decides_the_manual_matrix() -> None:
    job = jobs(load("apply.yml"))["report"]
    assert job["permissions"] == {
        "contents": "read",
        "pull-requests": "write",
        "statuses": "write",
    }
    assert "!cancelled()" in job["if"]
    assert steps_using(job, "actions/download-artifact")
    script = runs(job)
    assert 'invoke apply-report --plans "${RUNNER_TEMP}/artifacts"' in script
    assert '--apply-result "${APPLY_RESULT}"' in script
    report = next(s for s in steps(job) if s.get("id") == "report")
    assert report["env"]["APPLY_RESULT"] == "${{ needs.apply.result }}"
    assert set(job["outputs"]) == {"manual_matrix", "manual_any"}


def test_apply_manual_applies_the_same_artifacts_behind_the_protected_environment() -> None:
    doc = load("apply.yml")
    job = jobs(doc)["apply-manual"]
    assert job["environment"] == "infra-manual"
    assert {"apply", "report"} <= set(job["needs"])
    assert "needs.report.outputs.manual_any == 'true'" in job["if"]
    assert "needs.apply.result == 'success'" in job["if"]
    assert job["strategy"]["matrix"] == "${{ fromJSON(needs.report.outputs.manual_matrix) }}"
    assert job["runs-on"] == "${{ matrix.runs_on }}"
    assert job["concurrency"] == {
        "group": "apply-${{ matrix.executor }}",
        "cancel-in-progress": False,
    }
    assert job["permissions"] == {"contents": "read", "id-token": "write"}
    downloads = steps_using(job, "actions/download-artifact")
    assert "plan-${{ matrix.leg || matrix.executor }}" in [d["with"]["name"] for d in downloads]
    script = runs(job)
    assert 'invoke apply --plans "${RUNNER_TEMP}/plan" --approve-manual' in script
    assert "invoke plan" not in script, (
        "the manual job applies the reviewed plans; it never re-plans"
    )
    # the same commit as the plan
    assert steps_using(job, "actions/checkout")[0]["with"]["ref"] == "${{ github.sha }}"
    # downloads come before the apply
    first_download = steps(job).index(downloads[0])
    first_apply = min(i for i, s in enumerate(steps(job)) if "invoke apply" in s.get("run", ""))
    assert first_download < first_apply


def test_after_the_approval_job_a_job_without_credentials_moves_the_merge_commits_status() -> None:
    job = jobs(load("apply.yml"))["manual-status"]
    assert set(job["needs"]) == {"report", "apply-manual"}
    # also after a rejected, failed or cancelled approval: the status never stays pending
    assert (
        job["if"].startswith("always()")
        and "needs.report.outputs.manual_any == 'true'" in (job["if"])
    )
    assert job["permissions"] == {"contents": "read", "statuses": "write"}
    assert "environment" not in job and job["runs-on"] == "ubuntu-latest"
    (download,) = steps_using(job, "actions/download-artifact")
    assert download["with"]["pattern"] == "apply-manual-*"
    step = next(s for s in steps(job) if "invoke manual-status" in s.get("run", ""))
    assert step["env"]["MANUAL_RESULT"] == "${{ needs.apply-manual.result }}"
    assert step["env"]["MATRIX"] == "${{ needs.report.outputs.manual_matrix }}"


def test_each_leg_plans_only_its_own_units_and_uploads_an_artifact_named_by_its_leg() -> None:
    """A split executor's legs: each plan step passes its own matrix entry and leg id to
    `invoke plan --from-matrix --leg`; every artifact name carries the leg, so two
    legs of one executor never write the same artifact."""
    for workflow, job_name in (("plan.yml", "plan"), ("apply.yml", "apply")):
        job = jobs(load(workflow))[job_name]
        assert "matrix.leg || matrix.executor" in job["name"]
        plan_steps = [s for s in steps(job) if "invoke plan" in s.get("run", "")]
        assert len(plan_steps) == 2
        for step in plan_steps:
            assert '--from-matrix "${LEG_ENTRY}" --leg "${LEG}"' in step["run"]
            assert step["env"]["LEG_ENTRY"] == "${{ toJSON(matrix) }}"
            assert step["env"]["LEG"] == "${{ matrix.leg || matrix.executor }}"
            assert "--executor" in step["run"]  # a hosted step never plans a lan leg
        assert job["strategy"]["fail-fast"] is False  # a failed leg stops no other
    for name in ("plan.yml", "apply.yml"):
        for job in jobs(load(name)).values():
            for step in steps_using(job, "actions/upload-artifact"):
                assert "matrix.leg || matrix.executor" in step["with"]["name"], (name, step["name"])
    manual = jobs(load("apply.yml"))["apply-manual"]
    for step in steps_using(manual, "actions/download-artifact"):
        assert step["with"]["name"].endswith("${{ matrix.leg || matrix.executor }}")


# --------------------------------------------------------------------------- bump, drift, check


def test_bump_weekly_and_on_demand_with_write_permissions() -> None:
    doc = load("bump.yml")
    on = triggers(doc)
    assert set(on) == {"schedule", "workflow_dispatch"}
    assert len(on["schedule"]) == 1 and len(on["schedule"][0]["cron"].split()) == 5
    assert on["schedule"][0]["cron"].split()[4] != "*", "weekly"
    (job,) = jobs(doc).values()
    assert job["permissions"] == {"contents": "write", "pull-requests": "write"}
    assert "invoke bump-all" in runs(job)


def test_drift_daily_per_executor_with_issues_write() -> None:
    doc = load("drift.yml")
    on = triggers(doc)
    assert set(on) == {"schedule", "workflow_dispatch"}
    assert on["schedule"][0]["cron"].split()[2:] == ["*", "*", "*"], "daily"
    (job,) = jobs(doc).values()
    assert job["permissions"] == {"contents": "read", "id-token": "write", "issues": "write"}
    assert job["runs-on"] == "${{ matrix.runs_on }}"
    legs = {leg["executor"]: leg["runs_on"] for leg in job["strategy"]["matrix"]["include"]}
    assert legs == {"hosted": HOSTED, "lan": LAN}
    assert "invoke drift --executor hosted" in runs(job)
    assert "invoke drift --executor lan" in runs(job)
    assert "apply" not in runs(job)


def test_check_runs_pre_commit_invoke_check_and_the_tests() -> None:
    doc = load("check.yml")
    on = triggers(doc)
    assert set(on) == {"pull_request", "push"}
    assert on["push"]["branches"] == ["main"]
    script = "\n".join(runs(job) for job in jobs(doc).values())
    assert "pre-commit run --all-files" in script
    assert "invoke check" in script
    assert "invoke crosscheck" in script
    assert "./dev test" in script
    for job in jobs(doc).values():
        assert job["permissions"] == {"contents": "read"}
        assert not steps_using(job, "aws-actions/configure-aws-credentials")


# --------------------------------------------------------------------------- app-infra.yml


def test_app_infra_is_a_reusable_workflow_with_app_and_directory() -> None:
    doc = load("app-infra.yml")
    on = triggers(doc)
    assert set(on) == {"workflow_call"}
    inputs = on["workflow_call"]["inputs"]
    assert inputs["app"]["required"] is True and inputs["app"]["type"] == "string"
    assert inputs["directory"]["default"] == "terraform" and inputs["directory"]["type"] == "string"
    assert "tooling-ref" in inputs


def test_app_infra_validates_the_app_name_through_env() -> None:
    job = jobs(load("app-infra.yml"))["validate"]
    step = next(s for s in steps(job) if "APP" in (s.get("env") or {}))
    assert step["env"]["APP"] == "${{ inputs.app }}"
    assert "^[a-z0-9-]+$" in step["run"]
    assert "inputs." not in step["run"]


def test_app_infra_plans_on_pull_requests_and_applies_on_main() -> None:
    doc = load("app-infra.yml")
    plan, apply = jobs(doc)["plan"], jobs(doc)["apply"]
    assert "github.event_name == 'pull_request'" in plan["if"]
    assert (
        "github.event_name == 'push'" in apply["if"]
        and "github.ref == 'refs/heads/main'" in apply["if"]
    )
    for job in (plan, apply):
        assert job["needs"] == "validate"
        tooling = [
            s for s in steps_using(job, "actions/checkout") if "repository" in s.get("with", {})
        ]
        assert len(tooling) == 1
        assert tooling[0]["with"]["ref"] == "${{ inputs.tooling-ref }}"
        assert tooling[0]["with"]["repository"] == "${{ inputs.tooling-repository }}"
    assert "invoke app-plan --app" in runs(plan) and "invoke app-apply" not in runs(plan)
    assert "invoke app-plan --app" in runs(apply) and 'invoke app-apply --app "${APP}"' in runs(
        apply
    )
    assert "--plans" in runs(apply)
    assert apply["environment"] == "${{ inputs.environment }}"
    # the app-tier bucket from an input or the caller's variables; never the foundation's variable
    assert (
        doc["env"]["IAC_APP_STATE_BUCKET"]
        == "${{ inputs.state-bucket || vars.IAC_APP_STATE_BUCKET }}"
    )
    assert "IAC_STATE_BUCKET" not in doc["env"]
    assert "IAC_STATE_BUCKET" not in raw("app-infra.yml").replace("IAC_APP_STATE_BUCKET", "")


def test_app_infra_manual_plans_wait_for_the_protected_environment_and_apply_the_same_artifact() -> (
    None
):
    doc = load("app-infra.yml")
    inputs = triggers(doc)["workflow_call"]["inputs"]
    assert inputs["manual-environment"]["default"] == "app-infra-manual"
    apply, manual = jobs(doc)["apply"], jobs(doc)["apply-manual"]
    # the apply job decides from the plan's gate, after the auto apply
    assert apply["outputs"]["manual"] == "${{ steps.gate.outputs.manual }}"
    names = [s.get("id") or s.get("name") for s in steps(apply)]
    assert names.index("gate") > max(
        i for i, s in enumerate(steps(apply)) if "invoke app-apply" in s.get("run", "")
    )
    assert (
        'invoke manual-gate --plans "${RUNNER_TEMP}/app-plan"'
        in next(s for s in steps(apply) if s.get("id") == "gate")["run"]
    )
    assert manual["needs"] == "apply"
    assert manual["if"] == "needs.apply.outputs.manual == 'true'"
    assert manual["environment"] == "${{ inputs.manual-environment }}"
    assert manual["concurrency"] == apply["concurrency"]
    assert manual["permissions"] == {"contents": "read", "id-token": "write"}
    (download,) = steps_using(manual, "actions/download-artifact")
    assert download["with"]["name"] == "app-infra-plan"
    app_checkout = next(
        s for s in steps_using(manual, "actions/checkout") if "repository" not in s["with"]
    )
    assert app_checkout["with"]["ref"] == "${{ github.sha }}"
    script = runs(manual)
    assert "invoke app-apply" in script and script.rstrip().endswith("--approve-manual")
    assert "invoke app-plan" not in script, (
        "the manual job applies the reviewed plan; it never re-plans"
    )


def test_app_infra_runs_every_invoke_step_in_the_tooling_checkout() -> None:
    """The caller's workspace holds the app (app/) and this repository (infra/):
    invoke finds tasks.py only in infra/ (the rehearsal under act found a step without it)."""
    for job_name, job in jobs(load("app-infra.yml")).items():
        for step in steps(job) if "steps" in job else []:
            if re.search(r"(?:^|[\s;&|])invoke\s", step.get("run", "")):
                assert step.get("working-directory") == "infra", (
                    f"app-infra.yml {job_name}: step {step.get('name')!r} runs invoke outside infra/"
                )


def test_foundation_legs_declare_their_executor_for_the_preflight() -> None:
    for workflow, job_names in (
        ("plan.yml", ("plan",)),
        ("apply.yml", ("apply", "apply-manual")),
        ("drift.yml", ("drift",)),
    ):
        for name in job_names:
            job = jobs(load(workflow))[name]
            assert job["env"]["IAC_EXECUTOR"] == "${{ matrix.executor }}", f"{workflow}: job {name}"


# --------------------------------------------------------------------------- actionlint


def _actionlint() -> str:
    """actionlint from this Python environment's bin directory (where
    ``invoke setup`` links it) or PATH."""
    bin_dir = sysconfig.get_path("scripts")
    path = os.pathsep.join([bin_dir, os.environ.get("PATH", "")])
    exe = shutil.which("actionlint", path=path)
    if exe is None:
        pytest.fail(
            f"actionlint not found in {bin_dir} or on PATH: run `invoke setup` (it installs the pinned actionlint)"
        )
    return exe


def test_actionlint_reports_nothing() -> None:
    exe = _actionlint()
    bin_dir = sysconfig.get_path("scripts")
    env = dict(
        os.environ, PATH=os.pathsep.join([bin_dir, os.environ.get("PATH", "")]), NO_COLOR="1"
    )
    files = [str(p.relative_to(REPO_ROOT)) for p in all_workflow_files()]
    proc = subprocess.run(
        [exe, "-no-color", *files],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, f"actionlint found problems:\n{proc.stdout}{proc.stderr}"


def test_actionlint_is_the_pinned_version() -> None:
    exe = _actionlint()
    pins = dict(
        line.split()[:2]
        for line in (REPO_ROOT / ".tool-versions").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    )
    out = subprocess.run(
        [exe, "--version"], capture_output=True, text=True, timeout=30, check=True
    ).stdout
    assert out.splitlines()[0].strip().lstrip("v") == pins["actionlint"]


# --------------------------------------------------------------------------- thin workflows


@pytest.mark.parametrize("name", WORKFLOWS)
def test_no_workflow_holds_inline_python_or_gh_api_calls(name: str) -> None:
    """The logic lives in invoke tasks, where the tests reach it; a run: step is glue."""
    for job_name, job in jobs(load(name)).items():
        for step in steps(job) if "steps" in job else []:
            script = step.get("run", "")
            assert not re.search(r"\bpython3?\s+(-\s|-c\b|-\s*<<|<<)", script), (
                f"{name} {job_name}: inline Python"
            )
            assert "<<'PY'" not in script and '<<"PY"' not in script, (
                f"{name} {job_name}: inline Python"
            )
            assert not re.search(r"(^|[\s;|&(])gh\s", script), (
                f"{name} {job_name}: a gh call (use tooling.io.forge)"
            )


@pytest.mark.parametrize("name", WORKFLOWS)
def test_every_invoke_call_names_a_task_that_exists(name: str) -> None:
    import tasks

    known = set(tasks.ns.task_names)
    for job in jobs(load(name)).values():
        for step in steps(job) if "steps" in job else []:
            for task_name in re.findall(
                r"(?:^|[\s;&|])invoke\s+([a-z][a-z0-9-]*)", step.get("run", "")
            ):
                assert task_name in known, f"{name}: invoke {task_name} is not a task"


@pytest.mark.parametrize("name", ["plan.yml", "apply.yml"])
def test_a_lan_leg_without_online_runner_fails_in_a_hosted_job_while_the_others_go_on(
    name: str,
) -> None:
    wf = jobs(load(name))
    step = next(s for s in steps(wf["matrix"]) if "invoke matrix" in s.get("run", ""))
    assert "--runners" in step["run"]
    assert "secrets.IAC_RUNNERS_TOKEN" in step["env"]["IAC_RUNNERS_TOKEN"]
    if name == "plan.yml":  # a fork's pull request never gets it
        assert step["env"]["IAC_RUNNERS_TOKEN"].startswith(
            "${{ (github.event_name == 'merge_group' || "
            "github.event.pull_request.head.repo.full_name == github.repository) && "
        )
    assert wf["matrix"]["outputs"]["unavailable"] == "${{ steps.matrix.outputs.unavailable }}"
    job = wf["no-runner"]
    assert job["runs-on"] == "ubuntu-latest" and job["permissions"] == {}
    assert job["if"] == "needs.matrix.outputs.any_unavailable == 'true'"
    assert job["strategy"]["matrix"] == "${{ fromJSON(needs.matrix.outputs.unavailable) }}"
    (fail,) = steps(job)
    assert fail["env"]["MESSAGE"] == "${{ matrix.message }}" and "exit 1" in fail["run"]
    # the legs that run never wait for the missing ones
    legs = "plan" if name == "plan.yml" else "apply"
    assert "no-runner" not in str(wf[legs]["needs"])


def test_runner_health_is_checked_on_a_schedule_from_a_hosted_runner() -> None:
    wf = load("runners.yml")
    assert "schedule" in wf[True] and "workflow_dispatch" in wf[True]
    (job,) = jobs(wf).values()
    assert job["runs-on"] == "ubuntu-latest"
    assert job["permissions"] == {"contents": "read", "issues": "write"}
    step = next(s for s in steps(job) if "invoke runners" in s.get("run", ""))
    assert "invoke runners --issue" in step["run"]
    assert step["env"] == {
        "GITHUB_TOKEN": "${{ github.token }}",
        "IAC_RUNNERS_TOKEN": "${{ secrets.IAC_RUNNERS_TOKEN }}",
    }
