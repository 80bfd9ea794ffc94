"""What a unit sets in the environment of the processes Terragrunt starts: ``env-vars``. Pure.

``terraform { extra_arguments "x" { env_vars = {...} } }`` sets variables in the
environment of OpenTofu *and of every hook* of the commands it names. A variable there
that a process reads before it runs its own code (the dynamic loader's ``LD_PRELOAD``,
an interpreter's ``PYTHONPATH``, a shell's ``BASH_ENV``, where programs and
configuration files are found: ``PATH``, ``HOME``, ``GIT_*``...) runs code from the pull
request before any check of it (a committed library's constructor ran in the ``sh`` and
``python`` of the working-copy hook root.hcl once declared). So:

- ``env-vars``: ``env_vars`` must be a map written out in the file, its names literal
  (``env_vars = local.e`` or ``merge(...)``: what it sets is known only when Terragrunt
  runs, after the checks), and none of its names may be one of :func:`process_name`.

Checked on the text of every Terragrunt file (``invoke check``, and before Terragrunt
starts on every file it will parse for the units in play), and on each unit's static
form where OpenTofu runs. Past the rules, what Terragrunt starts for OpenTofu is the
guard, a static executable no dynamic loader runs for, whose allowlist refuses every
such variable (``exec-env``). Variables that change how OpenTofu runs (``TF_*``) or
whom it runs as (``AWS_*``...) are ``enforce-state`` and ``enforce-role``'s.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from tooling.core.rules.rule import Context, Rule, Stage, UnitRender
from tooling.core.rules.snapshot import Violation, safe_body
from tooling.model.exprs import blocks_of

#: prefixes of variables a program reads before (or instead of) the code it was asked to
#: run: the dynamic loader, interpreters, shells' exported functions, git and ssh
_PROCESS_PREFIXES = (
    "LD_",
    "DYLD_",
    "MALLOC_",
    "PYTHON",
    "PERL5",
    "PERLLIB",
    "RUBY",
    "NODE_",
    "BASH_FUNC_",
    "GIT_",
    "SSH_",
)
#: variables that say where programs, libraries and configuration files are found, or
#: what a shell runs first
_PROCESS_NAMES = frozenset(
    {
        "PATH",
        "HOME",
        "ENV",
        "BASH_ENV",
        "SHELLOPTS",
        "BASHOPTS",
        "IFS",
        "CDPATH",
        "PS4",
        "SHELL",
        "GLIBC_TUNABLES",
        "GCONV_PATH",
        "LOCPATH",
        "NLSPATH",
        "TMPDIR",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_CACHE_HOME",
        "OPENSSL_CONF",
        "OPENSSL_ENGINES",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "CURL_HOME",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
        "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS",
        # Go's runtime reads these before main: Terragrunt, OpenTofu, the guard and the
        # providers are Go programs (the pipeline sets GOGC and GOMEMLIMIT for them)
        "GOGC",
        "GOMEMLIMIT",
        "GODEBUG",
        "GOMAXPROCS",
        "GOTRACEBACK",
    }
)

_FIX = (
    "remove it from env_vars: a unit passes values to its module as inputs, and the "
    "pipeline sets the processes' environment"
)


def process_name(name: str) -> bool:
    """Whether a process started with variable ``name`` set would load, run or read
    something the variable names before its own code (any case: ``http_proxy`` too)."""
    upper = name.upper()
    return upper in _PROCESS_NAMES or upper.startswith(_PROCESS_PREFIXES)


def _env_exprs(body: dict[str, Any]) -> Iterator[tuple[str, Any, int]]:
    """(extra_arguments label, env_vars expression, line) of every block in ``body``."""
    for _t, _l, terraform, _line in blocks_of(body, "terraform"):
        for btype, labels, inner, line in terraform["b"]:
            if btype == "extra_arguments" and "env_vars" in inner["a"]:
                expr, at = inner["a"]["env_vars"]
                yield (labels[0] if labels else ""), expr, at or line


def text_violations(path: str, body: dict[str, Any]) -> list[Violation]:
    """``env-vars`` in one parsed Terragrunt file."""
    out: list[Violation] = []
    for label, expr, line in _env_exprs(body):
        literal = isinstance(expr, tuple | list) and expr and expr[0] == "obj"
        keys = list(expr[1]) if literal else []
        if not literal or any(not (k[0] == "lit" and isinstance(k[1], str)) for k, _v in keys):
            out.append(
                Violation(
                    path,
                    line,
                    "env-vars",
                    f'extra_arguments "{label}" computes env_vars (not a map written out with '
                    "literal names): which variables it sets is known only when Terragrunt "
                    "runs, after every check",
                    'write env_vars as a map with literal names: env_vars = { TF_VAR_x = "..." }',
                )
            )
            continue
        for key, _value in keys:
            if process_name(str(key[1])):
                out.append(_process_violation(path, line, label, str(key[1])))
    return out


def _process_violation(path: str, line: int, label: str, name: str) -> Violation:
    return Violation(
        path,
        line,
        "env-vars",
        f'extra_arguments "{label}" sets {name} in env_vars: every process Terragrunt starts '
        "for the command would load or run what it "
        "names, code from the pull request, before any check of it",
        _FIX,
    )


def check_env_vars_text(ctx: Context) -> list[Violation]:
    """``env-vars`` on the text of every Terragrunt file of the context."""
    out: list[Violation] = []
    for path in ctx.hcl_files:
        body = safe_body(ctx.snap, path, [])
        if body is not None:
            out += text_violations(path, body)
    return out


def rendered_violations(unit: UnitRender) -> list[Violation]:
    """``env-vars`` on a unit's static form: the literal names of the variables it sets."""
    terraform = unit.rendered.get("terraform") or {}
    extra = terraform.get("extra_arguments") if isinstance(terraform, Mapping) else None
    out: list[Violation] = []
    for label, block in sorted((extra or {}).items()):
        env = block.get("env_vars") if isinstance(block, Mapping) else None
        if not isinstance(env, Mapping):
            continue
        out += [
            _process_violation(unit.facts.unit_file, 1, str(label), str(name))
            for name in sorted(env)
            if process_name(str(name))
        ]
    return out


def check_env_vars_rendered(ctx: Context) -> list[Violation]:
    return [v for unit in ctx.units for v in rendered_violations(unit)]


ENV_VARS = Rule(
    name="env-vars",
    ids=("env-vars",),
    summary=(
        "`env_vars` is a map with literal names, none of which a process reads before its "
        "own code (`LD_*`, `PYTHON*`, `BASH_ENV`, `PATH`, `HOME`...)"
    ),
    stages=Stage.CHECK | Stage.BEFORE_TERRAGRUNT,
    check=check_env_vars_text,
    notes={
        Stage.BEFORE_TERRAGRUNT: "yes, on every file Terragrunt will parse for the units in play",
        Stage.AT_EXECUTION: "as `env-vars-rendered`",
    },
    also=(
        "the guard and OpenTofu are static executables the dynamic loader never runs for, "
        "and the guard's allowlist (`exec-env`) refuses any such variable"
    ),
)
ENV_VARS_RENDERED = Rule(
    name="env-vars-rendered",
    ids=("env-vars",),
    summary=(
        "the variables a unit's static form sets include none a process reads before its own code"
    ),
    stages=Stage.AT_EXECUTION,
    check=check_env_vars_rendered,
    notes={Stage.AT_EXECUTION: "yes (static form); the guard: `exec-env`"},
)
