"""The rules' registry: every rule listed once, each stage a loop over it, the docs its table.

docs/rules.md's "Where each rule is enforced" is the registry's table, every rule id has
its section there and every section a rule, every rule ``invoke check`` runs has a
broken repository in tests/check_corpus/, and a rule reports only the ids it declares.
The recipe of docs/rules.md ("Adding a rule") is followed on a copy of the package: one
module, one registry line, and ``invoke check`` reports the new rule while the plan
refuses it before Terragrunt starts.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from infra_fixtures import REPO
from test_check import CASES, CORPUS, apply_case, base_tree

from tooling.commands import check
from tooling.core.rules import execpoint
from tooling.core.rules.registry import RULES, docs_table, ids_at, run
from tooling.core.rules.rule import Context, Rule, Stage
from tooling.core.rules.snapshot import Snapshot, Violation

RULES_MD = REPO / "docs" / "rules.md"
TABLE_START = "<!-- the registry's table: tooling.core.rules.registry.docs_table() -->"
TABLE_END = "<!-- end of the registry's table -->"
#: enforced by the guard before each OpenTofu command, not by a loop over the registry
#: (docs/rules.md, "The point of execution" and "The working copy")
OUTSIDE_THE_REGISTRY = {"working-copy", *execpoint.RULES}


def _documented_ids() -> set[str]:
    """The rule ids docs/rules.md gives a section (a ``####`` heading naming one)."""
    found: set[str] = set()
    for heading in re.findall(r"^#### (.+)$", RULES_MD.read_text(), re.M):
        found.update(re.findall(r"`([a-z]+(?:-[a-z]+)+)`", heading))
    return found


def _corpus_ids() -> set[str]:
    return {
        e["rule"]
        for case in CASES
        for e in tomllib.loads((CORPUS / case / "case.toml").read_text()).get("expect", [])
    }


def test_the_docs_table_of_where_each_rule_is_enforced_is_the_registrys() -> None:
    text = RULES_MD.read_text()
    assert TABLE_START in text and TABLE_END in text
    shown = text.split(TABLE_START, 1)[1].split(TABLE_END, 1)[0].strip()
    assert shown == docs_table().strip(), (
        "docs/rules.md's table differs from the registry's; paste this between the markers:\n\n"
        + docs_table()
    )


def test_every_registered_rule_id_has_a_docs_section_and_every_section_names_a_rule() -> None:
    registered = {i for rule in RULES for i in rule.ids}
    documented = _documented_ids()
    assert registered - documented == set(), "registered, without a section in docs/rules.md"
    assert documented - registered - OUTSIDE_THE_REGISTRY == set(), "documented, not registered"


def test_each_rule_is_listed_once_with_its_ids_and_where_it_runs() -> None:
    names = [rule.name for rule in RULES]
    assert len(names) == len(set(names))
    assert len({id(rule) for rule in RULES}) == len(RULES)
    for rule in RULES:
        assert rule.ids and rule.summary and rule.stages, rule.name
        assert all(re.fullmatch(r"[a-z]+(?:-[a-z]+)+", i) for i in rule.ids), rule.name


def test_every_rule_invoke_check_runs_has_a_broken_repository_in_the_corpus() -> None:
    assert ids_at(Stage.CHECK) == _corpus_ids()
    # what runs only where OpenTofu runs has its table tests instead (test_enforce_rules.py)
    assert {i for r in RULES for i in r.ids} - ids_at(Stage.CHECK) == {"enforce-hooks"}


@pytest.mark.parametrize("case", CASES)
def test_a_rule_reports_only_the_ids_it_declares(tmp_path: Path, case: str) -> None:
    tree = base_tree(tmp_path / "infra")
    apply_case(tree, case)
    ctx = check.context(tree)
    for rule in RULES:
        if Stage.CHECK in rule.stages:
            assert {v.rule for v in rule.check(ctx)} <= set(rule.ids), rule.name


# --------------------------------------------------------------------------- a rule added


def _no_todo(ctx: Context) -> list[Violation]:
    return [
        Violation(path, number, "no-todo", "a TODO is left in the configuration", "do it")
        for path in ctx.hcl_files
        for number, line in enumerate(ctx.snap.text(path).splitlines(), 1)
        if "TODO" in line
    ]


NO_TODO = Rule(
    name="no-todo",
    ids=("no-todo",),
    summary="no TODO left in Terragrunt configuration",
    stages=Stage.CHECK | Stage.BEFORE_TERRAGRUNT,
    check=_no_todo,
)


def test_a_rule_given_to_the_registry_api_runs_at_its_stages_only(tmp_path: Path) -> None:
    snap = Snapshot.of({"live/a/terragrunt.hcl": "locals {}\n# TODO: pin\n"})
    ctx = Context(snap=snap, hcl_files=("live/a/terragrunt.hcl",))
    expected = [
        Violation("live/a/terragrunt.hcl", 2, "no-todo", NO_TODO.check(ctx)[0].message, "do it")
    ]
    assert run(Stage.CHECK, ctx, (NO_TODO,)) == expected
    assert run(Stage.BEFORE_TERRAGRUNT, ctx, (NO_TODO,)) == expected
    assert run(Stage.AT_EXECUTION, ctx, (NO_TODO,)) == []
    assert "no-todo" not in {v.rule for v in run(Stage.CHECK, ctx)}  # not registered: not run
    assert "| `no-todo` | no TODO left in Terragrunt configuration | yes | yes | no |  |" in (
        docs_table((*RULES, NO_TODO))
    )
    # check's own loop takes it, on a real tree
    tree = base_tree(tmp_path / "infra")
    unit = tree / "live" / "cloud" / "dns" / "terragrunt.hcl"
    unit.write_text(unit.read_text() + "# TODO: pin the zone's TTL\n")
    lines = len(unit.read_text().splitlines())
    found, _model = check.run(tree, rules=(*RULES, NO_TODO))
    assert [(v.file, v.line, v.rule) for v in found] == [
        ("live/cloud/dns/terragrunt.hcl", lines, "no-todo")
    ]
    assert check.run(tree)[0] == []


TOY_MODULE = '''"""A rule added by the recipe of docs/rules.md, "Adding a rule"."""

from __future__ import annotations

from tooling.core.rules.rule import Context, Rule, Stage
from tooling.core.rules.snapshot import Violation


def check_no_todo(ctx: Context) -> list[Violation]:
    """No TODO left in Terragrunt configuration."""
    out = []
    for path in ctx.hcl_files:
        for number, line in enumerate(ctx.snap.text(path).splitlines(), 1):
            if "TODO" in line:
                out.append(
                    Violation(path, number, "no-todo", "a TODO is left in the configuration",
                              "do it, or open an issue and drop the comment")
                )
    return out


NO_TODO = Rule(
    name="no-todo",
    ids=("no-todo",),
    summary="no TODO left in Terragrunt configuration",
    stages=Stage.CHECK | Stage.BEFORE_TERRAGRUNT,
    check=check_no_todo,
)
'''

#: the plan's refusal before Terragrunt, for every unit of the tree (as ``invoke doctor``
#: lists it), from the copy of the package
_REFUSED = """
import sys
from pathlib import Path

from tooling.commands.check import context
from tooling.model.policy import CheckPolicy
from tooling.engine.rules.before_terragrunt import refused_lines

root = Path(sys.argv[1])
model = context(root).model
print("\\n".join(refused_lines(root, model, list(model.units), CheckPolicy())))
"""


def test_a_rule_added_by_the_recipe_is_reported_by_check_and_refused_before_terragrunt(
    tmp_path: Path,
) -> None:
    package = tmp_path / "copy"
    shutil.copytree(
        REPO / "tooling", package / "tooling", ignore=shutil.ignore_patterns("__pycache__")
    )
    rules_dir = package / "tooling" / "core" / "rules"
    # 1. the module
    (rules_dir / "no_todo.py").write_text(TOY_MODULE)
    # 2. the registry: the module imported, its rule in RULES
    registry = rules_dir / "registry.py"
    text = registry.read_text()
    head = "RULES: tuple[Rule, ...] = (\n"
    assert head in text and "from tooling.core.rules import (\n" in text
    text = text.replace(
        "from tooling.core.rules import (\n", "from tooling.core.rules import (\n    no_todo,\n"
    )
    registry.write_text(text.replace(head, head + "    no_todo.NO_TODO,\n"))

    tree = base_tree(tmp_path / "infra")
    unit = tree / "live" / "cloud" / "dns" / "terragrunt.hcl"
    env = {**os.environ, "PYTHONPATH": str(package)}

    def run_copy(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, *args],
            cwd=package,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )

    clean = run_copy("-m", "tooling.check", "--json", str(tree))
    assert clean.returncode == 0, clean.stderr
    unit.write_text(unit.read_text() + "# TODO: pin the zone's TTL\n")
    line = len(unit.read_text().splitlines())
    ran = run_copy("-m", "tooling.check", "--json", str(tree))
    assert ran.returncode == 1, ran.stderr
    assert json.loads(ran.stdout)["violations"] == [
        {
            "file": "live/cloud/dns/terragrunt.hcl",
            "line": line,
            "rule": "no-todo",
            "message": "a TODO is left in the configuration",
            "fix": "do it, or open an issue and drop the comment",
        }
    ]
    assert "check: 1 violation(s) of 1 rule(s) (no-todo)" in ran.stderr
    refused = run_copy("-c", _REFUSED, str(tree))
    assert refused.returncode == 0, refused.stderr
    assert refused.stdout.splitlines() == [
        f"live/cloud/dns/terragrunt.hcl:{line}: no-todo: a TODO is left in the configuration. "
        "Fix: do it, or open an issue and drop the comment"
    ]
    # the code under test is the copy's: this package's check knows no such rule
    assert check.run(tree)[0] == []
