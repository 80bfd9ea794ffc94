"""No secret is read while Terragrunt parses configuration: ``secret-read``. Pure.

The pipeline redacts the value of every environment variable the ``[secrets]`` rule
of policy.toml names, wherever it is printed. A value Terragrunt computes from one
(``upper(get_env("IAC_RUNNERS_TOKEN"))``, ``join(".", split("", ...))``) is another
string: it reaches comment.md and plan.txt unredacted. So no Terragrunt
configuration (a unit, a file it includes or reads, a stack file) reads such a
variable with ``get_env``, whatever it does with it, and there is no allowlist; a
``get_env`` whose variable name is computed is refused too (which variable it reads
is unknown), and so is ``sops_decrypt_file()`` (a secret nothing knows to redact).
One shape is not a read of the value: ``get_env("NAME", "") != ""`` (or ``==``),
which tells only whether the variable is set (root.hcl turns encryption on so).
Secrets reach a module as ``TF_VAR_<variable>`` from the job's environment.
"""

from __future__ import annotations

from tooling.core.rules.rule import Context, Rule, Stage
from tooling.core.rules.snapshot import Violation
from tooling.model.hcl import syntax_tree
from tooling.model.hclscan import env_reads, function_calls, json_templates

_FIX = (
    "do not read it in Terragrunt configuration: let the job set TF_VAR_<variable> from "
    "the secret (the module's variable, marked sensitive), which OpenTofu reads itself"
)


def secret_reads(path: str, data: bytes, ctx: Context) -> list[Violation]:
    """The secret reads of one HCL file (``path`` in the repository, its bytes); of a
    configuration in JSON, those in its strings' templates (:func:`json_templates`)."""
    if path.endswith(".json"):
        return [
            Violation(path, line, v.rule, v.message, v.fix)
            for line, template in json_templates(data)
            for v in secret_reads(path + ".hcl", template, ctx)
        ]
    rule = ctx.policy.secrets
    tree = syntax_tree(data)
    out: list[Violation] = []
    for name, line, presence in env_reads(data, tree):
        if name is None:
            out.append(
                Violation(
                    path,
                    line,
                    "secret-read",
                    "get_env() with a computed variable name: which variable it reads, a "
                    "secret among them, is unknown until Terragrunt runs",
                    "write the variable's name as a literal string",
                )
            )
        elif rule.is_secret(name) and not presence:
            out.append(
                Violation(
                    path,
                    line,
                    "secret-read",
                    f"get_env({name!r}) reads a secret ([secrets] in policy.toml names it) while "
                    "Terragrunt parses the configuration: a value computed from it is printed "
                    "in plans and comments, where only the plain value is redacted",
                    _FIX,
                )
            )
    for call, line in function_calls(data, tree):
        if call == "sops_decrypt_file":
            out.append(
                Violation(
                    path,
                    line,
                    "secret-read",
                    "sops_decrypt_file() decrypts a secret while Terragrunt parses the "
                    "configuration: nothing knows its values to redact them from plans",
                    _FIX,
                )
            )
    return out


def check_secret_reads(ctx: Context) -> list[Violation]:
    """Every secret read in the Terragrunt files of the context (``invoke check``: every
    one; before Terragrunt: every file it will parse for the units in play)."""
    out: list[Violation] = []
    for path in ctx.hcl_files:
        out += secret_reads(path, ctx.snap.text(path).encode("utf-8", "surrogateescape"), ctx)
    return out


SECRET_READS = Rule(
    name="secret-reads",
    ids=("secret-read",),
    summary=(
        "no secret is read while Terragrunt parses configuration: no `get_env` of a variable "
        "`[secrets]` names (but to test it is set), none of a computed name, no "
        "`sops_decrypt_file`"
    ),
    stages=Stage.CHECK | Stage.BEFORE_TERRAGRUNT,
    check=check_secret_reads,
    keeps_unreadable=True,
    notes={
        Stage.BEFORE_TERRAGRUNT: "yes, on every file Terragrunt will parse for the units in play"
    },
)
