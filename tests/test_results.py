"""Table tests for :class:`tooling.core.plan.results.Result` read back from summary.json
(:meth:`Result.from_json`, the inverse of :meth:`Result.to_json`) and the plan statuses
(:class:`tooling.core.plan.status.Status`).

The round trip on real documents: here the example of docs/commands.md; in
``tests/test_schemas.py`` the summary.json a real ``invoke plan`` wrote.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tooling.core.plan.gates import Gate
from tooling.core.plan.planjson import COUNT_KEYS, PlanSummary, ResourceChange
from tooling.core.plan.results import Result
from tooling.core.plan.status import Status

REPO = Path(__file__).resolve().parent.parent
SCHEMA_STATUSES = json.loads((REPO / "tooling/schemas/summary.schema.json").read_text())[
    "properties"
]["units"]["items"]["properties"]["status"]["enum"]


def _documented_summary() -> dict[str, Any]:
    """The summary.json example of docs/commands.md."""
    text = (REPO / "docs" / "commands.md").read_text(encoding="utf-8")
    found = re.search(r"`summary.json`:\n\n```json\n(.*?)\n```", text, re.S)
    assert found, "docs/commands.md: no summary.json example"
    doc: dict[str, Any] = json.loads(found.group(1))
    return doc


def test_the_statuses_are_the_schemas() -> None:
    assert sorted(s.value for s in Status) == sorted(SCHEMA_STATUSES)
    assert {s for s in Status if s.planned} == {Status.CHANGES, Status.NO_CHANGES}


def test_the_documented_unit_reads_back_to_the_same_document() -> None:
    units = _documented_summary()["units"]
    assert units
    for unit in units:
        read = Result.from_json(unit)
        assert read.status is Status(unit["status"])
        written = read.to_json()
        # what the example leaves out is written with its default
        assert {k: written[k] for k in unit} == unit
        assert {k: written[k] for k in written.keys() - unit.keys()} == {
            "seconds": 0.0,
            "source_before": None,
        }


def _full(status: Status, **kw: Any) -> Result:
    counts = {**dict.fromkeys(COUNT_KEYS, 0), "create": 1, "replace": 2}
    summary = (
        PlanSummary(
            counts,
            (
                ResourceChange('module.vm.terraform_data.vm["a"]', "terraform_data", "create"),
                ResourceChange("null_resource.x", "null_resource", "replace"),
            ),
            output_changes=("vm_ids",),
        )
        if status.planned
        else None
    )
    fields: dict[str, Any] = {
        "counts": counts if status.planned else dict.fromkeys(COUNT_KEYS, 0),
        "plan_file": "units/live/a/plan.tfplan" if status.planned else None,
        "plan_sha256": "a" * 64 if status.planned else None,
        "summary": summary,
        "text_file": "units/live/a/plan.txt" if status.planned else None,
        "log_file": "units/live/a/plan.log",
        "seconds": 1.25,
        "source": "git::https://example.com/m.git//vm?ref=v1.1.0",
        "source_before": "git::https://example.com/m.git//vm?ref=v1.0.0",
        "mocked_dependencies": ("live/up",),
        "gate": Gate("manual", ("touches 3 VMs",)),
        **kw,
    }
    return Result("live/a", "cluster", "lan", "modified", status, **fields)


@pytest.mark.parametrize(
    "result",
    [
        *(_full(s) for s in Status),
        _full(Status.ERROR, error="boom\nsecond line", model_error="ambiguous source"),
        _full(Status.CHANGES, destroy=True, gate=None),
        _full(
            Status.NO_CHANGES,
            counts=dict.fromkeys(COUNT_KEYS, 0),
            summary=PlanSummary(dict.fromkeys(COUNT_KEYS, 0)),
        ),
        Result("live/b", "cloud", "hosted", "all", Status.NOT_PLANNED),
    ],
    ids=lambda r: f"{r.status}-{r.gate is not None}-{r.destroy}",
)
def test_a_result_reads_back_from_its_json(result: Result) -> None:
    doc = json.loads(json.dumps(result.to_json()))  # as summary.json holds it
    read = Result.from_json(doc)
    assert read.to_json() == doc
    assert read.status is result.status
    assert read.gate == result.gate
    assert read.mocked_dependencies == result.mocked_dependencies
    if result.summary is not None:
        assert read.summary is not None
        assert read.summary.counts == result.summary.counts
        assert read.summary.has_changes == result.summary.has_changes
        assert [(c.address, c.type, c.action) for c in read.summary.changes] == [
            (c.address, c.type, c.action) for c in result.summary.changes
        ]
        assert read.summary.output_changes == result.summary.output_changes
    else:
        assert read.summary is None


def _unit() -> dict[str, Any]:
    return json.loads(json.dumps(_full(Status.CHANGES).to_json()))  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("break_it", "message"),
    [
        (lambda u: u.pop("path"), "path: expected a string"),
        (lambda u: u.update(status="fine"), "'fine' is not a valid Status"),
        (lambda u: u.update(status=None), "status: expected a string"),
        (lambda u: u["counts"].pop("create"), "counts: expected"),
        (lambda u: u["counts"].update(update="1"), "counts: expected"),
        (lambda u: u.update(counts=[]), "counts: expected"),
        (lambda u: u.update(plan_file=3), "plan_file: expected a string or null"),
        (lambda u: u.update(changes={}), "changes: expected a list"),
        (lambda u: u["changes"][0].pop("action"), "action: expected a string"),
        (lambda u: u.update(mocked_dependencies="live/up"), "mocked_dependencies: expected a list"),
        (lambda u: u["gate"].pop("decision"), "decision: expected a string"),
    ],
)
def test_a_unit_that_is_not_one_is_refused_by_key(break_it: Any, message: str) -> None:
    unit = _unit()
    break_it(unit)
    with pytest.raises(ValueError, match=re.escape(message)):
        Result.from_json(unit)
