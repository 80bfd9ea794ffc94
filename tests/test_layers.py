"""The layers of ``tooling/`` are enforced by import-linter, and the enforcement can fail.

The contracts live in ``pyproject.toml`` (``[tool.importlinter]``): commands ->
(io | core) -> model, and nothing in core or model imports a process, socket or
HTTP module. The second test plants a wrong-way import in a copy of the package
and shows that the same contracts reject it, naming the offending chain.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


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
    assert "Contracts: 2 kept, 0 broken." in result.stdout


def test_a_core_module_importing_a_command_breaks_the_layers(tmp_path: Path) -> None:
    root = _copy_package(tmp_path)
    gates = root / "tooling" / "core" / "gates.py"
    gates.write_text(
        gates.read_text() + "\nfrom tooling.commands import plan as _wrong_way  # noqa: E402,F401\n"
    )
    result = _lint_imports(root)
    assert result.returncode == 1
    assert "Layers: commands -> (io | core) -> model BROKEN" in result.stdout
    assert "tooling.core.gates -> tooling.commands.plan" in result.stdout


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
        git.read_text() + "\nfrom tooling.core import changes as _sibling  # noqa: E402,F401\n"
    )
    result = _lint_imports(root)
    assert result.returncode == 1
    assert "tooling.io.git -> tooling.core.changes" in result.stdout
