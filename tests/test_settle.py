"""Table tests for the planners' shared decisions (:mod:`tooling.core.plan.outcomes`) and the
model unit a target is built from (:func:`tooling.core.plan.targets.unit_target`).

No process, no file: each row is plain data in, plain data out.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tooling.core.plan.outcomes import (
    dependency_failed,
    failed_dependency,
    from_plan,
    presets,
    settled,
)
from tooling.core.plan.planjson import COUNT_KEYS, PlanSummary, ResourceChange
from tooling.core.plan.results import Result
from tooling.core.plan.status import Status
from tooling.core.plan.targets import Target, unit_target
from tooling.model.units import Unit


def target(path: str, **kw: object) -> Target:
    return Target(path, "cloud", "hosted", "modified", Path("/r") / path, **kw)  # type: ignore[arg-type]


def result(path: str, status: Status) -> Result:
    return settled(target(path), status)


@pytest.mark.parametrize(
    ("dependencies", "statuses", "expected"),
    [
        ((), {}, None),
        (("a",), {}, None),  # not settled yet: nothing failed
        (("a",), {"a": Status.CHANGES}, None),
        (("a",), {"a": Status.NO_CHANGES}, None),
        (("a",), {"a": Status.ERROR}, "a"),
        (("a",), {"a": Status.NOT_PLANNED}, "a"),
        (("a",), {"a": Status.WITHHELD}, None),  # withheld on a PR: its dependents still plan
        (("a",), {"a": Status.EXCLUDED}, None),
        (("a",), {"a": Status.BLOCKED}, None),
        (("a", "b"), {"a": Status.CHANGES, "b": Status.ERROR}, "b"),
        (("a", "b"), {"a": Status.NOT_PLANNED, "b": Status.ERROR}, "a"),  # the first, in order
        (("b", "a"), {"a": Status.NOT_PLANNED, "b": Status.ERROR}, "b"),
    ],
)
def test_a_failed_dependency_is_the_first_that_errored_or_was_not_planned(
    dependencies: tuple[str, ...], statuses: dict[str, Status], expected: str | None
) -> None:
    results = {p: result(p, s) for p, s in statuses.items()}
    assert failed_dependency(dependencies, results) == expected


@pytest.mark.parametrize("destroy", [False, True])
def test_a_unit_whose_dependency_failed_is_not_planned_and_names_it(destroy: bool) -> None:
    t = target("live/cloud/b", dependencies=("live/cloud/a",), destroy=destroy, source="git::x")
    got = dependency_failed(t, "live/cloud/a")
    assert got.status is Status.NOT_PLANNED
    assert got.error == "not planned: its dependency live/cloud/a failed"
    assert (got.path, got.tier, got.executor, got.change) == (
        "live/cloud/b",
        "cloud",
        "hosted",
        "modified",
    )
    assert got.destroy is destroy
    assert got.source == "git::x"
    assert got.plan_file is None and got.log_file is None


@pytest.mark.parametrize(
    ("preset", "reason", "expected"),
    [
        (None, None, None),
        ("withheld", "plan_on_pr = false", Status.WITHHELD),
        ("blocked", "moved from live/x", Status.BLOCKED),
        ("excluded", "excluded by live/y", Status.EXCLUDED),
        ("error", "not run: a read loop", Status.ERROR),
    ],
)
def test_preset_targets_are_settled_with_their_reason_and_the_others_left_out(
    preset: str | None, reason: str | None, expected: Status | None
) -> None:
    targets = [target("live/cloud/a"), target("live/cloud/b", preset=preset, preset_reason=reason)]
    got = presets(targets)
    if expected is None:
        assert got == []
    else:
        assert [(r.path, r.status, r.error) for r in got] == [("live/cloud/b", expected, reason)]


def test_an_unknown_preset_is_refused_not_reported_as_a_status() -> None:
    with pytest.raises(ValueError, match="fine"):
        presets([target("live/cloud/a", preset="fine")])


def _summary(counts: dict[str, int], outputs: tuple[str, ...] = ()) -> PlanSummary:
    changes = tuple(
        ResourceChange(f"terraform_data.r{i}", "terraform_data", "create")
        for i in range(counts.get("create", 0))
    )
    return PlanSummary({**dict.fromkeys(COUNT_KEYS, 0), **counts}, changes, output_changes=outputs)


@pytest.mark.parametrize(
    ("counts", "outputs", "expected"),
    [
        ({}, (), Status.NO_CHANGES),
        ({"create": 2}, (), Status.CHANGES),
        ({"delete": 1}, (), Status.CHANGES),
        ({"move": 1}, (), Status.CHANGES),
        ({}, ("vm_ids",), Status.CHANGES),  # an output alone is a change
    ],
)
def test_a_read_plan_makes_the_result_changes_or_no_changes_with_its_files(
    counts: dict[str, int], outputs: tuple[str, ...], expected: Status
) -> None:
    base = settled(target("live/cloud/a"), Status.ERROR, log_file="units/live/cloud/a/plan.log")
    summary = _summary(counts, outputs)
    got = from_plan(
        base,
        summary,
        plan_file="units/live/cloud/a/plan.tfplan",
        plan_sha256="0" * 64,
        text_file="units/live/cloud/a/plan.txt",
        plan_text="No changes.\n",
        mocked_dependencies=("live/cloud/up",),
        exit_code=2,
    )
    assert got.status is expected
    assert got.counts == summary.counts and got.summary is summary
    assert got.error is None
    assert got.log_file == "units/live/cloud/a/plan.log"  # kept from the base
    assert (got.plan_file, got.plan_sha256, got.text_file, got.plan_text) == (
        "units/live/cloud/a/plan.tfplan",
        "0" * 64,
        "units/live/cloud/a/plan.txt",
        "No changes.\n",
    )
    assert got.mocked_dependencies == ("live/cloud/up",)
    assert got.exit_code == 2


def test_a_read_plan_without_files_is_only_its_status_and_counts() -> None:
    """The batch planner's progress line, before the plan's text is kept."""
    base = settled(target("live/cloud/a"), Status.ERROR)
    got = from_plan(base, _summary({"update": 1}))
    assert (got.status, got.counts["update"], got.plan_file, got.exit_code) == (
        Status.CHANGES,
        1,
        None,
        None,
    )


def _unit(**kw: object) -> Unit:
    fields: dict[str, object] = {
        "path": "live/cloud/dns",
        "tier": "cloud",
        "executor": "hosted",
        "gate": "auto",
        "plan_on_pr": True,
        "source": "git::https://example.com/m.git//dns?ref=v1.0.0",
        "ref": "v1.0.0",
        "dependencies": ("live/cloud/iam",),
        "reads": (),
        "state_key": None,
        "state_bucket": None,
    }
    fields.update(kw)
    return Unit(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("unit", "change", "extra", "expected"),
    [
        (
            _unit(),
            "all",
            {},
            Target(
                "live/cloud/dns",
                "cloud",
                "hosted",
                "all",
                Path("/r/live/cloud/dns"),
                dependencies=("live/cloud/iam",),
                source="git::https://example.com/m.git//dns?ref=v1.0.0",
            ),
        ),
        (
            _unit(gate="manual", source=None, dependencies=()),
            "cascade",
            {},
            Target(
                "live/cloud/dns",
                "cloud",
                "hosted",
                "cascade",
                Path("/r/live/cloud/dns"),
                gate_class="manual",
            ),
        ),
        (
            _unit(executor="lan", tier="cluster"),
            "modified",
            {
                "upstream": ("live/cloud/iam", "live/cloud/org"),
                "preset": "withheld",
                "preset_reason": "on a PR",
                "model_error": "ambiguous",
            },
            Target(
                "live/cloud/dns",
                "cluster",
                "lan",
                "modified",
                Path("/r/live/cloud/dns"),
                dependencies=("live/cloud/iam",),
                upstream=("live/cloud/iam", "live/cloud/org"),
                preset="withheld",
                preset_reason="on a PR",
                source="git::https://example.com/m.git//dns?ref=v1.0.0",
                model_error="ambiguous",
            ),
        ),
    ],
)
def test_a_target_takes_the_model_units_facts(
    unit: Unit, change: str, extra: dict[str, object], expected: Target
) -> None:
    got = unit_target(unit, change, Path("/r") / unit.path, **extra)  # type: ignore[arg-type]
    assert got == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[{"Name": "/r/live/a", "Result": "succeeded"}]', {"live/a": "succeeded"}),
        (
            '[{"Name": "live/b", "Result": "early exit"}, {"Result": "x"}, 3]',
            {"live/b": "early exit"},
        ),
        ("", {}),  # Terragrunt wrote no report
        ("{not json", {}),
        ('{"Name": "live/a"}', {}),  # not a list
    ],
)
def test_terragrunts_run_report_is_read_by_unit_path(text: str, expected: dict[str, str]) -> None:
    from tooling.core.plan.runlog import run_report

    assert {k: v["Result"] for k, v in run_report(text, "/r").items()} == expected


@pytest.mark.parametrize(
    ("path", "run_dir", "expected"),
    [
        ("live/a", "/r/live/a", "/r"),
        ("live/a", "/r/base-worktree/live/a", "/r/base-worktree"),
        ("live/a", "/r/elsewhere/b", None),  # the run folder does not end with the path
    ],
)
def test_a_units_folder_tree_is_its_run_folder_minus_its_path(
    path: str, run_dir: str, expected: str | None
) -> None:
    from tooling.core.plan.targets import Target, tree_root

    t = Target(path=path, tier="cloud", executor="hosted", change="modified", run_dir=Path(run_dir))
    root = tree_root(t)
    assert (root.as_posix() if root else None) == expected
