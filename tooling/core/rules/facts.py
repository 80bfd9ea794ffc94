"""Unit facts of the kind the pipeline acts on: ``gate`` is "auto" or "manual",
``plan_on_pr`` is true or false. Pure.

The model fails closed on either (a gate it cannot read waits for a human, a
``plan_on_pr`` that is not ``true`` plans nothing on pull requests); this rule
says so at the line that holds the typo, once for every unit that inherits it.
"""

from __future__ import annotations

import json
from collections import defaultdict

from tooling.core.rules.rule import Context, Rule, Stage
from tooling.core.rules.snapshot import Violation, fact_site
from tooling.model.units import UNRESOLVED_GATE

RULE_ID = "unit-facts"
GATE_CLASSES = ("auto", "manual")


def check_unit_facts(ctx: Context) -> list[Violation]:
    """A ``gate`` that is not auto or manual, a ``plan_on_pr`` written as something
    other than true or false: one violation per place, naming the units it holds for."""
    model, snap = ctx.model, ctx.snap
    if model is None:
        return []
    sites: dict[tuple[str, int, str, str], list[str]] = defaultdict(list)
    for unit in model.units.values():
        if unit.gate not in GATE_CLASSES:
            file, line, _ = fact_site(unit, "gate", snap)
            what = (
                "cannot be worked out as a string"
                if unit.gate == UNRESOLVED_GATE
                else f'is "{unit.gate}", neither "auto" nor "manual"'
            )
            sites[(file, line, "gate", what)].append(unit.path)
        file, line, expr = fact_site(unit, "plan_on_pr", snap)
        if expr is not None and expr[0] == "lit" and not isinstance(expr[1], bool):
            sites[
                (file, line, "plan_on_pr", f"is {json.dumps(expr[1])}, not true or false")
            ].append(unit.path)
    out: list[Violation] = []
    for (file, line, key, what), units in sorted(sites.items()):
        if key == "gate":
            effect = "their changes wait for a human until it is fixed"
            fix = 'write gate = "auto" or gate = "manual"'
        else:
            effect = "they are not planned on pull requests until it is fixed"
            fix = "write plan_on_pr = true or plan_on_pr = false (no quotes)"
        out.append(
            Violation(
                file,
                line,
                RULE_ID,
                f"{key} {what}, for {', '.join(sorted(units))}: {effect}",
                fix,
            )
        )
    return out


UNIT_FACTS = Rule(
    name="unit-facts",
    ids=(RULE_ID,),
    summary='a unit\'s `gate` is "auto" or "manual", its `plan_on_pr` true or false',
    stages=Stage.CHECK,
    check=check_unit_facts,
)
