"""What HCL text calls and reads, found in its syntax tree (not in its lines). Pure.

The rules that must see a call or a variable however it is laid out (``run_cmd`` and
its parenthesis on two lines inside brackets are one call to HCL) read it here, from
the parser that reads the model (:func:`tooling.model.hcl.syntax_tree`).
"""

from __future__ import annotations

from typing import Any

from tooling.model.hcl import syntax_tree


def _nodes(root: Any) -> list[Any]:
    """Every node under ``root``, in document order."""
    out: list[Any] = []
    stack = [root]
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(reversed(node.children))
    return out


def _text(data: bytes, node: Any) -> str:
    return data[node.start_byte : node.end_byte].decode("utf-8", "replace")


def function_calls(data: bytes, tree: Any = None) -> list[tuple[str, int]]:
    """(function name, 1-based line) of every function call in HCL bytes, nested ones
    included, in order. Comments and strings are not calls; a file with a syntax error
    yields what the parser recovered. ``tree``: the bytes' :func:`syntax_tree`, when the
    caller parsed them already."""
    out: list[tuple[str, int]] = []
    for node in _nodes(syntax_tree(data) if tree is None else tree):
        if node.type == "function_call":
            name = next((c for c in node.named_children if c.type == "identifier"), None)
            if name is not None:
                out.append((_text(data, name), node.start_point[0] + 1))
    return out


def variable_uses(data: bytes, name: str, tree: Any = None) -> list[tuple[str, int]]:
    """Where HCL bytes read the variable ``name`` (``dependency`` in
    ``dependency.vpc.outputs.id``), as (the top-level attribute or block holding the use,
    1-based line), in order. An object's key spelled like the variable is not a use.
    ``tree``: as for :func:`function_calls`."""
    out: list[tuple[str, int]] = []
    for node in _nodes(syntax_tree(data) if tree is None else tree):
        if node.type != "variable_expr" or not node.named_children:
            continue
        if _text(data, node.named_children[0]) == name and not _is_object_key(node):
            out.append((_top_level(node, data), node.start_point[0] + 1))
    return out


def _is_object_key(node: Any) -> bool:
    expr = node.parent
    elem = expr.parent if expr is not None else None
    return (
        elem is not None
        and elem.type == "object_elem"
        and bool(elem.named_children)
        and elem.named_children[0] == expr
        and len(expr.named_children) == 1
    )


def _top_level(node: Any, data: bytes) -> str:
    """The name of the top-level attribute, or the type of the top-level block, holding ``node``."""
    current = node
    while current.parent is not None and not (
        current.parent.type == "body"
        and current.parent.parent is not None
        and current.parent.parent.type == "config_file"
    ):
        current = current.parent
    first = next((c for c in current.named_children if c.type == "identifier"), None)
    return _text(data, first) if first is not None else ""
