"""policy.toml is checked whole before any task does anything.

A key only one reader knows (``[gates] node_types``) misspelt would otherwise
pass every task that does not read that table (``invoke check`` said "no
violations"), and ``invoke plan`` would find it only after planning, having
already emptied the previous report. The task list is read from ``invoke
--list`` when the tests are collected: a new task is covered without editing
this file (one that needs arguments gets them in ``ARGUMENTS``).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from infra_fixtures import REPO, commit_all, git, invoke_in_process, make_example_repo

UNIT = "live/cloud/dns"

#: the arguments a task needs to get past its own usage checks (exit 2)
ARGUMENTS: dict[str, tuple[str, ...]] = {
    "apply": ("--plans", ".iac/plans"),
    "plan-comment": ("--plans", "artifacts", "--matrix", '{"include": []}'),
    "apply-report": (
        "--plans",
        "artifacts",
        "--matrix",
        '{"include": []}',
        "--apply-result",
        "success",
    ),
    "manual-status": (
        "--records",
        "artifacts",
        "--matrix",
        '{"include": []}',
        "--result",
        "success",
    ),
    "manual-gate": ("--plans", ".iac/app-plans/web"),
    "app-plan": ("--app", "web", "--dir", "apps/web"),
    "app-apply": ("--app", "web", "--dir", "apps/web", "--plans", ".iac/app-plans/web"),
    "bump-module": ("terraform-cloudflare-dns", "v1.2.0", "--dry-run"),
    "adopt": (UNIT, "terraform_data.record", "id"),
    "move-unit": (UNIT, "live/cloud/zone"),
    "report": ("--merge", "artifacts/plan-hosted"),
    "test": ("--args", "--collect-only -q"),
    "reviewed-run": ("--out", "artifacts/reviewed"),
    "reviewed-check": ("--plans", "artifacts"),
}


def listed_tasks() -> list[str]:
    """The task names ``invoke --list`` prints, read now."""
    listed = subprocess.run(
        [sys.executable, "-m", "invoke", "--list", "--list-format=json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    names = [str(task["name"]) for task in json.loads(listed.stdout)["tasks"]]
    assert len(names) > 20 and "plan" in names and "check" in names, names
    return names


def everything(repo: Path, cache: Path) -> dict[str, str]:
    """Every file under the repository (report folders included; .git's objects apart)
    and the tool cache, with the git refs and index: what "nothing written" compares."""
    found: dict[str, str] = {}
    for top in (repo, cache):
        for dirpath, dirnames, filenames in os.walk(top):
            if Path(dirpath) == repo:
                dirnames[:] = [d for d in dirnames if d != ".git"]
            for name in filenames:
                path = Path(dirpath) / name
                found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    found["<git refs>"] = git(repo, "for-each-ref", "--format=%(refname) %(objectname)")
    found["<git index>"] = git(repo, "ls-files", "--stage")
    found["<git worktrees>"] = git(repo, "worktree", "list", "--porcelain")
    return found


@pytest.fixture(scope="module")
def misspelt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example with ``[gates] node_type`` for ``node_types``, committed as a bad
    merge would leave it, and a previous plan report that must survive."""
    repo = make_example_repo(tmp_path_factory.mktemp("policy-typo") / "infra")
    policy = repo / "policy.toml"
    text = policy.read_text(encoding="utf-8")
    assert text.count("\nnode_types = [") == 1
    policy.write_text(text.replace("\nnode_types = [", "\nnode_type = ["), encoding="utf-8")
    commit_all(repo, "policy: a typo")
    git(repo, "push", "--quiet", "origin", "main")
    previous = repo / ".iac" / "plans"
    previous.mkdir(parents=True)
    (previous / "summary.json").write_text('{"previous": true}\n', encoding="utf-8")
    (previous / "comment.md").write_text("the previous report\n", encoding="utf-8")
    return repo


@pytest.mark.parametrize("task", listed_tasks())
def test_every_task_refuses_a_misspelt_policy_key_by_name_before_writing_anything(
    misspelt: Path, task: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = Path(os.environ["IAC_CACHE_DIR"])
    cache.mkdir(parents=True, exist_ok=True)
    before = everything(misspelt, cache)
    # in the test's process: the same tasks, parser and exit codes; the task list itself
    # comes from `invoke --list` as a process, and test_cli_output runs the command line
    ran = invoke_in_process(misspelt, task, *ARGUMENTS.get(task, ()), monkeypatch=monkeypatch)
    assert ran.returncode == 1, f"{task}: exit {ran.returncode}\n{ran.output}"
    errors = [line for line in ran.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        "error: policy.toml: [gates] has unknown key(s) node_type; "
        "known keys: auto_state_actions, node_addresses, node_types. Fix the spelling"
    ], ran.output
    assert everything(misspelt, cache) == before


@pytest.mark.parametrize(
    ("table", "body", "named"),
    [
        ("secrets", 'env_name_word = ["TOKEN"]', "env_name_word"),
        ("secrets", 'env_names = "GITHUB_TOKEN"', "env_names"),
        ("sensitive_attributes", "docker_container = 3", "docker_container"),
    ],
)
def test_every_table_the_redaction_reads_is_checked_before_a_task_starts(
    table: str, body: str, named: str
) -> None:
    import tomllib

    from tooling.errors import ToolingError
    from tooling.model.policy import policy_from

    policy = tomllib.loads((REPO / "policy.toml").read_text()) | tomllib.loads(
        f"[{table}]\n{body}\n"
    )
    with pytest.raises(ToolingError, match=named):
        policy_from(policy)
    policy_from(tomllib.loads((REPO / "policy.toml").read_text()))  # the real one passes
