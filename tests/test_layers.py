"""The layers of ``tooling/`` are enforced by import-linter, and the enforcement can fail.

The contracts live in ``pyproject.toml`` (``[tool.importlinter]``): tasks -> cli ->
commands -> engine -> (io | core) -> model; no command module imports another;
boto3 and botocore only in io, subprocess only in io/proc.py; nothing in core or
model imports a process, socket or HTTP module. The other tests plant one
wrong-way import in a copy of the package and show that the same contracts reject
it, naming the contract and the offending import, while the untouched copy passes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LAYERS = "Layers: tasks -> cli -> commands -> engine -> (io | core) -> model"
INDEPENDENT = "Each command module is an entry point: none imports another"
BOTO = "boto3 and botocore only in tooling.io"
SUBPROCESS = "subprocess only in tooling.io.proc"
CORE_ROOMS = "Core rooms, one way: text at the bottom, CI steps and rules on top"
ENGINE_ROOMS = "Engine rooms: the flows above the rules enforced where tools run"


def _lint_imports(package_parent: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(package_parent)}
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())",
            "--config",
            str(REPO / "pyproject.toml"),
            "--no-cache",
        ],
        cwd=package_parent,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def _copy_package(dest: Path) -> Path:
    shutil.copytree(
        REPO / "tooling",
        dest / "tooling",
        ignore=shutil.ignore_patterns("sandbox_catalog", "__pycache__"),
    )
    return dest


def test_the_layer_contracts_hold_for_the_package() -> None:
    result = _lint_imports(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 7 kept, 0 broken." in result.stdout


def test_a_core_module_importing_a_command_breaks_the_layers(tmp_path: Path) -> None:
    root = _copy_package(tmp_path)
    gates = root / "tooling" / "core" / "plan" / "gates.py"
    gates.write_text(
        gates.read_text() + "\nfrom tooling.commands import plan as _wrong_way  # noqa: E402,F401\n"
    )
    result = _lint_imports(root)
    assert result.returncode == 1
    assert f"{LAYERS} BROKEN" in result.stdout
    assert "tooling.core.plan.gates -> tooling.commands.plan" in result.stdout


def test_a_model_module_starting_a_process_breaks_the_purity_contract(tmp_path: Path) -> None:
    root = _copy_package(tmp_path)
    hcl = root / "tooling" / "model" / "hcl.py"
    hcl.write_text(hcl.read_text() + "\nimport subprocess as _sp  # noqa: E402,F401\n")
    result = _lint_imports(root)
    assert result.returncode == 1
    assert "tooling.model is not allowed to import subprocess" in result.stdout


def test_core_and_io_never_import_each_other(tmp_path: Path) -> None:
    root = _copy_package(tmp_path)
    git = root / "tooling" / "io" / "git.py"
    git.write_text(
        git.read_text()
        + "\nfrom tooling.core.plan import affected as _sibling  # noqa: E402,F401\n"
    )
    result = _lint_imports(root)
    assert result.returncode == 1
    assert "tooling.io.git -> tooling.core.plan.affected" in result.stdout


def _plant(root: Path, module: str, line: str) -> None:
    """Append ``line`` (an import) to ``module``'s file in the copy at ``root``."""
    path = root / Path(*module.split(".")).with_suffix(".py")
    path.write_text(path.read_text() + f"\n{line}  # noqa: E402,F401\n")


def test_the_untouched_copy_keeps_every_contract(tmp_path: Path) -> None:
    result = _lint_imports(_copy_package(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 7 kept, 0 broken." in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract", "named"),
    [
        # a mechanism reaching up to an entry point
        (
            "tooling.engine.rules.before_terragrunt",
            "from tooling.commands import plan as _up",
            LAYERS,
            "tooling.engine.rules.before_terragrunt -> tooling.commands.plan",
        ),
        # an entry point reaching up to the tasks' preamble
        (
            "tooling.commands.listing",
            "from tooling import cli as _up",
            LAYERS,
            "tooling.commands.listing -> tooling.cli",
        ),
        # an edge reaching up to a mechanism
        (
            "tooling.io.terragrunt",
            "from tooling.engine import secrets as _up",
            LAYERS,
            "tooling.io.terragrunt -> tooling.engine.secrets",
        ),
        # one command importing another
        (
            "tooling.commands.drift",
            "from tooling.commands import plan as _sideways",
            INDEPENDENT,
            "tooling.commands.drift -> tooling.commands.plan",
        ),
        # boto3 above the edges
        (
            "tooling.engine.rules.preflight",
            "import boto3 as _boto",
            BOTO,
            "tooling.engine.rules.preflight -> boto3",
        ),
        (
            "tooling.commands.move",
            "from botocore import exceptions as _boto",
            BOTO,
            "tooling.commands.move -> botocore",
        ),
        # a process started beside the one runner, even inside io
        (
            "tooling.io.git",
            "import subprocess as _sp",
            SUBPROCESS,
            "tooling.io.git -> subprocess",
        ),
        # the core's text room reaching up to the plan's
        (
            "tooling.core.text.markdown",
            "from tooling.core.plan import gates as _up",
            CORE_ROOMS,
            "tooling.core.text.markdown -> tooling.core.plan.gates",
        ),
        # two rooms of one floor of the core that stay apart
        (
            "tooling.core.apply.age",
            "from tooling.core.bump import pins as _sideways",
            CORE_ROOMS,
            "tooling.core.apply.age -> tooling.core.bump.pins",
        ),
        # the rules enforced where the tools run reaching up to the plan operation
        (
            "tooling.engine.rules.verify",
            "from tooling.engine.plan import store as _up",
            ENGINE_ROOMS,
            "tooling.engine.rules.verify -> tooling.engine.plan.store",
        ),
    ],
)
def test_each_contract_fails_on_a_wrong_way_import(
    tmp_path: Path, module: str, line: str, contract: str, named: str
) -> None:
    root = _copy_package(tmp_path)
    _plant(root, module, line)
    result = _lint_imports(root)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{contract} BROKEN" in result.stdout
    assert named in result.stdout
