"""The guard itself (``tooling/guard``): its Go tables, its build (static: no dynamic
loader, so ``LD_PRELOAD`` never reaches it), its configuration beside its executable,
and the Python side of what it compares (docs/rules.md, "The point of execution")."""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tooling.core.rules import execpoint
from tooling.core.rules.rule import UnitFacts, UnitRender
from tooling.engine.rules import execguard
from tooling.io import gobuild, guardbin
from tooling.model.policy import Policy, policy_from

GO_TEST = guardbin.SOURCE / "main_test.go"


def test_the_python_side_normalizes_generated_files_as_the_guard_does() -> None:
    vector = re.search(r'NormalizedVector = "([0-9a-f]{64})"', GO_TEST.read_text())
    assert vector is not None
    assert execpoint.normalized('a = 1\n\n  b = "x y"\n') == vector.group(1)
    # formatting moves only spaces, tabs and blank lines; anything else is another file
    assert execpoint.normalized("a {\n  b = 1\n}\n") == execpoint.normalized("a {\n\tb=1\n\n}")
    assert execpoint.normalized('p = "/a"\n') != execpoint.normalized('p = "/b"\n')


def test_a_generated_file_is_its_signature_and_contents() -> None:
    block = {"path": "backend.tf", "contents": "x\n", "comment_prefix": "# "}
    assert execpoint.generated_file(block) == f"# {execpoint.SIGNATURE}\nx\n"
    assert execpoint.generated_file({**block, "disable_signature": True}) == "x\n"
    assert execpoint.generated_file({**block, "disable": True}) is None


def test_the_module_variables_are_its_variable_blocks_and_never_the_pipelines() -> None:
    files = {
        "variables.tf": b'variable "zone" {}\nvariable records {\n  type = any\n}\n',
        "more.tf.json": b'{"variable": {"ttl": {}}}',
        "main.tf": b'resource "terraform_data" "x" {}\n# variable "commented" {}\n',
        "encryption.tf": b'variable "iac_encryption_passphrase" {}\n',
        "broken.tf": b"variable {",
    }
    assert execpoint.variables_in(files) == frozenset({"zone", "records", "ttl"})


def test_the_declared_backend_is_read_from_the_generated_file_or_remote_state() -> None:
    generated = {
        "generate": {
            "backend": {
                "path": "backend.tf",
                "contents": 'terraform {\n  backend "s3" {\n    bucket = "b"\n    key = "k"\n'
                '    encrypt = true\n    endpoints = { s3 = "http://x" }\n  }\n}\n',
            }
        }
    }
    backend = execpoint.declared_backend(generated)
    assert backend is not None and backend.type == "s3"
    assert backend.config == {
        "bucket": "b",
        "key": "k",
        "encrypt": True,
        "endpoints": {"s3": "http://x"},
    }
    remote = {"remote_state": {"backend": "local", "config": {"path": "/s"}}}
    assert execpoint.declared_backend(remote) == execpoint.Backend("local", {"path": "/s"})
    assert execpoint.declared_backend({"generate": {}}) is None


