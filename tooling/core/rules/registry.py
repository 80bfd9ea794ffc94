"""Every rule, listed once, and the one loop each stage runs over them. Pure.

``invoke check`` runs :data:`RULES` at :attr:`Stage.CHECK`
(:mod:`tooling.commands.check`), ``invoke plan``, ``drift`` and ``adopt`` at
:attr:`Stage.BEFORE_TERRAGRUNT` (:mod:`tooling.engine.rules.before_terragrunt`), and the verifier
before OpenTofu plans or applies a unit at :attr:`Stage.AT_EXECUTION`
(:mod:`tooling.engine.rules.verify`); docs/rules.md's table "Where each rule is enforced"
is :func:`docs_table`. Adding a rule: a :class:`Rule` in its module, one line here,
its section in docs/rules.md and a broken repository in ``tests/check_corpus/``
(docs/rules.md, "Adding a rule").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from tooling.core.rules import (
    bootstrap,
    closure,
    config_only,
    enforce,
    envvars,
    facts,
    layers,
    passing,
    pins,
    readable,
    review_gaps,
    secretreads,
    state,
    tool_pins,
)
from tooling.core.rules.parsed import ParseClosure, parse_closure
from tooling.core.rules.rule import Context, Rule, Stage, UnitFacts, UnitRender
from tooling.core.rules.snapshot import AppWorkspace, Snapshot, Violation
from tooling.core.rules.static import static_units
from tooling.errors import ToolingError
from tooling.model.policy import CheckPolicy
from tooling.model.stacks import StackSource
from tooling.model.units import Model

#: every rule, in the order of docs/rules.md
RULES: tuple[Rule, ...] = (
    readable.READABLE,
    state.STATE_KEYS,
    state.APP_WORKSPACES,
    config_only.CONFIGURATION_ONLY,
    pins.PINS,
    layers.LAYERS,
    facts.UNIT_FACTS,
    bootstrap.CI_NEVER_RUNS_BOOTSTRAP,
    bootstrap.BOOTSTRAP_GUARD,
    tool_pins.TOOL_VERSIONS,
    review_gaps.UNIT_NAMES,
    review_gaps.GENERATE_BACKEND,
    review_gaps.COMPUTED_REFS,
    review_gaps.HOOK_BLOCKS,
    review_gaps.PARSE_TIME,
    closure.CLOSURE,
    secretreads.SECRET_READS,
    envvars.ENV_VARS,
    envvars.ENV_VARS_RENDERED,
    enforce.GENERATE,
    enforce.STATE,
    passing.PASSING,
    enforce.ROLE,
    enforce.ERRORS,
    enforce.MOCKS,
    enforce.RUNTIME,
    enforce.HOOKS,
)


def run(stage: Stage, ctx: Context, rules: Sequence[Rule] = RULES) -> list[Violation]:
    """The violations of every rule that runs at ``stage``, each once, in the order the
    rules report them (the caller sorts where it prints a sorted list).

    The rules judge what the model could read: in the file of a unit the model keeps
    with an error, only a rule that :attr:`~Rule.keeps_unreadable` is heard (that unit's
    own violation says why it could not be read)."""
    model = ctx.model
    blind = {f"{p}/terragrunt.hcl" for p, u in model.units.items() if u.error} if model else set()
    found: dict[Violation, None] = {}
    for rule in rules:
        if stage not in rule.stages:
            continue
        for violation in rule.check(ctx):
            if violation.file not in blind or rule.keeps_unreadable:
                found[violation] = None
    return list(found)


def ids_at(stage: Stage, rules: Iterable[Rule] = RULES) -> frozenset[str]:
    """The rule ids of the rules that run at ``stage``."""
    return frozenset(i for rule in rules if stage in rule.stages for i in rule.ids)


def check_context(
    policy: CheckPolicy,
    snap: Snapshot,
    *,
    model: Model | None,
    model_error: ToolingError | None = None,
    apps: Sequence[AppWorkspace] = (),
    root_file: str = "root.hcl",
    git_prefix: str = "",
    escapes: Callable[[str], str | None] | None = None,
    stack_sources: Sequence[StackSource] = (),
    stack_files: Sequence[str] = (),
) -> Context:
    """The context of ``invoke check``: the repository's files, its model (or why it could
    not be read), its app workspaces, the Terragrunt files the text rules read, each
    unit's static form and what Terragrunt parses for every unit (``git_prefix``: the
    project root below git's top level; ``escapes``: where a file that is a symbolic
    link leaving the repository points; ``stack_sources`` and ``stack_files``: what the
    stacks fetch, and the files their generation parses)."""
    closure = ParseClosure((), (), (), tuple(stack_sources))
    if model is not None:
        closure = parse_closure(
            model,
            model.order,
            live=policy.live,
            git_prefix=git_prefix,
            text=lambda p: snap.text(p) if p in snap.paths else None,
            escapes=escapes or (lambda _p: None),
        )
        closure = replace(closure, stack_sources=tuple(stack_sources))
    return Context(
        closure=closure,
        policy=policy,
        root_file=root_file,
        snap=snap,
        model=model,
        model_error=model_error,
        apps=tuple(apps),
        hcl_files=tuple(
            dict.fromkeys(
                [
                    *config_only.hcl_files(model, policy, snap),
                    *(f for f in stack_files if f in snap.paths),
                    # what the units read that Terragrunt parses too (a JSON configuration)
                    *(
                        f
                        for f in (closure.files if closure else ())
                        if f.endswith(".json") and f in snap.paths
                    ),
                ]
            )
        ),
        units=static_units(model, policy, snap, root_file),
    )


def verify(
    rendered: Mapping[str, Any], declared: Mapping[str, Any], unit: UnitFacts, policy: CheckPolicy
) -> list[Violation]:
    """The rules where OpenTofu runs, on one unit's rendered and declared configuration, sorted."""
    ctx = Context(policy=policy, units=(UnitRender(rendered, declared, unit),))
    return sorted(run(Stage.AT_EXECUTION, ctx))


#: the table's columns after the rule's ids and what it checks, one per stage
_COLUMNS = (
    (Stage.CHECK, "`invoke check`"),
    (Stage.BEFORE_TERRAGRUNT, "before Terragrunt starts (`plan`, `drift`, `adopt`)"),
    (
        Stage.AT_EXECUTION,
        "at the point of execution: each unit before its Terragrunt process (`plan`, `drift`, "
        "`adopt`, `apply`), then the guard before each OpenTofu command",
    ),
)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def docs_table(rules: Sequence[Rule] = RULES) -> str:
    """docs/rules.md's table "Where each rule is enforced": one row per rule, in the
    registry's order (a test holds the docs to it)."""
    head = ["Rules", "What", *(title for _, title in _COLUMNS), "Also"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for rule in rules:
        cells = [
            ", ".join(f"`{i}`" for i in rule.ids),
            rule.summary,
            *(
                rule.notes.get(stage, "yes" if stage in rule.stages else "no")
                for stage, _ in _COLUMNS
            ),
            rule.also,
        ]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"
