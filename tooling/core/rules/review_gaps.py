"""What a reviewer reading a pull request would miss too. Pure.

- ``unit-name``: a unit folder name outside ``[check] unit_name_pattern``
  (lowercase segments by default), non-ASCII, or a case-fold twin of another;
- ``generate-backend``: a ``generate`` block outside the root file that writes a
  backend (or replaces the root file's block of the same name) or an
  ``*_override.tf`` file: two units end up on one state, or a unit's code is
  changed where no module review sees it;
- ``pin-computed-ref``: a module ``?ref=`` computed at run time
  (``${get_env("X", "v1.1.0")}``): the summary shows the default while the
  environment plans another version;
- ``run-at-parse``: ``run_cmd(...)`` and ``before_hook``/``after_hook``/
  ``error_hook`` blocks, code that runs while a pull request is parsed or
  planned, unless ``[check.allowed_run_at_parse]`` lists the file with a reason;
- ``command-dependent``: ``get_terraform_command()`` or
  ``get_terraform_cli_args()``, which make a configuration read one way when the
  verifier renders it (the command is ``render``) and another when it is planned;
- ``dependency-outside-inputs``: a dependency's outputs read anywhere but ``inputs``:
  the verifier renders with the mock outputs, the plan with the real ones.

Function calls are found in the syntax tree (:func:`tooling.model.hclscan.function_calls`),
not in the lines of text: HCL reads ``run_cmd`` and its parenthesis on two lines
inside brackets as one call.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from tooling.core.rules import names, workcopy
from tooling.core.rules.config_only import literal_strings
from tooling.core.rules.rule import Context, Rule, Stage
from tooling.core.rules.snapshot import Snapshot, Violation, safe_body
from tooling.model.exprs import blocks_of, locals_exprs
from tooling.model.hcl import parse, syntax_tree
from tooling.model.hclscan import function_calls as hcl_calls
from tooling.model.hclscan import json_templates, variable_uses
from tooling.model.units import UNIT_FILE

HOOKS = ("before_hook", "after_hook", "error_hook")
_CANONICAL = parse(workcopy.CANONICAL_HOOK.encode(), "root.hcl")
#: a backend (or Terraform Cloud) configuration in generated code
_BACKEND_RE = re.compile(r'\bbackend\s*"|\bcloud\s*\{')
#: files OpenTofu merges over the module's own code
_OVERRIDE_RE = re.compile(r"(?:^|[/_])override\.(?:tf|tofu)(?:\.json)?$")
#: functions whose value differs between the verifier's ``terragrunt render`` and the plan
COMMAND_FUNCTIONS = ("get_terraform_command", "get_terraform_cli_args")


# --------------------------------------------------------------------------- unit-name


def check_unit_names(ctx: Context) -> list[Violation]:
    """Unit folders are plain lowercase names, no two differing only by case."""
    model, policy = ctx.model, ctx.policy
    if model is None:
        return []
    out = []
    for bad in names.bad_unit_names(model.units, policy.live, policy.unit_name_pattern):
        out.append(
            Violation(
                f"{bad.path}/{UNIT_FILE}",
                1,
                "unit-name",
                f"the unit folder {bad.path!r} is not an allowed name: {bad.why}; its path becomes "
                "a state key, report folders, filters and shell words in CI",
                f"rename the folder to segments matching {policy.unit_name_pattern} "
                "(`invoke move-unit OLD NEW` moves its state too)",
            )
        )
    return out


# --------------------------------------------------------------------------- generate-backend


def _root_generate_labels(snap: Snapshot, root_file: str) -> set[str]:
    if root_file not in snap.paths:
        return set()
    body = safe_body(snap, root_file, [])
    if body is None:
        return set()
    return {labels[0] for _t, labels, _i, _l in blocks_of(body, "generate") if labels}


def check_generate_blocks(ctx: Context) -> list[Violation]:
    """Only the root file generates the backend; nothing generates ``*_override.tf``."""
    snap, root_file = ctx.snap, ctx.root_file
    out: list[Violation] = []
    root_labels = _root_generate_labels(snap, root_file)
    for path in ctx.hcl_files:
        if path == root_file:
            continue
        body = safe_body(snap, path, [])
        if body is None:
            continue  # hcl-syntax reports it
        local_exprs = locals_exprs(body)
        for _t, labels, inner, line in blocks_of(body, "generate"):
            label = labels[0] if labels else ""
            target = inner["a"].get("path")
            paths = list(literal_strings(target[0], local_exprs)) if target else []
            contents = inner["a"].get("contents")
            texts = list(literal_strings(contents[0], local_exprs)) if contents else []
            why = None
            if label in root_labels:
                why = f"replaces {root_file}'s generate {label!r} block (Terragrunt merges blocks by name)"
            elif any(_OVERRIDE_RE.search(p) for p in paths):
                why = f"writes an override file ({', '.join(paths)}) that OpenTofu merges over the module"
            elif any(_BACKEND_RE.search(t) for t in texts) or any(
                "backend" in p.rsplit("/", 1)[-1] for p in paths
            ):
                why = "writes a backend configuration"
            if why:
                out.append(
                    Violation(
                        path,
                        line,
                        "generate-backend",
                        f"generate {label!r} {why}: the unit can end up on another unit's state",
                        f"remove the block; the backend is generated once, by {root_file}, keyed by the unit's path",
                    )
                )
    return out


# --------------------------------------------------------------------------- pin-computed-ref

_DYNAMIC = object()


def _flatten(
    expr: Any, local_exprs: Mapping[str, Any], seen: frozenset[str] = frozenset()
) -> Iterator[Any]:
    """A string expression as literal runs and :data:`_DYNAMIC` holes (``local.X`` of the
    same file followed)."""
    if not isinstance(expr, tuple | list) or not expr:
        yield _DYNAMIC
        return
    kind = expr[0]
    if kind == "lit":
        yield expr[1] if isinstance(expr[1], str) else _DYNAMIC
    elif kind == "tmpl":
        for part in expr[1]:
            yield from _flatten(part, local_exprs, seen)
    elif (
        kind == "var"
        and expr[1] == "local"
        and expr[2]
        and isinstance(expr[2][0], str)
        and len(expr[2]) == 1
        and expr[2][0] in local_exprs
        and expr[2][0] not in seen
    ):
        yield from _flatten(local_exprs[expr[2][0]][0], local_exprs, seen | {expr[2][0]})
    else:
        yield _DYNAMIC


def computed_query(expr: Any, local_exprs: Mapping[str, Any]) -> bool:
    """Whether the query part (``?ref=…``) of a source expression is computed at run time.

    Holes before the ``?`` (a base URL from a local) are fine; a hole after it, or
    a source with a hole and no literal ``?`` at all, is not."""
    seen_query = False
    holes = False
    for part in _flatten(expr, local_exprs):
        if part is _DYNAMIC:
            if seen_query:
                return True
            holes = True
        elif "?" in part:
            seen_query = True
    return holes and not seen_query


def check_literal_refs(ctx: Context) -> list[Violation]:
    """A module's ``?ref=`` is written in the file, not computed when Terragrunt runs."""
    out: list[Violation] = []
    for path in ctx.hcl_files:
        body = safe_body(ctx.snap, path, [])
        if body is None:
            continue
        local_exprs = locals_exprs(body)
        for _t, _labels, inner, line in blocks_of(body, "terraform"):
            source = inner["a"].get("source")
            if source is None or not computed_query(source[0], local_exprs):
                continue
            out.append(
                Violation(
                    path,
                    source[1] or line,
                    "pin-computed-ref",
                    "the module source's ?ref= is computed at run time (an environment variable, "
                    "a function, another file): the report shows one version, the environment plans another",
                    'write the ref as a literal: source = "git::https://…/MODULE.git//PATH?ref=vX.Y.Z"',
                )
            )
    return out


