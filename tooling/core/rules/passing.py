"""What a unit passes to OpenTofu through ``extra_arguments``, by allowlist. Pure.

``env_vars`` may set ``TF_VAR_`` variables only (never the pipeline's ``TF_VAR_iac_*``),
written as a map with literal names; ``arguments`` may add a few options that change
neither the state, the providers nor what is planned (:data:`ALLOWED_ARGUMENTS`), a
variable file only inside the working copy (a relative path), and no
``required_var_files``/``optional_var_files`` (Terragrunt resolves them from the unit's
folder: outside the working copy). Anything computed is refused: which variables or
arguments it holds is known only when it runs.

This is the static side, for ``invoke check`` and the verifier before a unit's
Terragrunt process; where OpenTofu runs, the guard checks what Terragrunt actually
hands over (``exec-env``, ``exec-args``: the module's own variables, every argument's
value; docs/rules.md, "The point of execution"). ``enforce-state`` (``TF_*`` variables)
and ``enforce-role`` (identity variables) keep their names for what they cover.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tooling.core.rules.enforce import (
    IDENTITY_ENV,
    TOOL_ENV,
    at_execution,
    present,
    state_arg,
    violation,
)
from tooling.core.rules.rule import Rule, Stage, UnitFacts, UnitRender, each_unit
from tooling.core.rules.snapshot import Violation
from tooling.model.policy import CheckPolicy

#: arguments a unit may add to OpenTofu's (the guard checks each where OpenTofu runs, with
#: its value: a variable file in the working copy, a variable of the module's)
ALLOWED_ARGUMENTS = frozenset(
    {
        "lock-timeout",
        "parallelism",
        "compact-warnings",
        "concise",
        "no-color",
        "input",
        "var",
        "var-file",
    }
)
#: the pipeline's own variables (the key of the state's encryption): never a unit's
PIPELINE_VARIABLE = "iac_"
PIPELINE_TF_VAR = "TF_VAR_IAC_"


def _env_violations(
    facts: UnitFacts, block: str, env: Any, allowed_identity: bool
) -> list[Violation]:
    """The ``env_vars`` of an ``extra_arguments`` block, by allowlist: a literal map whose
    names are ``TF_VAR_`` variables (never the pipeline's ``TF_VAR_iac_*``); the guard
    checks the names against the module's own variables where OpenTofu runs."""
    needles = ("env_vars", f'extra_arguments "{block}"')
    fix = "set module variables through inputs; OpenTofu's environment is the pipeline's"
    if not isinstance(env, Mapping):
        return [
            violation(
                facts,
                needles,
                "enforce-env",
                f'extra_arguments "{block}" computes its env_vars: which variables it sets '
                "is known only when it runs, where no review sees it",
                "write env_vars as a map with literal names (only TF_VAR_ names of the "
                "module's variables), or " + fix,
            )
        ]
    out: list[Violation] = []
    for key in sorted(env):
        upper = key.upper()
        if upper.startswith("TF_VAR_") and not upper.startswith(PIPELINE_TF_VAR):
            continue
        if upper.startswith(TOOL_ENV) and not upper.startswith(PIPELINE_TF_VAR):
            out.append(
                violation(
                    facts,
                    (key, f'extra_arguments "{block}"'),
                    "enforce-state",
                    f'extra_arguments "{block}" sets {key} in env_vars: it changes how OpenTofu runs '
                    "(its arguments, backend, state or data directory) where no review sees it",
                    f"remove {key} from env_vars; the state key comes from {facts.root_file}, one per unit",
                )
            )
        elif upper.startswith(IDENTITY_ENV):
            if allowed_identity:
                continue
            out.append(
                violation(
                    facts,
                    (key, f'extra_arguments "{block}"'),
                    "enforce-role",
                    f'extra_arguments "{block}" sets {key} in env_vars: it changes the identity '
                    "the providers run as",
                    "remove it; the executor's identity is the one its preflight checks (policy.toml [executors])",
                )
            )
        else:
            what = (
                "the pipeline's own variable (the key of the state's encryption)"
                if upper.startswith(PIPELINE_TF_VAR)
                else "a variable OpenTofu or the programs it starts read"
            )
            out.append(
                violation(
                    facts,
                    (key, f'extra_arguments "{block}"'),
                    "enforce-env",
                    f'extra_arguments "{block}" sets {key} in env_vars, {what}: only TF_VAR_ '
                    "names of the module's own variables may be set for a unit",
                    f"remove {key} from env_vars; " + fix,
                )
            )
    return out


def _argument_violations(facts: UnitFacts, name: str, block: Mapping[str, Any]) -> list[Violation]:
    """The ``arguments`` and var files of an ``extra_arguments`` block, by allowlist."""
    out: list[Violation] = []
    needles = (f'extra_arguments "{name}"', "extra_arguments")
    fix = "remove it; the pipeline passes OpenTofu's arguments (variables go in inputs)"
    for attr in ("required_var_files", "optional_var_files"):
        if present(block.get(attr)):
            out.append(
                violation(
                    facts,
                    (attr, *needles),
                    "enforce-args",
                    f'extra_arguments "{name}" passes {attr}: OpenTofu would read variable files '
                    "from outside the unit's working copy",
                    fix,
                )
            )
    args = block.get("arguments")
    if args is None:
        return out
    if not isinstance(args, list):
        return [
            *out,
            violation(
                facts,
                ("arguments", *needles),
                "enforce-args",
                f'extra_arguments "{name}" computes its arguments: what OpenTofu gets is known '
                "only when it runs",
                "write the arguments as a list of literals, or " + fix,
            ),
        ]
    for arg in args:
        if not isinstance(arg, str) or state_arg(arg):
            continue  # enforce-state names the state arguments
        why = _argument_problem(arg)
        if why is not None:
            out.append(
                violation(
                    facts,
                    (arg.split("=", 1)[0], *needles),
                    "enforce-args",
                    f'extra_arguments "{name}" passes {arg.split("=", 1)[0]}: {why}',
                    fix,
                )
            )
    return out


def _argument_problem(arg: str) -> str | None:
    """Why an argument a unit adds to OpenTofu's is not allowed (None: it is)."""
    if not arg.startswith("-"):
        return "OpenTofu would get an argument besides the pipeline's"
    flag, _, value = arg.lstrip("-").partition("=")
    if flag not in ALLOWED_ARGUMENTS:
        return "not an argument the pipeline allows (it can move the providers, the state or what is planned)"
    if flag == "var-file" and (value.startswith("/") or ".." in value.split("/") or "$" in value):
        return "a variable file outside the unit's working copy"
    if flag == "var" and value.lower().startswith(PIPELINE_VARIABLE):
        return "the pipeline's own variable"
    return None


def check_passing(unit: UnitRender, policy: CheckPolicy) -> list[Violation]:
    """The ``env_vars`` and ``arguments`` of the unit's ``extra_arguments`` blocks (those the
    root file does not declare itself), by allowlist."""
    rendered, declared, facts = unit.rendered, unit.declared, unit.facts
    terraform = rendered.get("terraform") or {}
    extra = terraform.get("extra_arguments") if isinstance(terraform, Mapping) else None
    declared_tf = declared.get("terraform") or {}
    declared_extra = (
        declared_tf.get("extra_arguments") if isinstance(declared_tf, Mapping) else None
    ) or {}
    out: list[Violation] = []
    for name, block in sorted((extra or {}).items()):
        if not isinstance(block, Mapping) or declared_extra.get(name) == block:
            continue
        out += _argument_violations(facts, name, block)
        if block.get("env_vars") is not None:
            out += _env_violations(facts, name, block["env_vars"], False)
    return out


PASSING = Rule(
    name="enforce-env",
    ids=("enforce-env", "enforce-args", "enforce-state", "enforce-role"),
    summary="`extra_arguments` by allowlist: `env_vars` only `TF_VAR_` variables (literal names), a few arguments, no variable files from outside the working copy",
    stages=Stage.CHECK | Stage.AT_EXECUTION,
    check=each_unit(check_passing),
    notes=at_execution(
        "the guard: `exec-env`, `exec-args` (the module's own variables, each value)"
    ),
)
