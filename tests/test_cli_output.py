"""The CLI's manners: the result on stdout, progress and diagnostics on stderr, for every task.

Each task runs as a user runs it (``invoke`` in a separate process) on the
example repository, with the real tools.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from infra_fixtures import REPO, invoke

EMBEDDED = "using sandbox module catalog, local state under .iac/state/ (embedded default)"


@pytest.mark.parametrize(
    "args",
    [("units",), ("affected", "--base", "main"), ("graph",)],
    ids=["units", "affected", "graph"],
)
def test_tasks_that_read_the_units_say_first_what_they_run_against_on_stderr(
    example_repo: Path, args: tuple[str, ...]
) -> None:
    ran = invoke(example_repo, *args)
    assert ran.returncode == 0, ran.output
    assert ran.stderr.splitlines()[0] == EMBEDDED
    assert EMBEDDED not in ran.stdout


def test_affected_prints_its_listing_on_stdout_so_it_can_be_piped(example_repo: Path) -> None:
    (example_repo / "live" / "cloud" / "iam" / "notes.tfvars").write_text("x = 1\n")

    ran = invoke(example_repo, "affected", "--base", "main", "--uncommitted")

    assert ran.returncode == 0, ran.output
    assert ran.stdout.splitlines()[0].endswith("+ uncommitted changes")
    assert "  modified  live/cloud/iam" in ran.stdout
    assert "because live/cloud/iam/notes.tfvars changed" in ran.stdout
    assert "modified" not in ran.stderr


def test_no_uncommitted_changes_are_announced_when_there_are_none(example_repo: Path) -> None:
    ran = invoke(example_repo, "affected", "--base", "main", "--uncommitted")
    assert ran.returncode == 0, ran.output
    assert "uncommitted" not in ran.stdout
    assert "no unit is affected" in ran.stdout


def test_units_names_the_declared_gate_and_says_node_changes_override_it(
    example_repo: Path,
) -> None:
    ran = invoke(example_repo, "units")
    assert ran.returncode == 0, ran.output
    vms = next(line for line in ran.stdout.splitlines() if line.startswith("live/cluster/vms "))
    assert "declared gate=auto" in vms
    assert "gate=" not in vms.replace("declared gate=", "")
    assert "touches a node/VM" in ran.stdout and "whatever it declares" in ran.stdout


def test_apply_prints_its_banner_on_stderr_and_its_outcome_on_stdout(
    example_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "plans"
    planned = invoke(example_repo, "plan", "--unit", "live/cloud/iam", "--out", str(out))
    assert planned.returncode == 0, planned.output
    assert "live/cloud/iam" in planned.stdout  # plan's closing table is its result
    assert planned.stderr.splitlines()[0] == EMBEDDED

    applied = invoke(example_repo, "apply", "--plans", str(out))

    assert applied.returncode == 0, applied.output
    assert applied.stderr.splitlines()[0] == EMBEDDED
    assert EMBEDDED not in applied.stdout
    assert "✓ live/cloud/iam: applied" in applied.stdout
    assert "wrote " in applied.stderr and "wrote " not in applied.stdout


def test_repeatable_options_show_a_value_placeholder_in_help() -> None:
    plan = invoke(REPO, "--help", "plan")
    assert plan.returncode == 0, plan.output
    unit_line = next(line for line in plan.stdout.splitlines() if "--unit" in line)
    assert "=PATH" in unit_line
    check = invoke(REPO, "--help", "check")
    apps_line = next(line for line in check.stdout.splitlines() if "--apps" in line)
    assert "=DIR" in apps_line


@pytest.mark.parametrize(
    "args", [("--list",), ("--help", "plan"), ("check", "--json")], ids=["list", "help", "task"]
)
def test_a_reader_that_went_away_ends_the_output_without_a_traceback(
    args: tuple[str, ...],
) -> None:
    """`invoke --list | head -1`: the reader closed its end before the rest was written."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # gone before the first line: every write fails, deterministically
    try:
        ran = subprocess.run(
            [sys.executable, "-m", "invoke", *args],
            cwd=REPO,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    assert "Traceback" not in ran.stderr, ran.stderr
    assert "BrokenPipeError" not in ran.stderr, ran.stderr
    assert ran.returncode == 1, ran.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("--bogus",),
        ("--bogus", "plan"),
        ("--help", "--bogus"),
        ("nosuchtask",),
        ("--list", "--bogus"),
    ],
    ids=["core-flag", "core-flag-before-task", "help-of-no-task", "no-such-task", "list-no-such"],
)
def test_bad_usage_of_invoke_itself_exits_2_with_one_line(args: tuple[str, ...]) -> None:
    ran = subprocess.run(
        [sys.executable, "-m", "invoke", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ran.returncode == 2, ran.stderr
    assert "Traceback" not in ran.stderr, ran.stderr
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), ran.stderr
    assert "invoke --list" in lines[0], ran.stderr
