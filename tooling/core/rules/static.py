"""Each unit's static form, which the verifier's rules judge. Pure.

``invoke check`` and the verifier before each unit's Terragrunt process
(:mod:`tooling.engine.rules.verify`) build it from the HCL they read: the unit's file and
the files it reads merged (the *rendered* side), and the root file plus the
``[check.allowed_generate]`` files (the *declared* side), in the shape
``terragrunt render --format json`` prints. A literal is its value; anything
computed stands as its expression, so two blocks compare equal only when they are
written the same way, and a computed value never passes as an allowed one. The
:class:`~tooling.core.rules.rule.Context` carries these (:func:`static_units`) to
the rules (:mod:`tooling.core.rules.enforce`): check and plan never disagree.
"""

from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Iterable, Mapping
from typing import Any

from tooling.core.rules.config_only import literal_strings
from tooling.core.rules.enforce import ROLE_ATTRS
from tooling.core.rules.rule import UnitFacts, UnitRender
from tooling.core.rules.snapshot import Snapshot, safe_body, unit_file
from tooling.model.policy import CheckPolicy
from tooling.model.units import Model

_TOP_ATTRS = (*ROLE_ATTRS, "terraform_binary", "download_dir")
_HOOKS = ("before_hook", "after_hook", "error_hook")


def static_value(expr: Any) -> Any:
    """A literal's value; a computed expression as its text (present, and equal only to itself)."""
    if isinstance(expr, tuple | list) and expr:
        kind = expr[0]
        if kind == "lit":
            return expr[1]
        if kind == "tmpl":  # a template: its literal runs kept, each hole as its expression
            return "".join(
                p[1]
                if isinstance(p, tuple | list) and p and p[0] == "lit"
                else str(static_value(p))
                for p in expr[1]
            )
        if kind == "tup":
            return [static_value(e) for e in expr[1]]
        if kind == "obj" and all(
            isinstance(k, tuple | list) and k and k[0] == "lit" for k, _v in expr[1]
        ):
            return {str(k[1]): static_value(v) for k, v in expr[1]}
    return "${" + repr(_without_lines(expr)) + "}"


def _without_lines(expr: Any) -> Any:
    if isinstance(expr, tuple | list):
        if expr and expr[0] == "opaque":
            return ("opaque", *expr[2:])
        return tuple(_without_lines(e) for e in expr)
    return expr


def _attrs(inner: Mapping[str, Any]) -> dict[str, Any]:
    return {name: static_value(value[0]) for name, value in inner["a"].items()}


def static_config(bodies: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The parts of a render the rules read, from parsed HCL bodies (the included files
    first, the unit last: a later block of the same name replaces an earlier one)."""
    out: dict[str, Any] = {}
    for body in bodies:
        for name in _TOP_ATTRS:
            if name in body["a"]:
                out[name] = static_value(body["a"][name][0])
        for btype, labels, inner, _line in body["b"]:
            label = labels[0] if labels else ""
            if btype == "generate":
                out.setdefault("generate", {})[label] = _attrs(inner)
            elif btype == "remote_state":
                out["remote_state"] = _attrs(inner)
            elif btype == "engine":
                out["engine"] = _attrs(inner) or {"set": True}
            elif btype == "errors":
                kinds: dict[str, list[Any]] = {}
                for kind, _l, block, _n in inner["b"]:
                    kinds.setdefault(kind, []).append(_attrs(block))
                out["errors"] = kinds or {"block": [True]}
            elif btype == "dependency":
                out.setdefault("dependency", {})[label] = _attrs(inner)
            elif btype == "terraform":
                tf = out.setdefault("terraform", {})
                extra = tf.setdefault("extra_arguments", {})
                for kind, labs, block, _n in inner["b"]:
                    if kind == "extra_arguments":
                        extra[labs[0] if labs else ""] = _attrs(block)
                    elif kind in _HOOKS:  # a later file's hook of that name replaces it
                        tf.setdefault(kind, {})[labs[0] if labs else ""] = _attrs(block)
    return out


def _unmerged(body: Mapping[str, Any] | None) -> set[str]:
    """The file names (literal parts of their paths) the unit includes with
    ``merge_strategy = "no_merge"``: their blocks are not the unit's."""
    names: set[str] = set()
    for btype, _labels, inner, _line in body["b"] if body else []:
        strategy = inner["a"].get("merge_strategy")
        path = inner["a"].get("path")
        if btype == "include" and strategy and static_value(strategy[0]) == "no_merge" and path:
            names.update(
                t.rsplit("/", 1)[-1]
                for t in literal_strings(path[0], {})
                if t.rsplit("/", 1)[-1].endswith(".hcl")
            )
    return names


def _declares(path: str, root_file: str, policy: CheckPolicy) -> bool:
    return posixpath.basename(path) == root_file or any(
        fnmatch.fnmatchcase(path, p) for p in policy.allowed_generate
    )


def static_units(
    model: Model | None, policy: CheckPolicy, snap: Snapshot, root_file: str = "root.hcl"
) -> tuple[UnitRender, ...]:
    """Every unit's static form, both sides, in the model's order (a unit the model could
    not read, or whose file the snapshot lacks, is left out)."""
    if model is None:
        return ()
    out: list[UnitRender] = []
    for path in model.order:
        unit = model.units[path]
        own = unit_file(unit)
        if unit.error or own not in snap.paths:
            continue
        read = sorted(
            (r for r in unit.reads if r.endswith(".hcl") and r != own and r in snap.paths),
            key=lambda p: p.count("/"),
        )
        bodies = {}
        for f in (*read, own):
            body = safe_body(snap, f, [])
            if body is not None:
                bodies[f] = body
        unmerged = _unmerged(bodies.get(own))
        rendered = static_config(
            b for f, b in bodies.items() if not any(f.endswith(n) for n in unmerged)
        )
        declared = static_config(b for f, b in bodies.items() if _declares(f, root_file, policy))
        facts = UnitFacts(path, unit.tier, root_file, {f: snap.text(f) for f in bodies})
        out.append(UnitRender(rendered, declared, facts))
    return tuple(out)
