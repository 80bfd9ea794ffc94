"""Forget, import and move as data: counted, warned, gated, compared. Pure tables.

The plans below are ``tofu show -json`` as the pinned OpenTofu (1.12.6) writes
them (``resource_changes`` entries cut to the keys the pipeline reads); the end
to end tests with the real tools are in ``tests/test_state_actions_e2e.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from schema_check import check

from tooling.core.apply.approval import differences, reviewed_differences
from tooling.core.plan.gates import decide
from tooling.core.plan.planjson import COUNT_KEYS, PlanSummary, from_stream, summarize
from tooling.core.plan.results import Result, with_gates
from tooling.core.report import comment, review
from tooling.core.report import drift as drift_report
from tooling.errors import ToolingError
from tooling.model.policy import GatePolicy, policy_from

REPO = Path(__file__).resolve().parent.parent
NODES = GatePolicy(node_addresses=("terraform_data.vm[*",))
ALL_AUTO = GatePolicy(
    node_addresses=("terraform_data.vm[*",), auto_state_actions=("forget", "import", "move")
)


def rc(
    address: str,
    actions: list[str],
    *,
    reason: str | None = None,
    importing: dict[str, str] | None = None,
    previous: str | None = None,
) -> dict[str, Any]:
    """One ``resource_changes`` entry of ``tofu show -json``."""
    name = address.split(".")[-1].split("[")[0]
    change: dict[str, Any] = {
        "actions": actions,
        "before": {"id": "1", "input": "a"},
        "after": None if actions == ["forget"] else {"id": "1", "input": "a"},
        "after_unknown": {},
    }
    if importing is not None:
        change["importing"] = importing
    out: dict[str, Any] = {
        "address": address,
        "mode": "managed",
        "type": "terraform_data",
        "name": name,
        "change": change,
    }
    if reason:
        out["action_reason"] = reason
    if previous:
        out["previous_address"] = previous
    return out


#: ``removed { from = terraform_data.record  lifecycle { destroy = false } }``
FORGET_PLAN = {
    "resource_changes": [
        rc("terraform_data.zone", ["no-op"]),
        rc('terraform_data.record["api"]', ["forget"], reason="delete_because_no_resource_config"),
        rc('terraform_data.record["www"]', ["forget"], reason="delete_because_no_resource_config"),
    ]
}
#: ``lifecycle { destroy = false }`` and a changed ``triggers_replace``
FORGET_CREATE_PLAN = {
    "resource_changes": [
        rc("terraform_data.cert", ["forget", "create"], reason="replace_because_cannot_update")
    ]
}
IMPORT_PLAN = {
    "resource_changes": [rc("terraform_data.adopted", ["no-op"], importing={"id": "legacy"})]
}
MOVE_PLAN = {
    "resource_changes": [rc("terraform_data.apex", ["no-op"], previous="terraform_data.zone")]
}


def result(plan: dict[str, Any], path: str = "live/cloud/records", **kw: Any) -> Result:
    summary = summarize(plan)
    return Result(
        path,
        "cloud",
        "hosted",
        "modified",
        "changes" if summary.has_changes else "no-changes",
        counts=summary.counts,
        summary=summary,
        **kw,
    )


def gate_of(plan: dict[str, Any], policy: GatePolicy = NODES, declared: str = "auto") -> Any:
    summary = summarize(plan)
    return decide(
        status="changes" if summary.has_changes else "no-changes",
        declared=declared,
        summary=summary,
        destroy=False,
        policy=policy,
    )


# --------------------------------------------------------------------------- counts


@pytest.mark.parametrize(
    ("plan", "counted"),
    [
        pytest.param(FORGET_PLAN, {"forget": 2}, id="forget"),
        pytest.param(FORGET_CREATE_PLAN, {"create": 1, "forget": 1}, id="forget+create"),
        pytest.param(IMPORT_PLAN, {"import": 1}, id="import"),
        pytest.param(MOVE_PLAN, {"move": 1}, id="move"),
    ],
)
def test_every_state_action_is_counted_and_a_plan_only_of_them_has_changes(
    plan: dict[str, Any], counted: dict[str, int]
) -> None:
    summary = summarize(plan)
    assert summary.counts == {**dict.fromkeys(COUNT_KEYS, 0), **counted}
    assert summary.has_changes
    assert result(plan).status == "changes"


def test_the_machine_readable_stream_of_a_forget_never_stands_for_an_empty_plan() -> None:
    """As the pinned OpenTofu prints a forget-only plan (``plan -json``): the planned
    change and a ``change_summary`` of zeros but ``forget``."""
    summary_line = {
        "type": "change_summary",
        "changes": {
            "add": 0,
            "change": 0,
            "import": 0,
            "remove": 0,
            "forget": 2,
            "operation": "plan",
        },
    }
    planned = {
        "type": "planned_change",
        "change": {"resource": {"addr": 'terraform_data.record["api"]'}, "action": "remove"},
    }
    assert from_stream(json.dumps(summary_line)) is None
    assert (
        from_stream(
            json.dumps(planned)
            + "\n"
            + json.dumps({**summary_line, "changes": {**summary_line["changes"], "forget": 0}})
        )
        is None
    )


def test_a_forget_keeps_its_action_and_the_replacement_that_forgets_is_named_so() -> None:
    assert [(c.address, c.action) for c in summarize(FORGET_PLAN).changes] == [
        ('terraform_data.record["api"]', "forget"),
        ('terraform_data.record["www"]', "forget"),
    ]
    (cert,) = summarize(FORGET_CREATE_PLAN).changes
    assert cert.action == "forget+create" and cert.forgets


def test_an_action_the_pipeline_does_not_know_is_a_change_that_waits_for_a_human() -> None:
    plan = {"resource_changes": [rc("terraform_data.x", ["vanish"])]}
    summary = summarize(plan)
    assert summary.has_changes and summary.counts == dict.fromkeys(COUNT_KEYS, 0)
    gate = gate_of(plan, ALL_AUTO)
    assert gate.decision == "manual"
    assert gate.reasons == ("an action the pipeline does not know: vanish terraform_data.x",)


# --------------------------------------------------------------------------- gates


@pytest.mark.parametrize(
    ("plan", "policy", "decision", "reason"),
    [
        pytest.param(
            FORGET_PLAN,
            NODES,
            "manual",
            'forgets 2 resources: terraform_data.record["api"], terraform_data.record["www"] '
            "(left in place, no longer managed by OpenTofu)",
            id="forget-manual-by-default",
        ),
        pytest.param(
            IMPORT_PLAN,
            NODES,
            "manual",
            "imports terraform_data.adopted (brought under this unit's management)",
            id="import-manual-by-default",
        ),
        pytest.param(
            FORGET_CREATE_PLAN,
            NODES,
            "manual",
            "forgets terraform_data.cert (left in place, no longer managed by OpenTofu)",
            id="forget+create-manual",
        ),
        pytest.param(
            MOVE_PLAN,
            NODES,
            "auto",
            "no delete, no replace, no node/VM change; moves terraform_data.zone -> "
            "terraform_data.apex ([gates] auto_state_actions); the unit's gate class is auto",
            id="move-auto-by-default-and-said",
        ),
        pytest.param(
            MOVE_PLAN,
            GatePolicy(auto_state_actions=()),
            "manual",
            "moves terraform_data.zone -> terraform_data.apex (a new address in the state)",
            id="move-manual-when-policy-says-so",
        ),
        pytest.param(
            FORGET_PLAN,
            ALL_AUTO,
            "auto",
            'no delete, no replace, no node/VM change; forgets 2 resources: terraform_data.record["api"], '
            'terraform_data.record["www"] ([gates] auto_state_actions); the unit\'s gate class is auto',
            id="forget-auto-when-policy-lists-it",
        ),
    ],
)
def test_state_actions_decide_the_gate_by_policy(
    plan: dict[str, Any], policy: GatePolicy, decision: str, reason: str
) -> None:
    gate = gate_of(plan, policy)
    assert (gate.decision, gate.reasons) == (decision, (reason,))


@pytest.mark.parametrize(
    "plan",
    [
        pytest.param(
            {"resource_changes": [rc('terraform_data.vm["node-1"]', ["forget"])]}, id="forget"
        ),
        pytest.param(
            {
                "resource_changes": [
                    rc('terraform_data.vm["node-1"]', ["no-op"], importing={"id": "101"})
                ]
            },
            id="import",
        ),
        pytest.param(
            {
                "resource_changes": [
                    rc(
                        'terraform_data.node["node-1"]',
                        ["no-op"],
                        previous='terraform_data.vm["node-1"]',
                    )
                ]
            },
            id="move-away-from-a-vm-address",
        ),
        pytest.param(
            {"resource_changes": [rc('terraform_data.vm["node-1"]', ["forget", "create"])]},
            id="forget+create",
        ),
    ],
)
def test_a_node_forgotten_imported_or_moved_is_manual_even_when_policy_lets_them_apply_alone(
    plan: dict[str, Any],
) -> None:
    gate = gate_of(plan, ALL_AUTO)
    assert gate.decision == "manual"
    assert any(r.startswith("touches a node/VM: ") for r in gate.reasons), gate.reasons


def test_a_unit_declared_manual_stays_manual_with_a_move_only() -> None:
    assert gate_of(MOVE_PLAN, NODES, declared="manual").decision == "manual"


def parse_policy(document: dict[str, Any]) -> GatePolicy:
    """``[gates]`` as the one policy parser reads it."""
    return policy_from(document).gates


def test_auto_state_actions_defaults_to_move_and_refuses_anything_else_by_name() -> None:
    assert parse_policy({}).auto_state_actions == ("move",)
    assert parse_policy({"gates": {"auto_state_actions": []}}).auto_state_actions == ()
    assert parse_policy(
        {"gates": {"auto_state_actions": ["import", "forget", "import"]}}
    ).auto_state_actions == ("import", "forget")
    for wrong in (["froget"], "forget", ["delete"], [1]):
        with pytest.raises(ToolingError, match=r"\[gates\] auto_state_actions must be a list of"):
            parse_policy({"gates": {"auto_state_actions": wrong}})


def test_the_repositorys_policy_toml_keeps_the_default() -> None:
    import tomllib

    policy = tomllib.loads((REPO / "policy.toml").read_text(encoding="utf-8"))
    assert parse_policy(policy).auto_state_actions == ("move",)


# --------------------------------------------------------------------------- the report


def test_the_totals_line_counts_forgets_imports_and_moves_and_a_forget_is_not_no_changes() -> None:
    only_forgets = with_gates([result(FORGET_PLAN)], NODES)
    assert review.totals_line(only_forgets) == (
        "0 to add, 0 to change, 0 to replace, 0 to destroy, 2 to forget"
    )
    assert comment.verdict(only_forgets).startswith(
        "⚠️ **Plan: 0 to add, 0 to change, 0 to replace, 0 to destroy, 2 to forget** · "
        "1 unit(s) planned, 1 with changes"
    )
    every = with_gates(
        [
            result(FORGET_PLAN, "live/cloud/a"),
            result(IMPORT_PLAN, "live/cloud/b"),
            result(MOVE_PLAN, "live/cloud/c"),
            result(FORGET_CREATE_PLAN, "live/cloud/d"),
        ],
        NODES,
    )
    assert review.totals_line(every) == (
        "1 to add, 0 to change, 0 to replace, 0 to destroy, 3 to forget, 1 to import, 1 to move"
    )
    # a run without any keeps its words, and its sign
    plain = {"resource_changes": [rc("terraform_data.zone", ["update"])]}
    assert comment.verdict(with_gates([result(plain)], NODES)).startswith(
        "✅ **Plan: 0 to add, 1 to change, 0 to replace, 0 to destroy** · "
    )


def test_the_warning_block_lists_every_forget_import_and_move_by_unit() -> None:
    results = with_gates(
        [
            result(FORGET_PLAN, "live/cloud/a"),
            result(IMPORT_PLAN, "live/cloud/b"),
            result(MOVE_PLAN, "live/cloud/c"),
            result(FORGET_CREATE_PLAN, "live/cloud/d"),
        ],
        NODES,
    )
    assert review.warnings(results) == [
        "- 📤 **forget** (left in place, no longer managed by OpenTofu) in `live/cloud/a` (2): "
        '`terraform_data.record["api"]`, `terraform_data.record["www"]`. '
        "Why: the resource was removed from the configuration",
        "- 📥 **import** (brought under this unit's management) in `live/cloud/b` (1): "
        "`terraform_data.adopted`",
        "- 🚚 **move** (a new address in the state) in `live/cloud/c` (1): "
        "`terraform_data.zone` → `terraform_data.apex`",
        "- ♻️ **replace, the old one forgotten** (left in place, no longer managed) in "
        "`live/cloud/d` (1): `terraform_data.cert`. Why: an attribute that cannot be updated "
        "in place changed",
    ]
    page = comment.render(results)
    assert "> **Destroys, replacements, and what OpenTofu forgets, imports or moves:**" in page
    assert "| forget, import, move |" in page
    row = next(line for line in page.splitlines() if line.startswith("| `live/cloud/a`"))
    assert "| 2 forget |" in row and "manual: forgets 2 resources" in row
    terminal = comment.table(results)
    assert "forget/import/move" in terminal.splitlines()[0]
    assert "1 create" not in terminal and "1 forget" in terminal


def test_a_run_without_state_actions_has_no_state_column() -> None:
    plain = {"resource_changes": [rc("terraform_data.zone", ["update"])]}
    results = with_gates([result(plain)], NODES)
    assert "forget" not in comment.table_md(results) and "forget" not in comment.table(results)


# --------------------------------------------------------------------------- summary.json


def test_summary_json_keeps_imports_and_moves_and_reads_them_back() -> None:
    results = with_gates(
        [
            result(FORGET_PLAN, "live/cloud/a"),
            result(IMPORT_PLAN, "live/cloud/b"),
            result(MOVE_PLAN, "live/cloud/c"),
        ],
        NODES,
    )
    units = [r.to_json() for r in results]
    check(
        "summary",
        {
            "version": 1,
            "base": None,
            "head": "a" * 40,
            "executor": None,
            "tools": {},
            "units": units,
        },
        "the documents of this test",
    )
    assert units[0]["counts"]["forget"] == 2
    assert units[1]["changes"] == [
        {
            "address": "terraform_data.adopted",
            "action": "no-op",
            "importing": True,
            "previous_address": None,
        }
    ]
    assert units[2]["changes"][0]["previous_address"] == "terraform_data.zone"
    back = [Result.from_json(json.loads(json.dumps(u))) for u in units]
    # the report made from summary.json (the legs' merged comment) warns of the same
    # resources (summary.json keeps no reason: the "Why" stays in the leg's own report)
    assert review.warnings(back) == [w.split(". Why: ")[0] for w in review.warnings(results)]


# --------------------------------------------------------------------------- drift and approval


def test_drift_reports_a_forget_in_words_in_its_table_and_issue() -> None:
    verdict = drift_report.classify(result(FORGET_PLAN))
    assert verdict.drifted and verdict.counts["forget"] == 2
    assert verdict.changes == (
        ('terraform_data.record["api"]', "forget"),
        ('terraform_data.record["www"]', "forget"),
    )
    md = drift_report.render_markdown(
        {"executor": None, "head": "a" * 40, "checked_at": "now"}, [verdict]
    )
    row = next(line for line in md.splitlines() if "`live/cloud/records`" in line)
    assert '| 2 to forget: `terraform_data.record["api"]`' in row
    merged = drift_report.merge(
        {}, [verdict], order=["live/cloud/records"], head="a" * 40, today="d", run_url=None
    )
    assert "- `live/cloud/records`: 2 to forget: `terraform_data.record" in drift_report.issue_body(
        merged.entries
    )


def test_a_forget_one_plan_has_and_the_other_not_is_a_difference() -> None:
    forget = summarize(FORGET_PLAN)
    delete = summarize(
        {
            "resource_changes": [
                rc('terraform_data.record["api"]', ["delete"]),
                rc('terraform_data.record["www"]', ["forget"]),
            ]
        }
    )
    empty = PlanSummary(dict.fromkeys(COUNT_KEYS, 0))
    assert differences(empty, forget) == [
        'terraform_data.record["api"]: forget, not in the approved plan',
        'terraform_data.record["www"]: forget, not in the approved plan',
    ]
    assert differences(forget, delete) == [
        'terraform_data.record["api"]: delete instead of forget in the approved plan'
    ]
    assert reviewed_differences(forget, empty) == [
        'terraform_data.record["api"]: forget in the reviewed plan, not in the plan',
        'terraform_data.record["www"]: forget in the reviewed plan, not in the plan',
    ]
    assert differences(forget, summarize(FORGET_PLAN)) == []
