"""The legs benchmark refuses arguments it cannot honour before it builds anything."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--units", "400", "--tiers", "0"],
            "--tiers must be 1 to 2 (the hosted tiers of 400 units)",
        ),
        (
            ["--units", "400", "--tiers", "3"],
            "--tiers must be 1 to 2 (the hosted tiers of 400 units)",
        ),
        (["--legs", "4", "0"], "--legs: each count must be 1 to 256"),
        (["--legs", "257"], "--legs: each count must be 1 to 256"),
        (["--jobs", "0"], "--jobs must be at least 1"),
        (["--legs", "four"], "invalid int value: 'four'"),
    ],
)
def test_a_bad_argument_is_refused_in_one_line_before_any_tree_is_built(
    tmp_path: Path, args: list[str], message: str
) -> None:
    ran = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "bench_legs.py"), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp_path)},
        timeout=60,
    )
    assert ran.returncode == 2
    assert message in ran.stderr
    assert ran.stdout == ""
    assert list(tmp_path.iterdir()) == []  # no tree, no module repositories
