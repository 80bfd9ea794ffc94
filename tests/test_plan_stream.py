"""The plan's machine-readable stream (``-json-into``) is read and removed, never left.

OpenTofu writes it beside the human text; its diagnostics are not redacted, so
no copy of it may stay in the report folder (an artifact) or in a unit's working
copy, whether the plan succeeded or failed, on the per-unit and the batch path.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from infra_fixtures import commit_all, git, invoke, read_summary, units_by_path

pytestmark = pytest.mark.e2e

DNS = "live/cloud/dns"


def _streams(*folders: Path) -> list[Path]:
    return sorted(p for folder in folders for p in folder.rglob("*.jsonl"))


def _break_dns(repo: Path) -> None:
    """A zone name the module's validation refuses: OpenTofu itself fails the plan."""
    git(repo, "checkout", "--quiet", "-b", "broken")
    unit = repo / DNS / "terragrunt.hcl"
    unit.write_text(unit.read_text().replace('"example.net"', '"Example.NET."', 1))
    commit_all(repo, "a zone name the module refuses")


@pytest.mark.parametrize("how", ["batch", "per-unit"])
def test_no_stream_is_left_after_a_plan_that_succeeded_or_failed(
    example_repo: Path, tmp_path: Path, how: str
) -> None:
    _break_dns(example_repo)
    out = tmp_path / "out"
    units = ["--all"] if how == "batch" else ["--unit", DNS]
    ran = invoke(example_repo, "plan", *units, "--jobs", "2", "--out", str(out))
    assert ran.returncode == 1, ran.output
    planned = units_by_path(read_summary(out))
    assert planned[DNS]["status"] == "error"
    assert (
        "zone_name" in (planned[DNS]["error"] or "")
        or "zone_name" in (out / "units" / DNS / "plan.log").read_text()
    )
    if how == "batch":  # the other units planned, through the same run
        assert {u["status"] for p, u in planned.items() if p != DNS} <= {
            "changes",
            "no-changes",
            "not-planned",
        }
        assert any(u["status"] == "changes" for u in planned.values())
    assert _streams(out, example_repo / "live") == []