@pytest.mark.e2e
def test_the_guards_own_tables_pass(tmp_path: Path) -> None:
    """``go test`` of the guard's package: the working copy, the environment, the
    arguments and the recorded backend, case by case."""
    if shutil.which("go") is None:
        pytest.skip("Go is not on PATH")
    env = {**os.environ, **gobuild.private_go_env(tmp_path)}
    ran = subprocess.run(
        ["go", "test", "-count=1", "./..."],
        cwd=guardbin.SOURCE,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    gobuild.remove_scratch(tmp_path)


def _has_interpreter(binary: Path) -> bool:
    """Whether an ELF executable names a dynamic loader (a PT_INTERP program header)."""
    data = binary.read_bytes()
    assert data[:4] == b"\x7fELF" and data[4] == 2  # 64-bit
    endian = "<" if data[5] == 1 else ">"
    phoff = struct.unpack_from(endian + "Q", data, 0x20)[0]
    phentsize, phnum = struct.unpack_from(endian + "HH", data, 0x36)
    for i in range(phnum):
        (kind,) = struct.unpack_from(endian + "I", data, phoff + i * phentsize)
        if kind == 3:  # PT_INTERP
            return True
    return False


@pytest.mark.e2e
def test_the_guard_is_a_static_binary_no_loader_variable_reaches(tools: None) -> None:
    guard = guardbin.ensure()
    assert not _has_interpreter(guard)
    assert _has_interpreter(Path(os.path.realpath(shutil.which("git") or "/bin/sh")))


@pytest.mark.e2e
def test_the_guard_reads_its_configuration_beside_itself_and_refuses_without_one(
    tools: None, tmp_path: Path
) -> None:
    config = execpoint.config_bytes(execpoint.config_document([], tofu="/t", terragrunt="/g"))
    exe = guardbin.run_folder(tmp_path / "cache", config)
    assert exe.name == "tofu" and (exe.parent / "guard.json").read_bytes() == config
    assert guardbin.run_folder(tmp_path / "cache", config) == exe  # named by its content
    # started by this process, not by the pinned Terragrunt: refused, OpenTofu never starts
    ran = subprocess.run([str(exe), "version"], capture_output=True, text=True)
    assert ran.returncode == 1
    assert "exec-run: OpenTofu was started by" in ran.stderr and "/t" not in ran.stdout
    # a copy elsewhere has no configuration beside it, whatever its environment says
    lone = tmp_path / "lone" / "tofu"
    lone.parent.mkdir()
    shutil.copy2(exe, lone)
    ran = subprocess.run(
        [str(lone), "version"],
        capture_output=True,
        text=True,
        env={**os.environ, "IAC_GUARD_CONFIG": str(exe.parent / "guard.json")},
    )
    assert ran.returncode == 1 and "no configuration beside the guard" in ran.stderr


LAN_ROLE = "arn:aws:iam::123456789012:role/infra-lan-executor"


def _form(rendered: dict[str, Any]) -> UnitRender:
    return UnitRender(rendered, {}, UnitFacts("live/cluster/network", "cluster"))


def _lan_policy() -> Policy:
    return policy_from(
        {
            "executors": {
                "lan": {
                    "runs_on": ["self-hosted"],
                    "aws_role_arn_pattern": "arn:aws:sts::*:assumed-role/infra-lan-executor/*",
                }
            }
        }
    )


def test_only_a_unit_assuming_a_role_it_may_use_and_setting_no_credentials_gets_the_roles(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The guard lets the AWS credentials Terragrunt sets after assuming a role through
    (``identity``) only for a unit that may assume it, whose own env_vars name none."""
    monkeypatch.setenv("IAC_EXECUTOR", "lan")
    policy = _lan_policy()
    executor = execguard._executor(policy)
    assert executor is not None

    def identity(rendered: dict[str, Any], who: Any = executor) -> bool:
        return execguard._identity("live/cluster/network", "cluster", _form(rendered), policy, who)

    assert identity({"iam_role": LAN_ROLE})
    assert not identity({"iam_role": LAN_ROLE}, None)  # not the executor's: not allowed
    assert not identity({})  # no role: Terragrunt sets no credentials
    assert not identity({"iam_role": "arn:aws:iam::123456789012:role/org-admin"})
    assert not identity({"iam_role": "${local.role}"})  # computed
    for env_vars in (
        {"AWS_SECRET_ACCESS_KEY": "x"},
        {"aws_session_token": "x"},
        "${local.e}",  # computed: its names are not known
    ):
        extra = {"terraform": {"extra_arguments": {"x": {"env_vars": env_vars}}}}
        assert not identity({"iam_role": LAN_ROLE, **extra}), env_vars
    other = {"terraform": {"extra_arguments": {"x": {"env_vars": {"TF_VAR_zone": "z"}}}}}
    assert identity({"iam_role": LAN_ROLE, **other})
