"""Nothing is done twice in one `invoke plan`: policy.toml read, parsed and each of its
tables interpreted once (by the task's preamble, which hands the one typed Policy down),
the settings and each tree's model once, the pinned tools checked once, no git,
Terragrunt or OpenTofu command line run twice.

The plan is real (in-process `invoke`, the pinned Terragrunt and OpenTofu, a real git
repository); what is counted is counted by shims the test installs around the tooling's
own functions, each calling the real one. The processes are the ones the tooling
itself echoes (``IAC_ECHO_COMMANDS``).
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from infra_fixtures import commit_all, git, invoke_in_process

from tooling import cli
from tooling.errors import ToolingError
from tooling.io import config, toolchain
from tooling.io import workspace as workspace_module
from tooling.model import policy as policy_module
from tooling.model.policy import GatePolicy, policy_from

#: each table's interpreter (a part of the one parser, policy_from), by the table it reads
INTERPRETERS: dict[str, str] = {
    "[layout]": "_layout",
    "[gates]": "_gates",
    "[executors]": "_executors",
    "[check]": "_check",
    "[apps]": "_apps",
    "[secrets]": "_secrets",
    "[sensitive_attributes]": "_sensitive_attributes",
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
    monkeypatch.setattr(config, "_policy_text", _count(calls, "read", config._policy_text))
    monkeypatch.setattr(
        config, "parse_policy_text", _count(calls, "parse", config.parse_policy_text)
    )
    monkeypatch.setattr(config, "parse_rewrites", _count(calls, "settings", config.parse_rewrites))
    monkeypatch.setattr(
        toolchain, "check_versions", _count(calls, "tools", toolchain.check_versions)
    )
    for table, name in INTERPRETERS.items():
        fn = getattr(policy_module, name)
        monkeypatch.setattr(policy_module, name, _count(calls, table, fn))
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
    # policy.toml: read and parsed once, by the preamble, which hands its Policy down
    assert calls["read_policy"] == 1
    assert (calls["read"], calls["parse"]) == (1, 1)
    assert len(set(returned)) == 1
    # each table interpreted once (the preamble's one parser reads them all first)
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


# ------------------------------------------------------------------------- the shared value


def test_the_parsed_policy_is_read_only_and_a_changed_copy_leaves_it_as_it_was() -> None:
    data = policy_from(
        {"gates": {"node_types": ["proxmox_*"]}, "executors": {"a": {"runs_on": ["x"]}}}
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        data.gates = GatePolicy()  # type: ignore[misc]
    with pytest.raises(TypeError):
        data.executors["b"] = data.executors["a"]  # type: ignore[index]
    with pytest.raises(AttributeError):
        data.gates.node_types.append("x")  # type: ignore[attr-defined]
    changed = dataclasses.replace(data, gates=GatePolicy(("x",)))  # a copy changes freely
    assert changed.gates.node_types == ("x",)
    assert data.gates.node_types == ("proxmox_*",)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('[layout]\nroot_file = "a/b"\n', "[layout] root_file must be a file name"),
        ("[gates]\nnode_type = []\n", "[gates] has unknown key(s) node_type"),
    ],
)
def test_a_table_that_fails_fails_the_same_way_each_time(
    tmp_path: Path, text: str, error: str
) -> None:
    (tmp_path / "policy.toml").write_text(text)
    errors = []
    for _ in range(2):
        with pytest.raises(ToolingError) as exc:
            config.read_policy(tmp_path)
        errors.append(str(exc.value))
    assert errors[0] == errors[1]
    assert error in errors[0]
    (tmp_path / "policy.toml").write_text('[gates]\nnode_types = ["a_*"]\n')
    assert config.read_policy(tmp_path).gates.node_types == ("a_*",)  # nothing kept of it


def test_each_task_reads_policy_toml_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "root.hcl").write_text("locals {}\n")
    (tmp_path / "live").mkdir()
    policy = tmp_path / "policy.toml"
    policy.write_text('[gates]\nnode_types = ["a_*"]\n')
    monkeypatch.chdir(tmp_path)
    seen: list[tuple[str, ...]] = []

    def task() -> None:
        first = cli.project().policy.gates
        policy.write_text('[gates]\nnode_types = ["b_*"]\n')
        # within a task, every step reads what its preamble read
        assert cli.workspace().policy.gates == first
        assert cli.project().policy.gates == first
        seen.append(first.node_types)

    cli.run(task)
    cli.run(lambda: seen.append(cli.workspace().policy.gates.node_types))
    assert seen == [("a_*",), ("b_*",)]
    os.remove(policy)
    assert config.read_policy(tmp_path) == policy_from({})  # outside a task: read on each call
