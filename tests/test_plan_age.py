"""A plan older than ``[apply] max_plan_age`` is refused at apply, nothing applied."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from infra_fixtures import invoke, read_summary

from tooling.core.apply import age
from tooling.errors import ToolingError
from tooling.model.policy import policy_from

NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        ("90s", timedelta(seconds=90)),
        ("30m", timedelta(minutes=30)),
        ("24h", timedelta(hours=24)),
        ("7d", timedelta(days=7)),
    ],
)
def test_a_duration_is_a_whole_number_and_a_unit(text: str, limit: timedelta) -> None:
    assert policy_from({"apply": {"max_plan_age": text}}).apply.max_plan_age == limit


@pytest.mark.parametrize("text", ["24", "1.5h", "0h", "-1h", "24 hours", "h", "", "1w"])
def test_a_duration_without_a_unit_or_above_zero_is_refused_naming_the_key(text: str) -> None:
    with pytest.raises(ToolingError, match=r"\[apply\] max_plan_age"):
        policy_from({"apply": {"max_plan_age": text}})


def test_the_limit_is_24_hours_when_not_set_and_a_typo_stops_every_task() -> None:
    assert policy_from({}).apply.max_plan_age == timedelta(hours=24)
    with pytest.raises(ToolingError, match="max_plan_ages"):
        policy_from({"apply": {"max_plan_ages": "1h"}})


@pytest.mark.parametrize(
    ("planned_at", "refused"),
    [
        ("2026-12-06T11:00:00Z", None),
        ("2026-12-05T12:00:00Z", None),  # exactly the limit
        ("2026-12-05T11:59:59Z", "1d 1s old, older than the limit of 1d"),
        ("2026-11-01T00:00:00Z", "35d 12h old"),
        (None, "does not say when it was planned"),
        ("yesterday", "is not a time"),
        ("2026-12-07T12:00:00Z", "in the future"),
    ],
)
def test_a_plan_older_than_the_limit_is_refused_naming_its_age_and_the_limit(
    planned_at: str | None, refused: str | None
) -> None:
    why = age.too_old(planned_at, NOW, timedelta(hours=24))
    if refused is None:
        assert why is None
    else:
        assert why is not None and refused in why


@pytest.mark.e2e
def test_an_old_plan_is_refused_by_apply_with_nothing_applied(
    example_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "plans"
    assert (
        invoke(example_repo, "plan", "--unit", "live/cloud/dns", "--out", str(out)).returncode == 0
    )
    summary = read_summary(out)
    assert summary["planned_at"].endswith("Z")
    old = datetime.now(UTC) - timedelta(hours=25)
    summary["planned_at"] = old.strftime("%Y-%m-%dT%H:%M:%SZ")
    (out / "summary.json").write_text(json.dumps(summary))

    ran = invoke(example_repo, "apply", "--plans", str(out))

    assert ran.returncode == 1
    assert "older than the limit of 1d" in ran.stderr and "max_plan_age" in ran.stderr
    assert "nothing applied" in ran.stderr
    assert not (example_repo / ".iac/state/live/cloud/dns/terraform.tfstate").exists()
    assert not (out / "apply.json").exists()