# --------------------------------------------------------------------------- run-at-parse


def _allowed(path: str, allowlist: Mapping[str, str]) -> bool:
    return any(fnmatch.fnmatchcase(path, pattern) for pattern in allowlist)


def check_run_at_parse(ctx: Context) -> list[Violation]:
    """No hooks, unless ``[check.allowed_run_at_parse]`` lists the file (its ``run_cmd``
    part is :func:`check_before_terragrunt`'s, the check the plan refuses with)."""
    out: list[Violation] = []
    for path in ctx.hcl_files:
        if _allowed(path, ctx.policy.allowed_run_at_parse):
            continue
        body = safe_body(ctx.snap, path, [])
        if body is None:
            continue
        for _t, _l, inner, _line in blocks_of(body, "terraform"):
            for btype, labels, hook, line_no in inner["b"]:
                if "/" not in path and workcopy.is_canonical_hook(btype, labels, hook, _CANONICAL):
                    continue  # the root file's working-copy check (docs/rules.md), exactly
                if btype in HOOKS:
                    out.append(
                        Violation(
                            path,
                            line_no,
                            "run-at-parse",
                            f"{btype} {labels[0] if labels else ''!r} runs commands around OpenTofu: "
                            "on every plan of a pull request, with the job's credentials",
                            _RUN_FIX,
                        )
                    )
    return out


# --------------------------------------------------------------------------- before Terragrunt


def check_before_terragrunt(ctx: Context) -> list[Violation]:
    """``run_cmd`` (not allowlisted), the command functions and a dependency's outputs
    outside ``inputs``, in every HCL file of ``ctx.hcl_files``, in that order: ``invoke
    check`` and the plan, before Terragrunt starts, run this one check, so they never
    disagree (the plan's files are decoded with ``surrogateescape``: their very bytes)."""
    out: list[Violation] = []
    for path in ctx.hcl_files:
        data = ctx.snap.text(path).encode("utf-8", "surrogateescape")
        out += refused_before_terragrunt(path, data, ctx.policy.allowed_run_at_parse)
    return out


_RUN_FIX = (
    "remove it, or list the file in policy.toml [check.allowed_run_at_parse] "
    '("FILE" = "why it is needed", reviewed like code)'
)


