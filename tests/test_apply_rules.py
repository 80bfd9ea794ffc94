"""The pure parts of apply: binding verification and failure classification."""

from __future__ import annotations

from datetime import datetime

import pytest

from tooling.core.apply import record
from tooling.core.apply.decision import binding_problems
from tooling.core.apply.record import change_set
from tooling.core.plan.results import Result
from tooling.core.plan.status import Status
from tooling.io.terragrunt import error_summary


def explain_failure(
    output: str, unit_path: str = "", now: datetime | None = None
) -> tuple[str, str]:
    """The classification an apply makes of its failed run's ``output``."""
    return record.explain_failure(output, unit_path, now, summary=error_summary(output))


UNIT = Result(
    "live/cloud/dns",
    "cloud",
    "hosted",
    "modified",
    Status.CHANGES,
    plan_file="units/live/cloud/dns/plan.tfplan",
    plan_sha256="a" * 64,
)
TOOLS = {"opentofu": "1.12.6", "terragrunt": "1.1.3"}


@pytest.mark.parametrize(
    ("sha", "head", "tools_now", "expected"),
    [
        ("a" * 64, "c1", TOOLS, []),
        ("b" * 64, "c1", TOOLS, ["does not match the reviewed plan"]),
        (None, "c1", TOOLS, ["is missing"]),
        ("a" * 64, "c2", TOOLS, ["the plans were made for commit c1"]),
        (
            "a" * 64,
            "c1",
            {**TOOLS, "terragrunt": "1.1.2"},
            ["terragrunt 1.1.2 now, the plan was made with 1.1.3"],
        ),
        ("b" * 64, "c2", TOOLS, ["does not match", "made for commit"]),
    ],
    ids=["bound", "changed-file", "missing-file", "other-commit", "other-tools", "two-problems"],
)
def test_binding_problems(
    sha: str | None, head: str, tools_now: dict[str, str], expected: list[str]
) -> None:
    problems = binding_problems(
        UNIT, plan_sha256=sha, head=head, summary_head="c1", tools_now=tools_now, tools_then=TOOLS
    )
    assert len(problems) == len(expected)
    for problem, fragment in zip(problems, expected, strict=True):
        assert fragment in problem


LOCKED = """
Error: Error acquiring the state lock

Error message: operation error S3: PutObject, https response error StatusCode: 412
Lock Info:
  ID:        5c4e7a5e-7d83-2f4b-7f55-0d1b2ea1f2b0
  Path:      state/live/cloud/slow/terraform.tfstate
  Operation: OperationTypeApply
  Who:       runner@lan-1
  Version:   1.12.6
  Created:   2026-12-02 16:00:20.156850629 +0000 UTC

OpenTofu acquires a state lock to protect the state from being written
by multiple users at the same time. Please resolve the issue above and try
again. For most commands, you can disable locking with the "-lock=false"
flag, but this is not recommended.
"""


@pytest.mark.parametrize(
    ("output", "result", "fragment"),
    [
        (
            "Error: Saved plan is stale\n\nThe given plan file can no longer be applied",
            "refused",
            "state changed since this plan was made",
        ),
        (LOCKED, "failed", "lock ID 5c4e7a5e-7d83-2f4b-7f55-0d1b2ea1f2b0, held by runner@lan-1"),
        (
            "Error: local-exec provisioner error\n\nexit status 3",
            "failed",
            "local-exec provisioner error",
        ),
        (
            "Error: Saved plan does not match the given state\n\nThe given plan file can not be applied because it "
            "was created from a different state lineage.",
            "refused",
            "not the one this plan was made against",
        ),
    ],
    ids=["stale", "locked", "other", "lineage"],
)
def test_explain_failure(output: str, result: str, fragment: str) -> None:
    got_result, reason = explain_failure(output)
    assert got_result == result
    assert fragment in reason


def test_change_set_compares_addresses_and_actions_not_values() -> None:
    reviewed = [{"address": 'a.b["x"]', "action": "create"}, {"address": "a.c", "action": "update"}]
    again = [{"address": "a.c", "action": "update"}, {"address": 'a.b["x"]', "action": "create"}]
    assert change_set(reviewed) == change_set(again)
    assert change_set(reviewed) != change_set([*again, {"address": "a.d", "action": "create"}])


def test_a_lock_error_names_id_holder_age_and_the_runbooks_command_never_lock_false() -> None:
    from datetime import UTC, datetime

    result, reason = explain_failure(
        LOCKED, "live/cloud/slow", now=datetime(2026, 12, 2, 16, 3, 50, tzinfo=UTC)
    )
    assert result == "failed"
    assert (
        "lock ID 5c4e7a5e-7d83-2f4b-7f55-0d1b2ea1f2b0" in reason
        and "held by runner@lan-1" in reason
    )
    assert "taken 2026-12-02 16:00:20 UTC, 3 min ago" in reason
    assert (
        "cd live/cloud/slow && terragrunt force-unlock -force 5c4e7a5e-7d83-2f4b-7f55-0d1b2ea1f2b0"
        in reason
    )
    assert "-lock=false" not in reason


@pytest.mark.parametrize(
    ("code", "output", "interrupted", "result", "fragment"),
    [
        (0, "Apply complete! Resources: 1 added", False, "applied", ""),
        (0, "Apply complete! Resources: 1 added", True, "applied", "OpenTofu had finished"),
        (
            1,
            "Interrupt received.\nPlease wait for OpenTofu to exit\nError: execution halted",
            True,
            "failed",
            "OpenTofu stopped gracefully",
        ),
        (1, "Error: Saved plan is stale", False, "refused", "state changed"),
    ],
    ids=["applied", "interrupt-too-late", "interrupted", "stale"],
)
def test_the_outcome_is_what_opentofu_did(
    code: int, output: str, interrupted: bool, result: str, fragment: str
) -> None:
    from tooling.engine.apply.applier import outcome

    got, reason = outcome(code, output, interrupted)
    assert got == result and fragment in reason


def test_the_record_is_merged_per_unit_never_dropped() -> None:
    from tooling.core.apply.record import merged_units

    before = {
        "a": {"path": "a", "result": "applied"},
        "b": {"path": "b", "result": "waiting-approval"},
    }
    now = {"b": {"path": "b", "result": "applied"}}
    assert merged_units(["a", "b", "c"], now, before) == [
        {"path": "a", "result": "applied"},
        {"path": "b", "result": "applied"},
    ]
