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


def _literal_string(data: bytes, node: Any) -> str | None:
    """The value of a quoted string without interpolation (under ``expression`` or
    ``literal_value``), else None."""
    while node is not None and node.type in ("expression", "literal_value") and node.named_children:
        node = node.named_children[0]
    if node is None or node.type != "string_lit":
        return None
    parts = [c for c in node.named_children if c.type != "quoted_template_start"]
    parts = [c for c in parts if c.type != "quoted_template_end"]
    if any(c.type != "template_literal" for c in parts):
        return None
    return "".join(_text(data, c) for c in parts)


def _presence_test(data: bytes, call: Any) -> bool:
    """Whether the call is one side of ``== ""`` or ``!= ""``: only whether it is empty is read."""
    node = call
    while node.parent is not None and node.parent.type == "expression":
        node = node.parent
    op = node.parent
    if op is None or op.type != "binary_operation":
        return False
    token = next((c for c in op.children if c.type in ("==", "!=")), None)
    if token is None:
        return False
    others = [c for c in op.named_children if c != node]
    return len(others) == 1 and _literal_string(data, others[0]) == ""


def env_reads(data: bytes, tree: Any = None) -> list[tuple[str | None, int, bool]]:
    """Every ``get_env(NAME, ...)`` in HCL bytes, in order: (NAME when it is a literal string,
    else None; 1-based line; whether the call is only tested for being empty)."""
    out: list[tuple[str | None, int, bool]] = []
    for node in _nodes(syntax_tree(data) if tree is None else tree):
        if node.type != "function_call":
            continue
        name = next((c for c in node.named_children if c.type == "identifier"), None)
        if name is None or _text(data, name) != "get_env":
            continue
        args = next((c for c in node.named_children if c.type == "function_arguments"), None)
        first = args.named_children[0] if args is not None and args.named_children else None
        variable = _literal_string(data, first) if first is not None else None
        out.append((variable, node.start_point[0] + 1, _presence_test(data, node)))
    return out


def _strings(value: Any) -> list[str]:
    """Every string of a JSON value (keys included), in order."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def json_templates(data: bytes) -> list[tuple[int, bytes]]:
    """The templates of a Terragrunt configuration in JSON (``*.hcl.json``: Terragrunt
    evaluates every string holding ``${`` or ``%{`` as a template, so ``"${run_cmd(...)}"``
    runs), each as HCL bytes the scanners read (one attribute holding a heredoc of the
    template), with the 1-based line of the JSON file it comes from (where the string's
    start is found, else 1). Bytes that are not JSON yield none: Terragrunt refuses them."""
    import json

    try:
        document = json.loads(data)
    except ValueError:
        return []
    text = data.decode("utf-8", "replace")
    out: list[tuple[int, bytes]] = []
    for string in _strings(document):
        if "${" not in string and "%{" not in string:
            continue
        marker = "EOT"
        while marker in string:
            marker += "X"
        encoded = json.dumps(string)[1:-1]
        at = text.find(encoded[:40]) if encoded else -1
        line = text.count("\n", 0, at) + 1 if at >= 0 else 1
        hcl = f"x = <<{marker}\n{string}\n{marker}\n".encode()
        out.append((line, hcl))
    return out
