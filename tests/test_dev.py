"""``./dev``, the quickstart's entry point, run as a user runs it (a separate process).

These run the real script in this checkout, against its ``.venv`` and the
user's tool cache (warm: the suite itself was started by ``./dev test`` or
after ``./dev setup``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tooling.io import config

REPO = Path(__file__).resolve().parent.parent
DEV = REPO / "dev"
#: the user's cache, before the autouse fixture points IAC_CACHE_DIR at a temporary one
USER_CACHE = config.cache_root()


def dev(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "IAC_CACHE_DIR": str(USER_CACHE)}
    return subprocess.run(
        [str(DEV), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def warm_venv() -> None:
    if not (REPO / ".venv" / "bin" / "invoke").exists():
        pytest.skip("no .venv in this checkout: run ./dev setup first")


def test_dev_help_is_the_header_comment_and_nothing_else() -> None:
    result = dev("--help")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("./dev: set everything up")
    assert "set -euo pipefail" not in result.stdout
    assert not any(line.startswith("#") for line in lines)
    assert lines[-1].startswith("Terragrunt, actionlint and act")


def test_dev_without_a_known_command_prints_usage_and_exits_2() -> None:
    result = dev("frobnicate")
    assert result.returncode == 2
    assert "./dev test [pytest arguments]" in result.stderr


@pytest.mark.e2e
def test_a_warm_dev_setup_prints_at_most_one_line() -> None:
    warm_venv()
    first = dev("setup")
    assert first.returncode == 0, first.stderr
    warm = dev("setup")
    assert warm.returncode == 0, warm.stderr
    lines = warm.stderr.splitlines()
    assert len(lines) <= 1, lines
    assert lines == [] or lines[0].startswith("tools: tofu ")
    assert warm.stdout == ""


# end to end: `./dev plan` sets up first (pip when pyproject.toml changed, then
# `invoke setup`, which builds any pinned tool the cache lacks) before invoke plan runs
@pytest.mark.e2e
def test_dev_plan_passes_a_unit_through_instead_of_adding_all() -> None:
    warm_venv()
    result = dev("plan", "--unit", "live/cloud/dsn")
    # the unit reached `invoke plan` alone: the typo is the error, not `--all` with `--unit`
    assert result.returncode == 2, result.stderr
    assert "no unit at live/cloud/dsn. Did you mean live/cloud/dns?" in result.stderr
    assert "--all" not in result.stderr


def _collected(output: str) -> list[str]:
    return sorted(line for line in output.splitlines() if line.startswith("tests/"))


@pytest.mark.e2e
def test_dev_test_passes_each_argument_with_its_quoting() -> None:
    """`./dev test -k "a and b"` selects what pytest itself selects with the same arguments."""
    warm_venv()
    args = [
        "--collect-only",
        "-q",
        "-n",
        "0",
        "-p",
        "no:cacheprovider",
        "tests/test_toolchain.py",
        "-k",
        "parse and version and not act",
    ]
    direct = subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert direct.returncode == 0, direct.stdout + direct.stderr
    expected = _collected(direct.stdout)
    assert len(expected) > 3  # the expression selects several tests, and not all of them

    through_dev = dev("test", *args)

    assert through_dev.returncode == 0, through_dev.stdout + through_dev.stderr
    assert _collected(through_dev.stdout) == expected
    assert not any("act_version" in test for test in expected)


def test_dev_passes_shellcheck() -> None:
    shellcheck = shutil.which("shellcheck")
    if shellcheck is None:
        pytest.skip("shellcheck is not installed (./dev test installs it with apt-get as root)")
    result = subprocess.run(
        [shellcheck, "--severity=style", str(DEV), str(REPO / ".ci" / "run")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
