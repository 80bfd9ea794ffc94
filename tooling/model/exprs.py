"""Pure helpers of the Terragrunt evaluator: unknown values, HCL functions, body walks."""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable, Iterable
from typing import Any

import yaml

from tooling.model.hcl import Body, Expr

#: functions whose first argument is a file the unit reads
READ_FUNCTIONS = frozenset(
    {
        "file",
        "templatefile",
        "read_tfvars_file",
        "read_terragrunt_config",
        "sops_decrypt_file",
        "filebase64",
    }
)


class _Unknown:
    """A value the static evaluator cannot know (dependency outputs, env without default...)."""

    def __repr__(self) -> str:
        return "<unknown>"


UNKNOWN: Any = _Unknown()


def norm(path: str) -> str:
    return posixpath.normpath(path)


def to_str(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def binary(op: str, left: Any, right: Any) -> Any:
    if left is UNKNOWN or right is UNKNOWN:
        return UNKNOWN
    try:
        if op == "==":
            return left == right
        if op == "!=":
            return left != right
        if op == "!":
            return (not right) if isinstance(right, bool) else UNKNOWN
        if op == "&&":
            return bool(left) and bool(right)
        if op == "||":
            return bool(left) or bool(right)
        if op == "+":
            return left + right
        if op == "-":
            return left - right
    except TypeError:
        return UNKNOWN
    return UNKNOWN


class Partial(dict[str, Any]):
    """An object the model builds with only some of its attributes (``include.NAME``,
    ``read_terragrunt_config()``'s result): a missing one is unknown, not an error."""


def _flatten(items: list[Any]) -> list[Any]:
    out: list[Any] = []
    for item in items:
        out.extend(_flatten(item) if isinstance(item, list) else [item])
    return out


def _decoded(value: Any) -> Any:
    """Decoded YAML/JSON as HCL sees it: numbers, strings, bools, lists and objects."""
    if isinstance(value, dict):
        return {str(k): _decoded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decoded(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)  # a YAML date or timestamp: a string to HCL


PURE_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "yamldecode": lambda text: _decoded(yaml.safe_load(text)),
    "jsondecode": lambda text: _decoded(json.loads(text)),
    "contains": lambda items, value: value in items,
    "length": len,
    "keys": lambda m: sorted(m),
    "values": lambda m: [m[k] for k in sorted(m)],
    "startswith": lambda s, p: s.startswith(p),
    "endswith": lambda s, p: s.endswith(p),
    "tolist": list,
    "flatten": _flatten,
    "compact": lambda items: [i for i in items if i not in (None, "")],
    "distinct": lambda items: list(dict.fromkeys(items)),
    "element": lambda items, i: items[i % len(items)],
    "basename": posixpath.basename,
    "dirname": posixpath.dirname,
    "abspath": posixpath.normpath,
    "lower": str.lower,
    "upper": str.upper,
    "trimspace": str.strip,
    "replace": lambda s, a, b: s.replace(a, b),
    "trimprefix": lambda s, p: s.removeprefix(p),
    "trimsuffix": lambda s, p: s.removesuffix(p),
    "join": lambda sep, items: sep.join(to_str(i) for i in items),
    "split": lambda sep, s: s.split(sep),
    "merge": lambda *maps: {k: v for m in maps for k, v in m.items()},
    "lookup": lambda m, k, *d: m.get(k, d[0]) if d else m[k],
    "concat": lambda *lists: [x for lst in lists for x in lst],
    "coalesce": lambda *xs: next(x for x in xs if x not in (None, "")),
    "tostring": to_str,
    "format": lambda fmt, *a: (
        fmt.replace("%%", "\0")
        .replace("%s", "{}")
        .replace("%d", "{}")
        .format(*a)
        .replace("\0", "%")
    ),
}


def locals_exprs(body: Body) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for btype, _labels, inner, _line in body["b"]:
        if btype == "locals":
            out.update(inner["a"])
    return out


SCANNED = READ_FUNCTIONS | {"find_in_parent_folders", "mark_as_read", "mark_glob_as_read"}
#: functions that catch the errors of their arguments, as Terragrunt's do
GUARDS = frozenset({"try", "can"})


def mentions_reads(expr: Any) -> bool:
    """Whether ``expr`` calls a read function anywhere inside."""
    if isinstance(expr, tuple):
        if expr and expr[0] == "call" and expr[1] in SCANNED:
            return True
        return any(mentions_reads(part) for part in expr[1:])
    if isinstance(expr, list):
        return any(mentions_reads(part) for part in expr)
    return False


def outer_calls(body: Body) -> Iterable[tuple[Expr, bool]]:
    """Calls of read functions, not descending into them (their arguments are evaluated with them).

    Each comes with ``guarded``: whether it sits inside ``try()``/``can()``,
    where Terragrunt catches its errors. A ``for`` expression that holds a read
    call is yielded whole: the call's argument is usually the loop variable.
    """
    stack: list[tuple[Expr, bool]] = [(e, False) for e, _line in body["a"].values()]
    blocks = list(body["b"])
    while blocks:
        _btype, _labels, inner, _line = blocks.pop()
        stack.extend((e, False) for e, _l in inner["a"].values())
        blocks.extend(inner["b"])
    while stack:
        expr, guarded = stack.pop()
        kind = expr[0]
        if kind == "call" and expr[1] in SCANNED:
            yield expr, guarded
            continue
        if kind == "for":
            if mentions_reads(expr):
                yield expr, guarded
            continue
        if kind in ("tmpl", "tup"):
            stack.extend((e, guarded) for e in expr[1])
        elif kind == "call":
            inner_guard = guarded or expr[1] in GUARDS
            stack.extend((e, inner_guard) for e in expr[2])
        elif kind == "obj":
            for key, value in expr[1]:
                stack.extend(((key, guarded), (value, guarded)))
        elif kind == "cond":
            stack.extend((e, guarded) for e in expr[1:])
        elif kind == "bin":
            stack.extend((e, guarded) for e in expr[2:])
        elif kind == "post":
            stack.append((expr[1], guarded))
            stack.extend((k, guarded) for k in expr[2] if isinstance(k, tuple))
        elif kind == "opaque":
            stack.extend((e, guarded) for e in expr[2])


def blocks_of(body: Body, btype: str) -> list[list[Any]]:
    return [b for b in body["b"] if b[0] == btype]
