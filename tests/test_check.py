"""`invoke check`: the example passes; each broken repository of tests/check_corpus fails,
naming the offending file and line. Plus the rules' pure parts as tables.

Each corpus case is a folder: files overlaid onto a copy of the example tree,
and ``case.toml`` with ``[[edit]]`` text edits (``old``/``new`` or ``append``)
and the ``[[expect]]`` violations (rule, file, optional line). A case passes
when the check exits 1 and reports exactly the expected (rule, file) pairs.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from infra_fixtures import GIT_ENV, REPO, commit_all, git, invoke, invoke_in_process

from tooling.core.rules.bootstrap import check_bootstrap_guard, check_ci_never_runs_bootstrap
from tooling.core.rules.rule import Context
from tooling.core.rules.snapshot import Snapshot, Violation
from tooling.core.rules.tool_pins import check_tool_versions
from tooling.errors import ToolingError
from tooling.model import tools
from tooling.model.policy import CheckPolicy, policy_from

CORPUS = Path(__file__).parent / "check_corpus"
CASES = sorted(p.name for p in CORPUS.iterdir() if (p / "case.toml").is_file())
#: what of the repository a check reads: the example tree plus CI, bootstrap and hooks
BASE = (
    "root.hcl",
    "policy.toml",
    ".tool-versions",
    "tasks.py",
    ".gitignore",
    ".pre-commit-config.yaml",
    "live",
    ".github",
    "bootstrap",
    ".ci",
)
#: a file may hold spaces: the unit-name rule names such folders
LINE_RE = re.compile(r"^(?P<file>[^:\s][^:]*):(?P<line>\d+): (?P<rule>[a-z-]+): .+\. Fix: .+$")


def base_tree(dest: Path) -> Path:
    dest.mkdir(parents=True)
    for name in BASE:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(
                src, dest / name, ignore=shutil.ignore_patterns(".terragrunt-cache", "__pycache__")
            )
        elif src.is_file():
            shutil.copy2(src, dest / name)
    return dest


def apply_case(repo: Path, case: str) -> dict[str, Any]:
    folder = CORPUS / case
    spec = tomllib.loads((folder / "case.toml").read_text())
    for src in folder.rglob("*"):
        rel = src.relative_to(folder)
        if src.is_file() and rel.as_posix() != "case.toml":
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, repo / rel)
            if rel.parts[0] == "bootstrap":
                (repo / rel).chmod(0o755)
    for edit in spec.get("edit", []):
        path = repo / edit["file"]
        text = path.read_text()
        if "append" in edit:
            text += edit["append"]
        else:
            assert edit["old"] in text, f"{case}: {edit['old']!r} not in {edit['file']}"
            text = text.replace(edit["old"], edit["new"], 1)
        path.write_text(text)
    return spec


def _violations(ran: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = json.loads(ran.stdout)["violations"]
    return found


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return base_tree(tmp_path / "infra")


def test_the_example_tree_passes_clean(tree: Path) -> None:
    ran = invoke(tree, "check")
    assert ran.returncode == 0, ran.output
    assert "check: no violations (7 units)" in ran.stderr


def test_the_corpus_has_a_case_for_every_rule() -> None:
    rules = {
        e["rule"]
        for case in CASES
        for e in tomllib.loads((CORPUS / case / "case.toml").read_text()).get("expect", [])
    }
    documented = set(
        re.findall(r"^#### `([a-z-]+)`", (REPO / "docs" / "rules.md").read_text(), re.M)
    )
    assert rules == documented


@pytest.mark.parametrize("case", CASES)
def test_each_broken_repository_fails_naming_the_offending_file(
    tree: Path, case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = apply_case(tree, case)
    ran = invoke_in_process(tree, "check", "--json", monkeypatch=monkeypatch)
    expected = {(e["rule"], e["file"]) for e in spec.get("expect", [])}
    assert "Traceback" not in ran.output, ran.output
    if not expected:
        assert ran.returncode == 0, ran.output
        return
    assert ran.returncode == 1, ran.output
    found = _violations(ran)
    assert {(v["rule"], v["file"]) for v in found} == expected, ran.stderr
    for e in spec["expect"]:
        if "line" in e:
            lines = {v["line"] for v in found if (v["rule"], v["file"]) == (e["rule"], e["file"])}
            assert e["line"] in lines, (e, ran.stderr)
    # the human lines: file:line: rule: message. Fix: how
    printed = [line for line in ran.stderr.splitlines() if LINE_RE.match(line)]
    assert len(printed) == len(found), ran.stderr
    assert ran.stderr.rstrip().splitlines()[-1].startswith(f"check: {len(found)} violation(s)")


def test_app_workspaces_outside_the_repository_are_checked_with_apps(
    tree: Path, tmp_path: Path
) -> None:
    apps = tmp_path / "app-repos"
    (apps / "shop" / "terraform").mkdir(parents=True)
    (apps / "shop" / "terraform" / "main.tf").write_text(
        'terraform {\n  backend "s3" {\n    key = "live/cluster/vms/terraform.tfstate"\n  }\n}\n'
    )
    (apps / "blog" / "terraform").mkdir(parents=True)
    (apps / "blog" / "terraform" / "prod.s3.tfbackend").write_text(
        'key = "apps/blog/terraform.tfstate"\n'
    )
    assert invoke(tree, "check").returncode == 0
    ran = invoke(tree, "check", "--apps", str(apps), "--json")
    assert ran.returncode == 1, ran.output
    found = {(v["rule"], v["file"], v["line"]) for v in _violations(ran)}
    shop = str(apps / "shop" / "terraform" / "main.tf")
    assert ("tier-overlap", shop, 3) in found
    assert ("state-key-duplicate", "live/cluster/vms/terragrunt.hcl", 1) in found
    assert not any("blog" in f for _r, f, _l in found)


def test_the_published_hook_entry_runs_the_same_check(tree: Path) -> None:
    hooks = (REPO / ".pre-commit-hooks.yaml").read_text()
    assert "id: iac-check" in hooks and "entry: python -m tooling.check" in hooks
    ok = subprocess.run(
        [sys.executable, "-m", "tooling.check"],
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
    )
    assert ok.returncode == 0, ok.stderr
    apply_case(tree, "ref-main")
    bad = subprocess.run(
        [sys.executable, "-m", "tooling.check", str(tree)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 1
    assert "live/cloud/dns/terragrunt.hcl:13: pin-branch: " in bad.stdout  # the result: stdout


@pytest.mark.e2e
def test_pre_commit_runs_the_check_and_fails_on_a_violation(tree: Path, tmp_path: Path) -> None:
    git(tree, "init", "--quiet", "--initial-branch=main")
    commit_all(tree, "example")
    env = {
        **os.environ,
        **GIT_ENV,
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }

    def hook() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pre_commit", "run", "iac-check", "--all-files"],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )

    first = hook()
    assert first.returncode == 0, first.stdout + first.stderr
    assert "invoke check" in first.stdout and "Passed" in first.stdout
    apply_case(tree, "workflow-runs-bootstrap")
    git(tree, "add", "--all")
    second = hook()
    assert second.returncode == 1
    assert ".github/workflows/seed.yml:17: ci-runs-bootstrap:" in second.stdout


# --------------------------------------------------------------------------- pure parts


def _snap(files: dict[str, str], executable: tuple[str, ...] = ()) -> Snapshot:
    return Snapshot.of(
        {".tool-versions": "opentofu 1.12.6\nterragrunt 1.1.3\n", **files}, executable
    )


@pytest.mark.parametrize(
    ("text", "pins"),
    [
        ("tofu_version: 1.6.0", ["opentofu 1.6.0"]),
        ("tofu_version: 1.12.6", []),
        ("TERRAGRUNT_VERSION=0.55.0", ["terragrunt 0.55.0"]),
        ("terragrunt-version: 'v0.67'", ["terragrunt 0.67"]),
        ("ENV OPENTOFU_VERSION=1.7.1", ["opentofu 1.7.1"]),
        (
            "curl -LO https://github.com/opentofu/opentofu/releases/download/v1.8.0/tofu_1.8.0_linux_amd64.zip",
            ["opentofu 1.8.0"],
        ),
        ("go install github.com/gruntwork-io/terragrunt@v0.70.1", ["terragrunt 0.70.1"]),
        ("image: ghcr.io/opentofu/opentofu:1.9.0", ["opentofu 1.9.0"]),
        ("python-version: '3.11'", []),
        ("run: tofu version && terragrunt --version", []),
    ],
)
def test_other_pins_of_the_tools_are_found(text: str, pins: list[str]) -> None:
    found = check_tool_versions(Context(snap=_snap({".github/workflows/x.yml": f"x:\n  {text}\n"})))
    assert [v.message.split(", but")[0].removeprefix("pins ") for v in found] == pins
    assert all(v.file == ".github/workflows/x.yml" and v.line == 2 for v in found)


@pytest.mark.parametrize(
    ("script", "hits"),
    [
        ("./bootstrap/bootstrap apply", 1),
        ("python3 bootstrap/bootstrap plan", 1),
        ('bash "${GITHUB_WORKSPACE}/bootstrap/seed-secrets.sh"', 1),
        ("cd bootstrap && ./bootstrap plan", 1),
        ("# see bootstrap/README.md, never run bootstrap/bootstrap here", 0),
        ("cat bootstrap/README.md", 0),
        ("flux bootstrap github --owner=x", 0),
        ("echo done # bootstrap/bootstrap is manual", 0),
    ],
)
def test_workflow_steps_running_bootstrap_are_found(script: str, hits: int) -> None:
    workflow = f"jobs:\n  a:\n    steps:\n      - run: |\n          set -e\n          {script}\n"
    found = check_ci_never_runs_bootstrap(
        Context(snap=_snap({".github/workflows/w.yml": workflow}))
    )
    assert len(found) == hits
    assert all(v.line == 6 and v.rule == "ci-runs-bootstrap" for v in found)


def test_the_real_bootstrap_entry_points_carry_the_ci_guard() -> None:
    scripts = [
        "bootstrap/bootstrap",
        "bootstrap/seed-secrets.sh",
        "bootstrap/lan-runner/install.sh",
    ]
    snap = Snapshot.of({p: (REPO / p).read_text() for p in scripts}, executable=scripts)
    assert check_bootstrap_guard(Context(snap=snap)) == []
    unguarded = Snapshot.of(
        {"bootstrap/x.sh": "#!/bin/sh\n# CI GITHUB_ACTIONS only in a comment\necho hi\n"}
    )
    assert [v.rule for v in check_bootstrap_guard(Context(snap=unguarded))] == [
        "bootstrap-ci-guard"
    ]


def test_a_violation_prints_as_file_line_rule_message_fix() -> None:
    v = Violation("live/a/terragrunt.hcl", 3, "pin-branch", "pins ?ref=main.", "pin a tag")
    assert str(v) == "live/a/terragrunt.hcl:3: pin-branch: pins ?ref=main. Fix: pin a tag"


@pytest.mark.parametrize(
    ("section", "error"),
    [
        ({"check": {"layers": {"cloud": {"path": "live/cloud"}}}}, "needs executor"),
        (
            {
                "check": {
                    "layers": {
                        "cloud": {
                            "path": "live/cloud",
                            "executor": "hosted",
                            "may_depend_on": ["x"],
                        }
                    }
                }
            },
            "which is not a layer",
        ),
        (
            {"check": {"allowed_module_sources": "git.example.com/*", "typo": 1}},
            "unknown key(s) typo",
        ),
        ({"check": {"app_state_prefix": "/"}}, "must be a folder prefix"),
    ],
)
def test_a_malformed_check_policy_is_refused_with_what_to_fix(
    section: dict[str, Any], error: str
) -> None:
    with pytest.raises(ToolingError, match=re.escape(error)):
        policy_from(section)


def test_the_repository_policy_declares_both_layers_and_the_allowlist() -> None:
    pol = policy_from(tomllib.loads((REPO / "policy.toml").read_text())).check
    assert {(layer.name, layer.executor) for layer in pol.layers} == {
        ("cloud", "hosted"),
        ("cluster", "lan"),
    }
    assert pol.layer_named("cloud") is not None and pol.layer_named("cloud").may_depend_on == (
        "cloud",
    )  # type: ignore[union-attr]
    assert pol.allowed_module_sources == ("git.example.com/platform-modules/*",)


def test_check_reads_tool_versions_with_the_installers_reader() -> None:
    """`invoke check` and `invoke setup` read .tool-versions alike: a line setup refuses is a violation."""
    text = "opentofu 1.12.6\nterragrunt\nopentofu 1.12.7\nterragrunt 1.1.3\n"
    found = check_tool_versions(
        Context(policy=CheckPolicy(), snap=Snapshot.of({".tool-versions": text}, ()))
    )
    assert [(v.line, v.rule, v.message) for v in found] == [
        (2, "tool-version-pin", "malformed line 'terragrunt': expected '<tool> <version>'"),
        (3, "tool-version-pin", "opentofu is pinned twice (first on line 1)"),
    ]
    with pytest.raises(ToolingError, match=r"\.tool-versions:2: malformed line"):
        tools.parse_tool_versions(text, ".tool-versions")
