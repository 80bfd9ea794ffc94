"""Nothing is done twice in one `invoke plan`: policy.toml read, parsed and each of its
tables interpreted once, the settings and each tree's model once, the pinned tools
checked once, no git, Terragrunt or OpenTofu command line run twice.

The plan is real (in-process `invoke`, the pinned Terragrunt and OpenTofu, a real git
repository); what is counted is counted by shims the test installs around the tooling's
own functions, each calling the real one. The processes are the ones the tooling
itself echoes (``IAC_ECHO_COMMANDS``).
"""

from __future__ import annotations

import copy
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from infra_fixtures import commit_all, git, invoke_in_process

from tooling.core import apps, checksettings, declared, executors, gates, redact
from tooling.errors import ToolingError
from tooling.io import config, toolchain
from tooling.io import workspace as workspace_module
from tooling.model import layout
from tooling.model.policydata import PolicyData

#: each table's interpreter, by the table it reads
INTERPRETERS: dict[str, Callable[..., Any]] = {
    "[layout]": layout.layout_from,
    "[gates]": gates.parse_policy,
    "[executors]": executors.parse,
    "[check]": checksettings.parse_policy,
    "[apps]": apps.parse_policy,
    "[secrets]": redact.parse_policy,
    "[sensitive_attributes]": declared.parse_policy,
}


