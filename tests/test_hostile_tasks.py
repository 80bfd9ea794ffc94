"""Every task, run as a user would (a separate ``invoke`` process), with hostile
arguments and broken files.

For each case: no Python traceback (nor the catch-all's "bug" line), exit code
2 for bad usage with one line naming the fix, 1 for a failure to act on, and
nothing touched outside the report folder (the working tree, the local state
and the git refs are hashed before and after).

The task list comes from ``tasks.ns``, the collection ``invoke --list`` shows:
a new task is covered by the generic cases (unknown flag, a flag without its
value, missing positional arguments) without editing this file.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from infra_fixtures import Invoked, commit_all, git, invoke, make_example_repo, repo_tasks

pytestmark = pytest.mark.e2e


NS = repo_tasks().ns
TASKS = sorted(NS.task_names)


def _arguments(name: str) -> list[Any]:
    return list(NS[name].get_arguments())


def _flag(arg: Any) -> str:
    return "--" + arg.name.replace("_", "-").strip("-")


# --------------------------------------------------------------------------- the cases

#: (task argv, expected exit code, text the output must hold)
Case = tuple[tuple[str, ...], int, str]


def _generic_usage_cases() -> list[Case]:
    cases: list[Case] = []
    for name in TASKS:
        positional = [a for a in _arguments(name) if a.positional]
        filler = tuple(f"x{i}" for i in range(len(positional)))
        cases.append(((name, *filler, "--no-such-flag"), 2, "--no-such-flag"))
        valued = [a for a in _arguments(name) if not a.positional and a.kind is not bool]
        if valued:
            # the last word: the flag's value is missing
            cases.append(((name, *filler, _flag(valued[0])), 2, _flag(valued[0])))
        if positional:
            cases.append(((name,), 2, "positional"))
    cases.append((("plna",), 2, "invoke --list"))
    return cases


UNIT = "live/cloud/dns"

HOSTILE_USAGE: list[Case] = [
    (("plan", "--jobs", "abc"), 2, "--jobs"),
    (("plan", "--jobs", "0"), 2, "--jobs 0"),
    (("plan", "--jobs", "-1"), 2, "--jobs"),
    (("plan", "--executor", "nope"), 2, "--executor nope"),
    (("drift", "--executor", "nope"), 2, "--executor nope"),
    (("plan", "--all", "--unit", UNIT), 2, "--all and --unit"),
    (("plan", "--unit", "live/cloud/dns x"), 2, "no unit at"),
    (("plan", "--unit", "$(touch pwned)"), 2, "no unit at"),
    (("plan", "--unit", "../infra/live/cloud/dns"), 2, "without '..'"),
    (("plan", "--unit", "live/../live/cloud/dns"), 2, "without '..'"),
    (("plan", "--unit", "/live/cloud/dns"), 2, "repository root"),
    (("graph", "--format", "nope"), 2, "mermaid or dot"),
    (("adopt", "live/cloud/dns x", "terraform_data.a", "id"), 2, "no unit at"),
    (("adopt", "$(touch pwned)", "terraform_data.a", "id"), 2, "no unit at"),
    (("move-unit", UNIT, "live/cloud/$(touch pwned)"), 2, "live/cloud/$(touch pwned)"),
    (("move-unit", UNIT, "live/cloud/dns zone"), 2, "live/cloud/dns zone"),
    (("move-unit", UNIT, "live/cloud/../../outside"), 2, ".."),
    (("move-unit", UNIT, "live/cloud/DNS"), 2, "live/cloud/DNS"),
    (("apply",), 2, "--plans"),
    (("plan-comment",), 2, "--plans"),
    (("manual-gate",), 2, "--plans"),
    (("manual-status",), 2, "--records"),
    (("app-plan", "--app", "Bad Name", "--dir", "live"), 2, "Bad Name"),
]

#: failures the user must act on (exit 1), with the file or thing named
FAILURES: list[Case] = [
    (("apply", "--plans", "no-such-folder"), 1, "summary.json"),
    (("matrix", "--base", "no-such-ref"), 1, "no-such-ref"),
    (("affected", "--base", "no-such-ref"), 1, "no-such-ref"),
    (("bump-module", "terraform-proxmox", "v9.9.9", "--dry-run"), 1, "v9.9.9"),
]


# broken files: (name, how to break the copy, the file the message must name)
def _open_locals(repo: Path) -> None:
    unit = repo / UNIT / "terragrunt.hcl"
    unit.write_text(unit.read_text() + "\nlocals {\n")


def _broken_policy(repo: Path) -> None:
    (repo / "policy.toml").write_text((repo / "policy.toml").read_text() + "\n[gates\n")


def _misspelt_policy_table(repo: Path) -> None:
    # [gate] for [gates]: read as written, it would drop the node/VM approval rule
    (repo / "policy.toml").write_text(
        (repo / "policy.toml").read_text() + '\n[gate]\nnode_types = ["proxmox_*"]\n'
    )


def _broken_tool_versions(repo: Path) -> None:
    (repo / ".tool-versions").write_text("opentofu\nterragrunt 1.1.3 extra words\n")


BROKEN = {
    "open-locals-at-eof": (_open_locals, f"{UNIT}/terragrunt.hcl:"),
    "broken-policy": (_broken_policy, "policy.toml"),
    "misspelt-policy-table": (
        _misspelt_policy_table,
        "policy.toml: the top level has unknown key(s) gate",
    ),
    "broken-tool-versions": (_broken_tool_versions, ".tool-versions"),
}

#: every task that reads the repository's configuration, with arguments that work on
#: the intact example (so a failure is the broken file's doing)
READERS: dict[str, tuple[str, ...]] = {
    "units": ("units",),
    "units --json": ("units", "--json"),
    "affected": ("affected", "--uncommitted"),
    "graph": ("graph",),
    "matrix": ("matrix",),
    "outdated": ("outdated",),
    "check": ("check",),
    "doctor": ("doctor",),
    "crosscheck": ("crosscheck",),
    "plan --unit": ("plan", "--unit", UNIT),
    "plan --all": ("plan", "--all"),
    "drift": ("drift",),
    "bump-module": ("bump-module", "terraform-cloudflare-dns", "v1.2.0", "--dry-run"),
    "bump-all": ("bump-all",),
    "adopt": ("adopt", UNIT, "terraform_data.record", "id"),
    "move-unit": ("move-unit", UNIT, "live/cloud/zone"),
}

#: (reader, broken file) pairs where the file plays no part in what the task does
IRRELEVANT = {
    # move-unit runs no tool (git mv and a copy of the state): the pins play no part
    ("move-unit", "broken-tool-versions"),
    # nor in what these read: they run no tool, so they work before the tools are installed
    ("units", "broken-tool-versions"),
    ("units --json", "broken-tool-versions"),
    ("affected", "broken-tool-versions"),
    ("graph", "broken-tool-versions"),
    ("matrix", "broken-tool-versions"),
    ("outdated", "broken-tool-versions"),
}


def _broken_cases() -> Iterator[Any]:
    for reader, argv in READERS.items():
        for broken, (_, named) in BROKEN.items():
            if (reader, broken) in IRRELEVANT:
                continue
            yield pytest.param(argv, broken, named, id=f"{reader}-{broken}")


# --------------------------------------------------------------------------- the checks

#: tool-private folders whose writes are not "touching" anything: caches, report
#: folders (the report folder is the one place a task may write), worktrees it removes
PRIVATE = (
    ".iac/cache",
    ".iac/plans",
    ".iac/drift",
    ".iac/app-plans",
    ".iac/worktrees",
    ".iac/adopt",
)


def snapshot(repo: Path) -> dict[str, str]:
    """Every file (path -> SHA-256) outside .git and the private folders, and the git refs."""
    found: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(repo):
        rel_dir = os.path.relpath(dirpath, repo).replace(os.sep, "/")
        dirnames[:] = [
            d
            for d in dirnames
            if not (rel_dir == "." and d == ".git")
            and (d if rel_dir == "." else f"{rel_dir}/{d}") not in PRIVATE
        ]
        for name in filenames:
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            if rel == ".iac/.gitignore":  # the tool's folder marked private, ignored by git
                continue
            found[rel] = hashlib.sha256((repo / rel).read_bytes()).hexdigest()
    found["<git refs>"] = git(repo, "for-each-ref", "--format=%(refname) %(objectname)")
    found["<git HEAD>"] = git(repo, "symbolic-ref", "-q", "HEAD")
    found["<git index>"] = git(repo, "ls-files", "--stage")
    return found


def assert_clean(ran: Invoked, code: int, named: str, argv: tuple[str, ...]) -> None:
    assert "Traceback" not in ran.output, ran.output
    assert "This is a bug in the tooling" not in ran.output, ran.output
    assert ran.returncode == code, f"{argv}: exit {ran.returncode}, wanted {code}\n{ran.output}"
    assert named in ran.output, f"{argv}: {named!r} not in\n{ran.output}"
    if code == 2:
        errors = [line for line in ran.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1, ran.stderr  # one line naming the fix


@pytest.fixture
def repo(tmp_path: Path, tools: None) -> Path:
    return make_example_repo(tmp_path / "infra")


@pytest.fixture(scope="module")
def shared_repo(tmp_path_factory: pytest.TempPathFactory, tools: None) -> Path:
    """One example repository for the argument cases: none may change it (each checks)."""
    return make_example_repo(tmp_path_factory.mktemp("hostile") / "infra")


@pytest.mark.parametrize(
    ("argv", "code", "named"),
    _generic_usage_cases() + HOSTILE_USAGE + FAILURES,
    ids=lambda v: " ".join(v) if isinstance(v, tuple) else str(v),
)
def test_hostile_arguments_exit_2_for_usage_1_for_failures_and_touch_nothing(
    shared_repo: Path, argv: tuple[str, ...], code: int, named: str
) -> None:
    before = snapshot(shared_repo)
    ran = invoke(shared_repo, *argv, timeout=300)
    assert_clean(ran, code, named, argv)
    assert snapshot(shared_repo) == before
    assert not (shared_repo / "pwned").exists()


@pytest.mark.parametrize(("argv", "broken", "named"), list(_broken_cases()))
def test_broken_files_fail_every_reading_task_with_file_line_and_exit_1(
    repo: Path, argv: tuple[str, ...], broken: str, named: str
) -> None:
    BROKEN[broken][0](repo)
    commit_all(repo, f"broken: {broken}")  # on main, as a bad merge would leave it
    git(repo, "push", "--quiet", "origin", "main")
    before = snapshot(repo)
    ran = invoke(repo, *argv, timeout=300)
    assert_clean(ran, 1, named, argv)
    if argv[0] in ("plan", "drift") and broken == "open-locals-at-eof" and argv[1:2] != ("--unit",):
        # a unit file HCL refuses is refused alone: the other units are planned (their
        # working copies are Terragrunt's caches, ignored by git), the broken one is not
        assert not (repo / UNIT / ".terragrunt-cache").exists()
        assert _without_caches(snapshot(repo)) == _without_caches(before)
    else:
        assert snapshot(repo) == before


def _without_caches(found: dict[str, str]) -> dict[str, str]:
    return {p: h for p, h in found.items() if "/.terragrunt-cache/" not in f"/{p}"}
