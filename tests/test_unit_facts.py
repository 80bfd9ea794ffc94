"""The unit facts the pipeline acts on fail closed: a gate class the model cannot take
for "auto" waits for a human, a plan_on_pr that is not true plans nothing on PRs.

The model is loaded from small trees written here (files only, no tools); the
gate each declared class leads to is decided by the real :func:`gates.decide`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tooling.core.plan.gates import decide
from tooling.core.plan.planjson import PlanSummary, ResourceChange
from tooling.model.policy import GatePolicy
from tooling.model.repo import load
from tooling.model.trees import WorkTree
from tooling.model.units import UNRESOLVED_GATE

ROOT_HCL = "locals {\n  x = 1\n}\n"
UNIT = (
    'include "root" {\n  path = find_in_parent_folders("root.hcl")\n}\n\n'
    'include "tier" {\n  path = find_in_parent_folders("tier.hcl")\n  expose = true\n}\n\n'
    '{own}terraform {\n  source = "git::https://example.com/m.git?ref=v1.0.0"\n}\n'
)


def _unit(tmp_path: Path, tier_locals: str, own_locals: str = "") -> tuple[str, bool]:
    files = {
        "root.hcl": ROOT_HCL,
        "live/cloud/tier.hcl": f'locals {{\n  tier = "cloud"\n{tier_locals}}}\n',
        "live/cloud/dns/terragrunt.hcl": UNIT.replace("{own}", own_locals),
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    unit = load(WorkTree(tmp_path), None).units["live/cloud/dns"]
    assert unit.error is None, unit.error
    return unit.gate, unit.plan_on_pr


def _decision(declared: str) -> str:
    update = PlanSummary(
        changes=(ResourceChange("a.b", "x_thing", "update"),),
        counts={"add": 0, "change": 1, "destroy": 0, "replace": 0},
    )
    return decide(
        status="changes", declared=declared, summary=update, destroy=False, policy=GatePolicy()
    ).decision


@pytest.mark.parametrize(
    ("tier_locals", "own_locals", "gate", "decision"),
    [
        ('  gate = "auto"\n', "", "auto", "auto"),
        ('  gate = "manual"\n', "", "manual", "manual"),
        ("", "", "auto", "auto"),
        ('  gate = "manaul"\n', "", "manaul", "manual"),
        ('  gate = "Auto"\n', "", "Auto", "manual"),
        ("  gate = 1\n", "", UNRESOLVED_GATE, "manual"),
        (
            '  gate = "auto"\n',
            'locals {\n  gate = get_env("DNS_GATE")\n}\n\n',
            UNRESOLVED_GATE,
            "manual",
        ),
        ('  gate = "manual"\n', "locals {\n  gate = local.nope\n}\n\n", UNRESOLVED_GATE, "manual"),
    ],
    ids=[
        "auto",
        "manual",
        "absent-is-auto",
        "typo",
        "wrong-case",
        "not-a-string",
        "own-gate-not-readable-is-not-the-tiers-auto",
        "own-gate-undefined-local",
    ],
)
def test_a_gate_class_other_than_exactly_auto_waits_for_a_human(
    tmp_path: Path, tier_locals: str, own_locals: str, gate: str, decision: str
) -> None:
    declared, _ = _unit(tmp_path, tier_locals, own_locals)
    assert declared == gate
    assert _decision(declared) == decision


@pytest.mark.parametrize(
    ("tier_locals", "planned_on_prs"),
    [
        ("  plan_on_pr = true\n", True),
        ("  plan_on_pr = false\n", False),
        ("", True),
        ('  plan_on_pr = "false"\n', False),
        ('  plan_on_pr = "true"\n', False),
        ("  plan_on_pr = 0\n", False),
        ('  plan_on_pr = get_env("PLAN_ON_PR")\n', False),
    ],
    ids=["true", "false", "absent", "quoted-false", "quoted-true", "number", "not-readable"],
)
def test_plan_on_pr_plans_on_pull_requests_only_when_it_is_true(
    tmp_path: Path, tier_locals: str, planned_on_prs: bool
) -> None:
    _, plan_on_pr = _unit(tmp_path, tier_locals)
    assert plan_on_pr is planned_on_prs