def _count(calls: Counter[str], name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[name] += 1
        return fn(*args, **kwargs)

    return counted


def _counted_plan(
    repo: Path, monkeypatch: pytest.MonkeyPatch, *args: str
) -> tuple[Counter[str], list[int], list[str], list[str]]:
    """Run ``invoke plan ARGS`` in ``repo``; return the counts, the identities of what each
    ``read_policy`` call returned, the models' trees and the echoed command lines."""
    calls: Counter[str] = Counter()
    returned: list[int] = []
    trees: list[str] = []
    config._parsed.cache_clear()  # what earlier tests in this process parsed and interpreted
    monkeypatch.setattr(config, "_policy_text", _count(calls, "read", config._policy_text))
    monkeypatch.setattr(
        config, "parse_policy_text", _count(calls, "parse", config.parse_policy_text)
    )
    monkeypatch.setattr(config, "parse_rewrites", _count(calls, "settings", config.parse_rewrites))
    monkeypatch.setattr(
        toolchain, "check_versions", _count(calls, "tools", toolchain.check_versions)
    )
    for table, fn in INTERPRETERS.items():
        # the body each interpreter runs (its answer is kept on the parsed policy)
        monkeypatch.setattr(fn, "__wrapped__", _count(calls, table, fn.__wrapped__))
    read_policy = config.read_policy

    def counted_read(root: Path) -> Any:
        calls["read_policy"] += 1
        data = read_policy(root)
        returned.append(id(data))
        return data

    monkeypatch.setattr(config, "read_policy", counted_read)
    load = workspace_module.load

    def counted_load(tree: Any, cache_dir: Path | None = None) -> Any:
        trees.append(f"{type(tree).__name__} {tree.fingerprint()}")
        return load(tree, cache_dir)

    monkeypatch.setattr(workspace_module, "load", counted_load)
    ran = invoke_in_process(
        repo, "plan", *args, monkeypatch=monkeypatch, env={"IAC_ECHO_COMMANDS": "1"}
    )
    assert ran.returncode == 0, ran.output
    echoed = [line[2:] for line in ran.stderr.splitlines() if line.startswith("+ ")]
    return calls, returned, trees, echoed


def _assert_once(
    calls: Counter[str], returned: list[int], trees: list[str], echoed: list[str]
) -> None:
    # policy.toml: read and parsed once, however many steps ask; one object handed out
    assert calls["read_policy"] >= 3  # the policy check, the layout, the workspace...
    assert (calls["read"], calls["parse"]) == (1, 1)
    assert len(set(returned)) == 1
    # each table interpreted once (the policy check reads them all first)
    for table in INTERPRETERS:
        assert calls[table] == 1, (table, calls[table])
    # the settings, the pinned tools, each tree's model: once
    assert (calls["settings"], calls["tools"]) == (1, 1)
    assert trees and len(trees) == len(set(trees)), trees
    # processes: the plan itself ran, the tree's status asked once, no tool asked its version
    assert any(c.startswith("terragrunt ") and " plan" in c for c in echoed), echoed
    assert sum(c.startswith("git status") for c in echoed) == 1, echoed
    assert not [c for c in echoed if c.split()[0] in ("tofu", "terragrunt") and "version" in c]


def test_a_plan_of_one_changed_unit_does_nothing_twice(
    example_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    git(example_repo, "checkout", "--quiet", "-b", "bump")
    hcl = example_repo / "live/cloud/dns/terragrunt.hcl"
    hcl.write_text(hcl.read_text() + "\n# bumped\n")
    commit_all(example_repo, "bump")
    out = tmp_path / "plans"
    # a first plan fills the caches a later run reuses (the sandbox catalog, the tools'
    # check, the models, the working copy), as on a developer's machine
    first = invoke_in_process(example_repo, "plan", "--base", "main", "--out", str(out))
    assert first.returncode == 0, first.output
    calls, returned, trees, echoed = _counted_plan(
        example_repo, monkeypatch, "--base", "main", "--out", str(out)
    )
    assert (out / "units/live/cloud/dns/plan.tfplan").is_file()
    _assert_once(calls, returned, trees, echoed)
    repeated = [c for c, n in Counter(echoed).items() if n > 1]
    assert repeated == [], repeated  # no git, Terragrunt or OpenTofu command line twice


def test_a_plan_of_every_unit_reads_and_interprets_policy_toml_once(
    example_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "plans"
    first = invoke_in_process(example_repo, "plan", "--all", "--out", str(out))
    assert first.returncode == 0, first.output
    calls, returned, trees, echoed = _counted_plan(
        example_repo, monkeypatch, "--all", "--out", str(out)
    )
    assert len(list(out.glob("units/live/*/*/plan.tfplan"))) == 7
    _assert_once(calls, returned, trees, echoed)


# ------------------------------------------------------------------------- the shared object


def test_the_parsed_policy_is_read_only_and_its_copies_are_plain() -> None:
    data = PolicyData({"gates": {"node_types": ["proxmox_*"]}})
    with pytest.raises(TypeError, match="read-only"):
        data["gates"]["node_types"].append("x")
    with pytest.raises(TypeError, match="read-only"):
        data["check"] = {}
    thawed = copy.deepcopy(data)
    thawed["gates"]["node_types"].append("x")  # a copy changes freely
    assert type(thawed) is dict and type(thawed["gates"]["node_types"]) is list
    assert data == {"gates": {"node_types": ["proxmox_*"]}}


def test_a_table_that_fails_fails_the_same_way_each_time(tmp_path: Path) -> None:
    (tmp_path / "policy.toml").write_text('[layout]\nroot_file = "a/b"\n[gates]\nnode_type = []\n')
    with config.policy_read_once():
        data = config.read_policy(tmp_path)
        errors = []
        for _ in range(2):
            for fn in (layout.layout_from, gates.parse_policy):
                with pytest.raises(ToolingError) as exc:
                    fn(data)
                errors.append(str(exc.value))
    assert errors[:2] == errors[2:]
    assert "[layout] root_file must be a file name" in errors[0]
    assert "[gates] has unknown key(s) node_type" in errors[1]
    assert data.kept == {}  # nothing kept of a failure


def test_each_task_reads_policy_toml_again(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('[gates]\nnode_types = ["a_*"]\n')
    with config.policy_read_once():
        first = gates.parse_policy(config.read_policy(tmp_path))
        policy.write_text('[gates]\nnode_types = ["b_*"]\n')
        # within a task, every step reads what its first step read
        assert gates.parse_policy(config.read_policy(tmp_path)) == first
    with config.policy_read_once():
        assert gates.parse_policy(config.read_policy(tmp_path)).node_types == ("b_*",)
    os.remove(policy)
    assert config.read_policy(tmp_path) == {}  # outside a task: read on each call