def _call_violations(
    path: str, calls: Sequence[tuple[str, int]], run_cmd_refused: bool
) -> list[Violation]:
    out: list[Violation] = []
    for name, number in calls:
        if name == "run_cmd" and run_cmd_refused:
            out.append(
                Violation(
                    path,
                    number,
                    "run-at-parse",
                    "run_cmd() runs a command whenever Terragrunt parses this file: "
                    "on every plan of a pull request, with the job's credentials",
                    _RUN_FIX,
                )
            )
        elif name in COMMAND_FUNCTIONS:
            out.append(
                Violation(
                    path,
                    number,
                    "command-dependent",
                    f"{name}() gives `render` while the rule's verifier renders this "
                    "configuration and `plan` or `apply` while OpenTofu runs: what is "
                    "verified would not be what runs",
                    "remove it: put what differs per command in separate units, or in "
                    "inputs the module reads",
                )
            )
    return out


def refused_before_terragrunt(
    path: str, data: bytes, run_allowlist: Mapping[str, str]
) -> list[Violation]:
    """What no Terragrunt process may parse in one HCL file (``path`` in the repository,
    its bytes): ``run_cmd`` unless ``run_allowlist`` (``[check.allowed_run_at_parse]``)
    lists the file, the command functions, and a dependency's outputs outside
    ``inputs``: what ``invoke check`` reports as ``run-at-parse``, ``command-dependent``
    and ``dependency-outside-inputs``, for the plan to refuse before a Terragrunt
    process (whose parse would run or resolve them) starts. A configuration in JSON
    (``*.json``, which ``read_terragrunt_config`` and ``include`` parse too) has its
    calls in its strings' templates: each is read (:func:`json_templates`)."""
    refused = not _allowed(path, run_allowlist)
    if path.endswith(".json"):
        return [
            Violation(path, line, v.rule, v.message, v.fix)
            for line, template in json_templates(data)
            for v in _call_violations(path, hcl_calls(template), refused)
        ]
    tree = syntax_tree(data)  # parsed once for both readings
    found = _call_violations(path, hcl_calls(data, tree), refused)
    return found + _dependency_violations(path, variable_uses(data, "dependency", tree))


# --------------------------------------------------------------------------- dependency-outside-inputs

#: the one place a unit may read its dependencies' outputs
DEPENDENCY_READERS = ("inputs",)


def _dependency_violations(path: str, uses: Sequence[tuple[str, int]]) -> list[Violation]:
    return [
        Violation(
            path,
            line,
            "dependency-outside-inputs",
            f"{where or 'this expression'} reads a dependency's outputs: the rule's verifier "
            "renders it with the dependency's mock outputs, the plan with the real ones, so "
            "what is verified (a state path, an argument, a generated file) would not be what "
            "runs",
            "read dependency outputs in `inputs` only, and pass them to the module as variables",
        )
        for where, line in uses
        if where not in DEPENDENCY_READERS
    ]


UNIT_NAMES = Rule(
    name="unit-names",
    ids=("unit-name",),
    summary="unit folders are plain lowercase names, no two differing only by case",
    stages=Stage.CHECK,
    check=check_unit_names,
    also=(
        "`plan`, `drift` and `adopt` refuse such a unit before they build a state key; "
        "`move-unit` refuses such a NEW"
    ),
)
GENERATE_BACKEND = Rule(
    name="generate-backend",
    ids=("generate-backend",),
    summary="only the root file generates the backend; nothing generates an override file",
    stages=Stage.CHECK,
    check=check_generate_blocks,
)
COMPUTED_REFS = Rule(
    name="computed-refs",
    ids=("pin-computed-ref",),
    summary="a module's `?ref=` is written in the file, not computed when Terragrunt runs",
    stages=Stage.CHECK,
    check=check_literal_refs,
)
HOOK_BLOCKS = Rule(
    name="hook-blocks",
    ids=("run-at-parse",),
    summary="no `before_hook`, `after_hook` or `error_hook` outside the allowlist",
    stages=Stage.CHECK,
    check=check_run_at_parse,
    keeps_unreadable=True,
    notes={Stage.AT_EXECUTION: "as `enforce-hooks`"},
)
PARSE_TIME = Rule(
    name="parse-time",
    ids=("run-at-parse", "command-dependent", "dependency-outside-inputs"),
    summary=(
        "no `run_cmd` outside the allowlist, no function that tells the render from the "
        "plan, no dependency outputs outside `inputs`"
    ),
    stages=Stage.CHECK | Stage.BEFORE_TERRAGRUNT,
    check=check_before_terragrunt,
    keeps_unreadable=True,
    notes={
        Stage.BEFORE_TERRAGRUNT: (
            "yes, on the text of every file Terragrunt will parse for the units in play "
            "(every HCL file of the repository when one of them cannot be evaluated)"
        ),
        Stage.AT_EXECUTION: (
            "through the plan: a saved plan is applied only on the commit it was planned on"
        ),
    },
)
