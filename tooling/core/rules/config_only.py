"""Units hold configuration only: no OpenTofu code under the live folders, no
resource/data/module blocks, no ``generate`` block that writes resources. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from tooling.core.rules.rule import Context, Rule, Stage
from tooling.core.rules.snapshot import Snapshot, Violation, safe_body
from tooling.model.exprs import locals_exprs
from tooling.model.policy import CheckPolicy
from tooling.model.units import Model

_CODE_SUFFIXES = (".tf", ".tofu", ".tf.json", ".tofu.json")
_CODE_BLOCKS = ("resource", "data", "module")
#: a block that creates or adopts infrastructure, in generated OpenTofu code
_INJECTED_RE = re.compile(
    r'^[ \t]*(?:(?P<kind>resource|data|module)[ \t]+["A-Za-z_]|(?P<imp>import)[ \t]*\{)', re.M
)


def live_files(model: Model | None, policy: CheckPolicy, snap: Snapshot) -> list[str]:
    """The files under the live folders of policy.toml ``[layout]``; for a live folder that is
    the whole repository ("."), the files in the units' folders (its modules live elsewhere)."""
    found: set[str] = set()
    for folder in policy.live:
        if folder not in ("", "."):
            found.update(snap.under(folder))
        elif model is not None:
            for unit in model.units:
                found.update(snap.under(unit) if unit != "." else snap.paths)
    return sorted(found)


def hcl_files(model: Model | None, policy: CheckPolicy, snap: Snapshot) -> list[str]:
    """The Terragrunt files the rules read: every .hcl under the live folder, and every
    .hcl file a unit reads (root.hcl, shared files elsewhere)."""
    found = {p for p in live_files(model, policy, snap) if p.endswith(".hcl")}
    if model is not None:
        for unit in model.units.values():
            found.update(r for r in unit.reads if r.endswith(".hcl") and r in snap.paths)
    return sorted(found)


def literal_strings(
    expr: Any, locals_exprs: Mapping[str, Any], seen: frozenset[str] = frozenset()
) -> Iterator[str]:
    """Every string literal an expression can evaluate to, following ``local.X`` in the same file."""
    if not isinstance(expr, tuple | list) or not expr:
        return
    kind = expr[0]
    if kind == "lit":
        if isinstance(expr[1], str):
            yield expr[1]
        return
    if kind == "var":
        if expr[1] == "local" and expr[2] and isinstance(expr[2][0], str):
            name = expr[2][0]
            if name in locals_exprs and name not in seen:
                yield from literal_strings(locals_exprs[name][0], locals_exprs, seen | {name})
        return
    if kind == "tmpl":
        # the literal runs of a template, joined: a heredoc's text with holes
        yield "".join(
            p[1]
            for p in expr[1]
            if isinstance(p, tuple | list) and p and p[0] == "lit" and isinstance(p[1], str)
        )
        for part in expr[1]:
            yield from literal_strings(part, locals_exprs, seen)
        return
    children: list[Any] = []
    if kind in ("tup",):
        children = list(expr[1])
    elif kind == "call":
        children = list(expr[2])
    elif kind == "obj":
        children = [v for pair in expr[1] for v in pair]
    elif kind == "cond":
        children = list(expr[1:])
    elif kind == "bin":
        children = list(expr[2:])
    elif kind == "post":
        children = [expr[1]]
    for child in children:
        yield from literal_strings(child, locals_exprs, seen)


def check_configuration_only(ctx: Context) -> list[Violation]:
    """No OpenTofu code under live/: no .tf/.tofu files, no resource/data/module blocks,
    no ``generate`` block that writes resources (in live/ or in a file units include)."""
    model, policy, snap = ctx.model, ctx.policy, ctx.snap
    out: list[Violation] = []
    for path in live_files(model, policy, snap):
        if path.endswith(_CODE_SUFFIXES):
            out.append(
                Violation(
                    path,
                    1,
                    "config-only-file",
                    "OpenTofu code in live/: units hold configuration only",
                    "move the code into a module in its own repository, tag it, and pin the tag in the unit's terraform.source",
                )
            )
    for path in ctx.hcl_files:
        body = safe_body(snap, path, out)
        if body is None:
            continue
        local_exprs = locals_exprs(body)
        for btype, labels, inner, line in body["b"]:
            if btype in _CODE_BLOCKS:
                out.append(
                    Violation(
                        path,
                        line,
                        "config-only-block",
                        f"a {btype} block {'.'.join(labels)!r} in Terragrunt configuration: units hold configuration only",
                        "declare it in a module in its own repository and pin that module by tag",
                    )
                )
            elif btype == "generate":
                contents = inner["a"].get("contents")
                if contents is None:
                    continue
                for text in literal_strings(contents[0], local_exprs):
                    match = _INJECTED_RE.search(text)
                    if match:
                        out.append(
                            Violation(
                                path,
                                line,
                                "config-only-generate",
                                f"generate {labels[0] if labels else ''!r} writes a {match.group('kind') or match.group('imp')} block into the unit's code",
                                "generate only backend and provider settings; put resources in a module, and adopt with `invoke adopt`",
                            )
                        )
                        break
    return out


CONFIGURATION_ONLY = Rule(
    name="configuration-only",
    ids=(
        "config-only-file",
        "config-only-block",
        "config-only-generate",
        "hcl-syntax",
        "config-invalid",
    ),
    summary="units hold configuration only: no OpenTofu code, no resources, none generated",
    stages=Stage.CHECK,
    check=check_configuration_only,
)
