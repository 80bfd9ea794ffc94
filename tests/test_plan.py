"""`invoke plan` end to end on the sandbox, with the real binaries."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from infra_fixtures import apply_unit, commit_all, edit, git, invoke, read_summary, units_by_path

pytestmark = pytest.mark.e2e


def _plan(
    repo: Path, out: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[Any, dict[str, Any], str]:
    ran = invoke(repo, "plan", "--out", str(out), *args, env=env)
    summary = read_summary(out) if (out / "summary.json").exists() else {}
    comment = (out / "comment.md").read_text() if (out / "comment.md").exists() else ""
    return ran, summary, comment


def test_a_one_line_module_bump_plans_exactly_that_unit_and_shows_its_changes(
    example_repo: Path, tmp_path: Path
) -> None:
    apply_unit(example_repo, "live/cluster/network", tmp_path / "a1")
    apply_unit(example_repo, "live/cluster/vms", tmp_path / "a2")
    git(example_repo, "checkout", "--quiet", "-b", "bump-vm")
    edit(example_repo, "live/cluster/vms/terragrunt.hcl", "?ref=v1.1.0", "?ref=v1.2.0")
    commit_all(example_repo, "bump the vm module to v1.2.0")
    out = tmp_path / "plans"
    ran, summary, comment = _plan(example_repo, out, "--base", "main")
    assert ran.returncode == 0, ran.output
    assert [u["path"] for u in summary["units"]] == ["live/cluster/vms"]
    vms = summary["units"][0]
    assert vms["change"] == "modified" and vms["status"] == "changes"
    assert vms["counts"]["update"] == 3 and vms["counts"]["create"] == 0
    assert vms["gate"]["decision"] == "manual"
    assert comment.startswith("<!-- iac-tooling:plan-report -->\n")
    assert comment.splitlines()[1].startswith(
        "✅ **Plan: 0 to add, 3 to change, 0 to replace, 0 to destroy** · "
        "1 unit(s) planned, 1 with changes, 0 failed"
    )
    row = next(x for x in comment.splitlines() if x.startswith("| `live/cluster/vms`"))
    assert "| terraform-proxmox v1.1.0 → v1.2.0 |" in row  # the bump, from the merge base
    assert vms["source_before"].endswith("?ref=v1.1.0")
    assert '`terraform_data.vm["node-1"]`' in comment and "**update** (3)" in comment
    assert "?ref=v1.2.0" in comment  # the module pin is shown
    # dependents are re-planned after the upstream applies, not on the PR
    assert "live/cluster/os" in ran.stderr and "via live/cluster/vms" in ran.stderr
    assert (out / vms["plan_file"]).is_file()
    assert (out / vms["plan_file"]).stat().st_size > 0


def test_a_forced_replacement_is_listed_in_the_warnings_block(
    example_repo: Path, tmp_path: Path
) -> None:
    apply_unit(example_repo, "live/cloud/dns", tmp_path / "a1")
    git(example_repo, "checkout", "--quiet", "-b", "major")
    edit(example_repo, "live/cloud/dns/terragrunt.hcl", "?ref=v1.1.0", "?ref=v2.0.0")
    commit_all(example_repo, "dns v2")
    ran, summary, comment = _plan(example_repo, tmp_path / "plans", "--base", "main")
    assert ran.returncode == 0, ran.output
    dns = units_by_path(summary)["live/cloud/dns"]
    assert dns["counts"]["replace"] == 3
    assert dns["gate"]["decision"] == "manual"
    warning_block = comment.split("> **Destroys and replacements:**", 1)[1].split("\n\n", 1)[0]
    line = next(
        w for w in warning_block.splitlines() if "♻️ **replace** in `live/cloud/dns` (3)" in w
    )
    for key in ("api", "cluster", "www"):
        assert f'`terraform_data.record["{key}"]`' in line


def test_a_deleted_unit_with_state_gets_a_destroy_plan_from_the_base_revision_first(
    example_repo: Path, tmp_path: Path
) -> None:
    shutil.copytree(example_repo / "live/cloud/iam", example_repo / "live/cloud/legacy")
    commit_all(example_repo, "a legacy unit")
    git(example_repo, "push", "--quiet", "origin", "main")
    apply_unit(example_repo, "live/cloud/legacy", tmp_path / "a1")
    git(example_repo, "checkout", "--quiet", "-b", "retire")
    git(example_repo, "rm", "-r", "--quiet", "live/cloud/legacy")
    edit(example_repo, "live/cloud/dns/terragrunt.hcl", "ttl = 60", "ttl = 120")
    commit_all(example_repo, "retire the legacy unit")
    ran, summary, comment = _plan(example_repo, tmp_path / "plans", "--base", "main")
    assert ran.returncode == 0, ran.output
    paths = [u["path"] for u in summary["units"]]
    assert paths[0] == "live/cloud/legacy" and "live/cloud/dns" in paths
    legacy = summary["units"][0]
    assert legacy["change"] == "deleted" and legacy["destroy"] is True
    assert legacy["counts"]["delete"] == 5 and legacy["counts"]["create"] == 0
    assert legacy["gate"]["decision"] == "manual"
    warnings = [line for line in comment.splitlines() if line.startswith("> - ")]
    assert warnings[0].startswith("> - 🗑️ **destroy** (unit deleted) in `live/cloud/legacy` (5): ")
    assert not (example_repo / ".iac" / "worktrees").exists() or not any(
        (example_repo / ".iac" / "worktrees").iterdir()
    )


def test_a_missing_tag_fails_only_that_unit_and_names_the_tag(
    example_repo: Path, tmp_path: Path
) -> None:
    git(example_repo, "checkout", "--quiet", "-b", "typo")
    edit(example_repo, "live/cloud/dns/terragrunt.hcl", "?ref=v1.1.0", "?ref=v9.9.9")
    edit(example_repo, "live/cluster/network/terragrunt.hcl", "?ref=v1.1.0", "?ref=v1.2.0")
    commit_all(example_repo, "two bumps, one wrong")
    ran, summary, comment = _plan(example_repo, tmp_path / "plans", "--base", "main")
    assert ran.returncode == 1
    units = units_by_path(summary)
    assert units["live/cloud/dns"]["status"] == "error"
    assert "v9.9.9" in units["live/cloud/dns"]["error"]
    assert units["live/cluster/network"]["status"] == "changes"
    assert "1 failed" in comment.splitlines()[1] and "v9.9.9" in comment
    assert "Traceback" not in ran.output


CANARY = "canary-7f3a9c1e-do-not-print"


def test_no_sensitive_value_reaches_the_out_dir_or_the_output(
    example_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "plans"
    ran, summary, _comment = _plan(
        example_repo, out, "--unit", "live/cloud/iam", env={"TF_VAR_bootstrap_token": CANARY}
    )
    assert ran.returncode == 0, ran.output
    assert units_by_path(summary)["live/cloud/iam"]["status"] == "changes"
    # the canary did reach the plan: the binary plan file holds it (that is what apply applies)
    plan_files = list(out.rglob("*.tfplan"))
    assert plan_files and any(CANARY.encode() in _unzipped(p) for p in plan_files)
    for path in out.rglob("*"):
        if path.is_file() and path.suffix != ".tfplan":
            assert CANARY not in path.read_text(errors="replace"), path
    assert CANARY not in ran.output
    assert "(sensitive value)" in (out / "units/live/cloud/iam/plan.txt").read_text()


def _unzipped(path: Path) -> bytes:
    import zipfile

    with zipfile.ZipFile(path) as zf:
        return b"".join(zf.read(name) for name in zf.namelist())


def test_a_plan_over_the_comment_budget_keeps_counts_and_warnings_in_valid_markdown(
    example_repo: Path, tmp_path: Path
) -> None:
    many = 'records = { for i in range(400) : "r${i}" => { type = "A", value = "203.0.113.${i % 250}", ttl = 300 } }'
    unit = example_repo / "live/cloud/dns/terragrunt.hcl"
    text = unit.read_text()
    start = text.index("  records = {")
    end = text.index("  }\n", start) + 4
    unit.write_text(text[:start] + "  " + many + "\n" + text[end:])
    commit_all(example_repo, "400 records")
    git(example_repo, "push", "--quiet", "origin", "main")
    apply_unit(example_repo, "live/cloud/dns", tmp_path / "a1")
    git(example_repo, "checkout", "--quiet", "-b", "major")
    edit(example_repo, "live/cloud/dns/terragrunt.hcl", "?ref=v1.1.0", "?ref=v2.0.0")
    edit(example_repo, "live/cloud/iam/terragrunt.hcl", "?ref=v1.0.0", "?ref=v1.1.0")
    commit_all(example_repo, "dns v2, iam v1.1")
    out = tmp_path / "plans"
    ran, summary, comment = _plan(example_repo, out, "--base", "main")
    assert ran.returncode == 0, ran.output
    full_text = (out / "units/live/cloud/dns/plan.txt").read_text()
    assert len(full_text) > 65_536  # the plan itself is over the budget
    assert len(comment) < 65_536
    assert comment.count("```") % 2 == 0  # every fence closed
    assert comment.count("<details>") == comment.count("</details>")
    dns = units_by_path(summary)["live/cloud/dns"]
    assert dns["counts"]["replace"] == 400
    # counts kept in the table, every replacement kept in the warnings
    assert re.search(r"\| `live/cloud/dns` \| cloud / hosted \| 0 \| \d+ \| 400 \| 0 \|", comment)
    warning_line = next(
        w for w in comment.splitlines() if "♻️ **replace** in `live/cloud/dns` (400)" in w
    )
    assert len(re.findall(r"`terraform_data\.record\[\"r\d+\"\]`", warning_line)) == 400
    assert "Left out to stay under GitHub's 65,536-character limit" in comment
    assert "plan text of `live/cloud/dns`" in comment


def test_sticky_comment_is_created_then_updated_in_place(
    example_repo: Path, tmp_path: Path, github_api: Any
) -> None:
    number = github_api.state.add_pull(head="feature", base="main")["number"]
    env = github_api.env(pr=number)
    first, _, _body1 = _plan(
        example_repo, tmp_path / "p1", "--unit", "live/cloud/dns", "--comment", env=env
    )
    assert first.returncode == 0, first.output
    second, _, _body2 = _plan(
        example_repo, tmp_path / "p2", "--unit", "live/cloud/iam", "--comment", env=env
    )
    assert second.returncode == 0, second.output
    writes = [(r.method, r.path) for r in github_api.requests if r.method in ("POST", "PATCH")]
    assert writes[0][0] == "POST" and writes[0][1].endswith(f"/issues/{number}/comments")
    assert writes[1][0] == "PATCH" and "/issues/comments/" in writes[1][1]
    assert len(writes) == 2
    comments = github_api.state.comments_on(number)
    assert len(comments) == 1 and "live/cloud/iam" in comments[0]["body"]
    assert env["GITHUB_TOKEN"] not in first.output + second.output


def test_executor_filter_plans_only_that_executors_units(
    example_repo: Path, tmp_path: Path
) -> None:
    ran, summary, _ = _plan(example_repo, tmp_path / "plans", "--all", "--executor", "lan")
    assert ran.returncode == 0, ran.output
    assert {u["executor"] for u in summary["units"]} == {"lan"}
    assert len(summary["units"]) == 4


def _pr_plan_with_iam_plan_on_pr(
    repo: Path, out: Path, value: str
) -> tuple[Any, dict[str, Any], str]:
    """Commit ``plan_on_pr = VALUE`` in live/cloud/iam, then plan iam and dns on a pull request."""
    edit(
        repo,
        "live/cloud/iam/terragrunt.hcl",
        "inputs = {",
        f"locals {{\n  plan_on_pr = {value}\n}}\n\ninputs = {{",
    )
    commit_all(repo, f"iam: plan_on_pr = {value}")
    pr = {"GITHUB_EVENT_NAME": "pull_request"}
    return _plan(repo, out, "--unit", "live/cloud/iam", "--unit", "live/cloud/dns", env=pr)


def test_units_that_need_admin_credentials_are_withheld_on_pull_requests(
    example_repo: Path, tmp_path: Path
) -> None:
    ran, summary, comment = _pr_plan_with_iam_plan_on_pr(example_repo, tmp_path / "p1", "false")
    assert ran.returncode == 0, ran.output
    units = units_by_path(summary)
    assert (
        units["live/cloud/iam"]["status"] == "withheld"
        and units["live/cloud/iam"]["plan_file"] is None
    )
    assert units["live/cloud/dns"]["status"] == "changes"
    assert "withheld" in comment
    ran, summary, _ = _plan(example_repo, tmp_path / "p2", "--unit", "live/cloud/iam")
    assert units_by_path(summary)["live/cloud/iam"]["status"] == "changes"


def test_a_moved_unit_is_blocked_until_its_state_is_migrated(
    example_repo: Path, tmp_path: Path
) -> None:
    # blocked only while its state waits at the old key (a never-applied unit plans like a new one)
    apply_unit(example_repo, "live/cloud/iam", tmp_path / "a1")
    apply_unit(example_repo, "live/cloud/registry", tmp_path / "a2")
    git(example_repo, "checkout", "--quiet", "-b", "rename")
    git(example_repo, "mv", "live/cloud/registry", "live/cloud/containers")
    commit_all(example_repo, "rename registry")
    ran, summary, _comment = _plan(example_repo, tmp_path / "plans", "--base", "main")
    assert ran.returncode == 1
    unit = units_by_path(summary)["live/cloud/containers"]
    assert unit["status"] == "blocked" and unit["change"] == "moved"
    assert "invoke move-unit live/cloud/registry live/cloud/containers" in unit["error"]
    assert not list((tmp_path / "plans").rglob("*.tfplan"))


def test_an_out_folder_holding_other_files_is_refused_and_kept(
    example_repo: Path, tmp_path: Path
) -> None:
    precious = tmp_path / "notes"
    precious.mkdir()
    (precious / "todo.txt").write_text("keep me\n")
    ran = invoke(example_repo, "plan", "--all", "--out", str(precious))
    assert ran.returncode == 2
    assert "todo.txt" in ran.stderr and "would be deleted" in ran.stderr
    assert (precious / "todo.txt").read_text() == "keep me\n"
    ran = invoke(example_repo, "plan", "--all", "--out", str(example_repo))
    assert ran.returncode == 2 and (example_repo / "live").is_dir()
    # a previous plan report is replaced without asking
    out = tmp_path / "plans"
    assert (
        invoke(example_repo, "plan", "--unit", "live/cloud/dns", "--out", str(out)).returncode == 0
    )
    assert (
        invoke(example_repo, "plan", "--unit", "live/cloud/iam", "--out", str(out)).returncode == 0
    )
    assert [u["path"] for u in read_summary(out)["units"]] == ["live/cloud/iam"]


def test_a_misspelt_gate_and_a_quoted_plan_on_pr_fail_closed(
    example_repo: Path, tmp_path: Path
) -> None:
    """`gate = "manaul"` waits for a human; `plan_on_pr = "false"` withholds the PR plan."""
    edit(example_repo, "live/cloud/tier.hcl", 'gate = "auto"', 'gate = "manaul"')
    ran, summary, comment = _pr_plan_with_iam_plan_on_pr(
        example_repo, tmp_path / "plans", '"false"'
    )
    assert ran.returncode == 0, ran.output
    units = units_by_path(summary)
    assert units["live/cloud/iam"]["status"] == "withheld"
    dns = units["live/cloud/dns"]
    assert dns["status"] == "changes"
    assert dns["gate"]["decision"] == "manual", dns["gate"]
    assert any("'manaul', neither auto nor manual" in r for r in dns["gate"]["reasons"])
    assert "neither auto nor manual" in comment  # the reviewer sees why it waits
    check = invoke(example_repo, "check")
    assert check.returncode == 1
    assert 'live/cloud/tier.hcl:10: unit-facts: gate is "manaul"' in check.output
    assert (
        "live/cloud/iam/terragrunt.hcl:" in check.output and 'plan_on_pr is "false"' in check.output
    )
