"""Reading a ``terragrunt.hcl`` for its refs: the ``source`` attributes of top-level
``terraform`` blocks, the top-level ``locals``, and every comment, with offsets.

The file is parsed by tree-sitter (:func:`tooling.model.hcl.syntax_tree`, the
parser that reads the model). tree-sitter's byte offsets are converted once
into offsets of the ``str`` that was passed in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from tooling.errors import ToolingError
from tooling.model import hcl

#: ``local.NAME``, written whole
LOCAL_REF_RE = re.compile(r"local\.([A-Za-z_][A-Za-z0-9_-]*)")


@dataclass(frozen=True)
class Part:
    """A run of a quoted string: a literal, or the expression inside ``${...}`` / ``%{...}``."""

    kind: Literal["literal", "interp", "directive"]
    start: int
    end: int


@dataclass(frozen=True)
class Value:
    """An attribute's expression: its span and, for a quoted string, its parts."""

    start: int
    end: int
    parts: tuple[Part, ...] | None  # None: not a quoted string


@dataclass(frozen=True)
class Attr:
    name: str
    line: int
    value: Value


@dataclass(frozen=True)
class Scan:
    sources: tuple[Attr, ...]
    locals: dict[str, Attr]
    #: spans of every comment, in order
    comments: tuple[tuple[int, int], ...]


class _Offsets:
    """Byte offsets into the UTF-8 encoding -> offsets into the text."""

    def __init__(self, text: str, data: bytes) -> None:
        self.data = data
        self.ascii = len(data) == len(text)

    def __call__(self, byte: int) -> int:
        if self.ascii:
            return byte
        return len(self.data[:byte].decode("utf-8", errors="surrogatepass"))


def _first(node: Any, kind: str) -> Any:
    """The first descendant of ``node`` (in document order) of type ``kind``, or None."""
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == kind:
            return current
        stack.extend(reversed(current.children))
    return None


def _parts(quoted: Any, at: _Offsets) -> tuple[Part, ...]:
    """The literal runs and template expressions of a ``"..."`` node, in order."""
    kids = quoted.children
    parts: list[Part] = []
    pos = at(kids[0].end_byte)  # after the opening quote
    for kid in kids[1:-1]:
        if kid.type not in ("template_interpolation", "template_directive"):
            continue
        start = at(kid.start_byte)
        if start > pos:
            parts.append(Part("literal", pos, start))
        if kid.type == "template_interpolation":
            parts.append(Part("interp", start + 2, at(kid.end_byte) - 1))
        else:  # report the opening directive only: `%{ if x }`
            end = _first(kid, "template_directive_end")
            parts.append(
                Part("directive", start + 2, at(end.start_byte) if end else at(kid.end_byte) - 1)
            )
        pos = at(kid.end_byte)
    end = at(kids[-1].start_byte)  # the closing quote
    if end > pos:
        parts.append(Part("literal", pos, end))
    return tuple(parts)


def _value(expr: Any, at: _Offsets) -> Value:
    kids = expr.named_children
    parts: tuple[Part, ...] | None = None
    if len(kids) == 1 and kids[0].type in ("template_expr", "literal_value"):
        inner = kids[0].named_children[0] if kids[0].named_children else None
        if inner is not None and inner.type in ("quoted_template", "string_lit"):
            parts = _parts(inner, at)
    return Value(at(expr.start_byte), at(expr.end_byte), parts)


def _attributes(block: Any, data: bytes, at: _Offsets) -> list[Attr]:
    """The attributes directly in ``block``'s body (a one-line block has no body node)."""
    body = next((c for c in block.named_children if c.type == "body"), block)
    out: list[Attr] = []
    for child in body.named_children:
        if child.type != "attribute":
            continue
        name = data[child.named_children[0].start_byte : child.named_children[0].end_byte].decode()
        expr = next((c for c in child.named_children[1:] if c.type == "expression"), None)
        if expr is not None:
            out.append(Attr(name, child.start_point[0] + 1, _value(expr, at)))
    return out


def scan_file(text: str) -> Scan:
    """The sources, locals and comments of ``text``; a file that does not parse is refused."""
    data = text.encode("utf-8", errors="surrogatepass")
    root = hcl.syntax_tree(data)
    if root.has_error:
        line, col, what = hcl.error_at(root)
        raise ToolingError(f"line {line}:{col}: HCL syntax error ({what}); fix the HCL first")
    at = _Offsets(text, data)
    sources: list[Attr] = []
    locals_: dict[str, Attr] = {}
    comments: list[tuple[int, int]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "comment":
            comments.append((at(node.start_byte), at(node.end_byte)))
        stack.extend(node.children)
    body = next((c for c in root.named_children if c.type == "body"), None)
    for block in body.named_children if body is not None else ():
        if block.type not in ("block", "one_line_block"):
            continue
        kids = block.named_children
        word = data[kids[0].start_byte : kids[0].end_byte].decode()
        if any(k.type in ("string_lit", "identifier") for k in kids[1:]):
            continue  # a labelled block (`terraform "x" {`) is not the unit's
        if word == "terraform":
            sources.extend(a for a in _attributes(block, data, at) if a.name == "source")
        elif word == "locals":
            for attr in _attributes(block, data, at):
                locals_.setdefault(attr.name, attr)
    return Scan(tuple(sources), locals_, tuple(sorted(comments)))
