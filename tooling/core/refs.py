"""Module refs in ``terragrunt.hcl``: find them with the one HCL parser, edit them byte-exact.

Pure functions over the text: the caller reads the file, asks for tags
elsewhere, and writes the result.

- :func:`find_source_lines` finds ``source`` attributes in top-level
  ``terraform { ... }`` blocks. The file is parsed by tree-sitter (through
  :func:`tooling.model.hcl.syntax_tree`, the same parser that reads the model),
  so text inside strings, comments and heredocs is never mistaken for
  structure, and every node keeps its position.
- :func:`bump_text` replaces the ref (and, for a commit SHA pinned with a
  ``# vX.Y.Z`` comment, the SHA and the comment) and keeps every other byte.
- :func:`resolve_local_source` follows ``source = local.base`` to the string
  literal that holds the ref.

All spans are offsets into the ``str`` that was passed in; tree-sitter's byte
offsets are converted once, so a byte-order mark or a non-ASCII comment never
shifts an edit.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tooling.errors import ToolingError
from tooling.model import hcl
from tooling.model.sources import (
    ModuleSource,
    is_commit_sha,
    parse_query,
    parse_source,
    ref_from_query,
)
from tooling.model.versions import parse_version

__all__ = [
    "ResolvedSource",
    "Segment",
    "SourceLine",
    "Unresolvable",
    "bump_text",
    "find_source_lines",
    "resolve_local_source",
]

_SAFE_REF_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/+-]*")
_LOCAL_REF_RE = re.compile(r"local\.([A-Za-z_][A-Za-z0-9_-]*)")
_OPAQUE = "\x00"


# --------------------------------------------------------------------------- reading the tree


@dataclass(frozen=True)
class _Part:
    """A run of a quoted string: a literal, or the expression inside ``${...}`` / ``%{...}``."""

    kind: Literal["literal", "interp", "directive"]
    start: int
    end: int


@dataclass(frozen=True)
class _Value:
    """An attribute's expression: its span and, for a quoted string, its parts."""

    start: int
    end: int
    parts: tuple[_Part, ...] | None  # None: not a quoted string


@dataclass(frozen=True)
class _Attr:
    name: str
    line: int
    value: _Value


@dataclass(frozen=True)
class _Scan:
    sources: tuple[_Attr, ...]
    locals: dict[str, _Attr]
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


def _parts(quoted: Any, at: _Offsets) -> tuple[_Part, ...]:
    """The literal runs and template expressions of a ``"..."`` node, in order."""
    kids = quoted.children
    parts: list[_Part] = []
    pos = at(kids[0].end_byte)  # after the opening quote
    for kid in kids[1:-1]:
        if kid.type not in ("template_interpolation", "template_directive"):
            continue
        start = at(kid.start_byte)
        if start > pos:
            parts.append(_Part("literal", pos, start))
        if kid.type == "template_interpolation":
            parts.append(_Part("interp", start + 2, at(kid.end_byte) - 1))
        else:  # report the opening directive only: `%{ if x }`
            end = _first(kid, "template_directive_end")
            parts.append(
                _Part("directive", start + 2, at(end.start_byte) if end else at(kid.end_byte) - 1)
            )
        pos = at(kid.end_byte)
    end = at(kids[-1].start_byte)  # the closing quote
    if end > pos:
        parts.append(_Part("literal", pos, end))
    return tuple(parts)


def _value(expr: Any, at: _Offsets) -> _Value:
    kids = expr.named_children
    parts: tuple[_Part, ...] | None = None
    if len(kids) == 1 and kids[0].type in ("template_expr", "literal_value"):
        inner = kids[0].named_children[0] if kids[0].named_children else None
        if inner is not None and inner.type in ("quoted_template", "string_lit"):
            parts = _parts(inner, at)
    return _Value(at(expr.start_byte), at(expr.end_byte), parts)


def _attributes(block: Any, data: bytes, at: _Offsets) -> list[_Attr]:
    """The attributes directly in ``block``'s body (a one-line block has no body node)."""
    body = next((c for c in block.named_children if c.type == "body"), block)
    out: list[_Attr] = []
    for child in body.named_children:
        if child.type != "attribute":
            continue
        name = data[child.named_children[0].start_byte : child.named_children[0].end_byte].decode()
        expr = next((c for c in child.named_children[1:] if c.type == "expression"), None)
        if expr is not None:
            out.append(_Attr(name, child.start_point[0] + 1, _value(expr, at)))
    return out


def _scan(text: str) -> _Scan:
    data = text.encode("utf-8", errors="surrogatepass")
    root = hcl.syntax_tree(data)
    if root.has_error:
        line, col, what = hcl.error_at(root)
        raise ToolingError(f"line {line}:{col}: HCL syntax error ({what}); fix the HCL first")
    at = _Offsets(text, data)
    sources: list[_Attr] = []
    locals_: dict[str, _Attr] = {}
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
    return _Scan(tuple(sources), locals_, tuple(sorted(comments)))


# --------------------------------------------------------------------------- resolution


@dataclass(frozen=True)
class Segment:
    """A literal run of a quoted string: its text and its offsets in the file."""

    text: str
    start: int
    end: int


@dataclass(frozen=True)
class _Piece:
    text: str
    offset: int | None  # None: an opaque (unresolvable) interpolation
    reason: str | None = None


def _pieces_for_parts(
    text: str, parts: Sequence[_Part], scan: _Scan, seen: frozenset[str]
) -> list[_Piece]:
    pieces: list[_Piece] = []
    for part in parts:
        if part.kind == "literal":
            pieces.append(_Piece(text[part.start : part.end], part.start))
            continue
        expr = text[part.start : part.end].strip().strip("~").strip()
        local = _LOCAL_REF_RE.fullmatch(expr)
        if part.kind == "interp" and local:
            pieces.extend(_pieces_for_local(text, local.group(1), scan, seen))
        elif part.kind == "directive":
            pieces.append(
                _Piece(_OPAQUE, None, f"the template directive %{{{expr}}} is not a literal")
            )
        else:
            pieces.append(
                _Piece(_OPAQUE, None, f"${{{expr}}} is not a literal or a local of this file")
            )
    return pieces


def _pieces_for_local(text: str, name: str, scan: _Scan, seen: frozenset[str]) -> list[_Piece]:
    if name in seen:
        return [_Piece(_OPAQUE, None, f"local.{name} refers to itself")]
    attr = scan.locals.get(name)
    if attr is None:
        return [
            _Piece(
                _OPAQUE,
                None,
                f"local.{name} is not defined in this file (included locals are not followed)",
            )
        ]
    return _pieces_for_value(text, attr.value, scan, seen | {name}, f"local.{name}")


def _pieces_for_value(
    text: str, value: _Value, scan: _Scan, seen: frozenset[str], what: str
) -> list[_Piece]:
    if value.parts is not None:
        return _pieces_for_parts(text, value.parts, scan, seen)
    written = text[value.start : value.end]
    local = _LOCAL_REF_RE.fullmatch(written)
    if local:
        return _pieces_for_local(text, local.group(1), scan, seen)
    return [_Piece(_OPAQUE, None, f"{what} is the expression `{written}`, not a string literal")]


@dataclass(frozen=True)
class _Resolution:
    source: ModuleSource | None
    ref: str | None
    ref_span: tuple[int, int] | None
    unresolved: str | None


def _resolve(pieces: Sequence[_Piece]) -> _Resolution:
    composed = "".join(p.text for p in pieces)
    starts: list[int] = []
    pos = 0
    for piece in pieces:
        starts.append(pos)
        pos += len(piece.text)
    opaque = [p for p in pieces if p.offset is None]

    def to_file(span: tuple[int, int]) -> tuple[tuple[int, int] | None, str | None]:
        a, b = span
        for piece, start in zip(pieces, starts, strict=True):
            end = start + len(piece.text)
            if start <= a and b <= end and (a < end or a == b == end):
                if piece.offset is None:
                    return None, piece.reason
                return (piece.offset + a - start, piece.offset + b - start), None
        touched = [
            p.reason
            for p, s in zip(pieces, starts, strict=True)
            if s < b and a < s + len(p.text) and p.reason
        ]
        return None, touched[0] if touched else "the ref is split across several strings"

    if not opaque:
        source = parse_source(composed)
        if source.ref_span is None:
            return _Resolution(source, source.ref, None, None)
        span, reason = to_file(source.ref_span)
        return _Resolution(source, source.ref, span, reason)

    first_reason = opaque[0].reason
    qmark = composed.find("?")
    if qmark < 0:
        return _Resolution(None, None, None, first_reason)
    query, spans = parse_query(composed, qmark + 1)
    param = "version" if composed.startswith("tfr://") else "ref"
    ref, ref_span = ref_from_query(query, spans, param)
    if ref is None or ref_span is None:
        return _Resolution(None, None, None, first_reason)
    span, reason = to_file(ref_span)
    if span is None:
        return _Resolution(None, None, None, reason)
    return _Resolution(None, ref, span, f"the module is unknown: {first_reason}")


# --------------------------------------------------------------------------- edits


@dataclass(frozen=True)
class SourceLine:
    """One ``source`` attribute of a ``terraform`` block.

    All spans are offsets into the scanned text. When the value reaches the
    ref through locals, ``ref_span`` points into the ``locals`` literal that
    holds it.
    """

    #: 1-based line of the ``source`` keyword
    line: int
    #: the value as written: the string's content without its quotes, or the bare expression
    value_span: tuple[int, int]
    value: str
    #: the value is a quoted string containing ``${...}`` or ``%{...}``
    interpolated: bool
    #: literal runs of a quoted value (one for a plain string, none for a bare expression)
    segments: tuple[Segment, ...]
    #: ``base`` when the value is exactly ``local.base`` or ``"${local.base}"``
    local: str | None
    #: the parsed source after following locals; None when part of it is not literal.
    #: Its own spans index ``source.text``, not the file.
    source: ModuleSource | None
    ref: str | None
    ref_span: tuple[int, int] | None
    #: version written in a comment after a SHA ref on the same line (``# v1.2.3``)
    comment_version: str | None
    comment_version_span: tuple[int, int] | None
    #: why ``source`` or ``ref_span`` is unknown
    unresolved: str | None

    @property
    def pinned_by_sha(self) -> bool:
        return is_commit_sha(self.ref)

    @property
    def current_ref(self) -> str | None:
        """The version this line is at: the comment's version for a SHA pin, else the ref."""
        if self.pinned_by_sha and self.comment_version is not None:
            return self.comment_version
        return self.ref


_COMMENT_TOKEN_RE = re.compile(r"[^\s=,:;()\[\]\"'`*/#]+(?:/[^\s=,:;()\[\]\"'`*/#]+)*")


def _comment_version(
    text: str, comments: Sequence[tuple[int, int]], after: int
) -> tuple[str | None, tuple[int, int] | None]:
    """First version in the comment that follows offset ``after`` on the same line."""
    line_end = text.find("\n", after)
    line_end = len(text) if line_end < 0 else line_end
    for start, end in comments:
        if start < after or start >= line_end:
            continue
        body_start = start + (1 if text[start] == "#" else 2)
        for match in _COMMENT_TOKEN_RE.finditer(text, body_start, end):
            if parse_version(match.group()):
                return match.group(), (match.start(), match.end())
        return None, None
    return None, None


def find_source_lines(text: str) -> list[SourceLine]:
    """Every ``source = ...`` directly inside a top-level ``terraform { }`` block, in order.

    Raises :class:`ToolingError` (line:column, "fix the HCL first") for a file
    that does not parse.
    """
    scan = _scan(text)
    found: list[SourceLine] = []
    for attr in scan.sources:
        value = attr.value
        interpolated = False
        segments: tuple[Segment, ...] = ()
        local: str | None = None
        if value.parts is not None:
            parts = value.parts
            value_span = (value.start + 1, value.end - 1)
            interpolated = any(p.kind != "literal" for p in parts)
            segments = tuple(
                Segment(text[p.start : p.end], p.start, p.end) for p in parts if p.kind == "literal"
            )
            if len(parts) == 1 and parts[0].kind == "interp":
                inner = _LOCAL_REF_RE.fullmatch(
                    text[parts[0].start : parts[0].end].strip().strip("~").strip()
                )
                local = inner.group(1) if inner else None
        else:
            value_span = (value.start, value.end)
            bare = _LOCAL_REF_RE.fullmatch(text[value.start : value.end])
            local = bare.group(1) if bare else None
        res = _resolve(_pieces_for_value(text, value, scan, frozenset(), "source"))
        comment_version: str | None = None
        comment_span: tuple[int, int] | None = None
        if res.ref_span is not None and is_commit_sha(res.ref):
            comment_version, comment_span = _comment_version(text, scan.comments, res.ref_span[1])
        found.append(
            SourceLine(
                line=attr.line,
                value_span=value_span,
                value=text[value_span[0] : value_span[1]],
                interpolated=interpolated,
                segments=segments,
                local=local,
                source=res.source,
                ref=res.ref,
                ref_span=res.ref_span,
                comment_version=comment_version,
                comment_version_span=comment_span,
                unresolved=res.unresolved,
            )
        )
    return found


def bump_text(
    text: str,
    old_ref: str,
    new_ref: str,
    *,
    identity: str | None = None,
    new_sha_comment: str | None = None,
) -> str:
    """Replace ``old_ref`` by ``new_ref`` in every matching ``source``; keep every other byte.

    A source matches when its current ref (see :attr:`SourceLine.current_ref`)
    is ``old_ref`` and, if ``identity`` is given, its module identity is that
    (sources whose identity cannot be resolved then never match). For a
    source pinned to a commit SHA with a ``# vX.Y.Z`` comment, ``old_ref`` is
    the comment's version: the SHA is replaced by ``new_sha_comment`` (the new
    tag's 40-hex commit) and the comment's version by ``new_ref``. A ref that
    lives in a ``locals`` literal is edited there, once. Returns ``text``
    unchanged when nothing matches.
    """
    if not _SAFE_REF_RE.fullmatch(new_ref):
        raise ToolingError(
            f"refusing to write ref {new_ref!r}: use letters, digits and . _ / + - only"
        )
    if new_sha_comment is not None and not is_commit_sha(new_sha_comment):
        raise ToolingError(f"new_sha_comment must be a 40-hex commit SHA, got {new_sha_comment!r}")
    edits: dict[tuple[int, int], str] = {}
    for line in find_source_lines(text):
        if line.ref_span is None or line.current_ref != old_ref:
            continue
        if identity is not None and (line.source is None or line.source.identity != identity):
            continue
        if line.pinned_by_sha and line.comment_version_span is not None:
            if new_sha_comment is None:
                raise ToolingError(
                    f"line {line.line} pins {old_ref} by commit SHA; pass the commit SHA of "
                    f"{new_ref} (new_sha_comment) to update both the SHA and its comment"
                )
            edits[line.ref_span] = new_sha_comment
            edits[line.comment_version_span] = new_ref
        else:
            edits[line.ref_span] = new_ref
    out = text
    previous_start = len(text) + 1
    for (start, end), replacement in sorted(edits.items(), reverse=True):
        if end > previous_start:  # pragma: no cover - spans come from disjoint nodes
            raise ToolingError("overlapping edits; this is a bug in tooling.core.refs")
        out = out[:start] + replacement + out[end:]
        previous_start = start
    return out


@dataclass(frozen=True)
class ResolvedSource:
    """Where the ref of a ``local`` source string lives."""

    local: str
    ref: str
    #: offsets of the ref in the text: edit here
    ref_span: tuple[int, int]
    #: the whole source after following locals; None if part of it is not literal
    source: ModuleSource | None


@dataclass(frozen=True)
class Unresolvable:
    """A ref that cannot be located in a literal of this file, and why."""

    reason: str


def resolve_local_source(text: str, local_name: str) -> ResolvedSource | Unresolvable:
    """Follow ``local.<local_name>`` (through ``${local.x}`` and aliases) to the literal holding its ref."""
    scan = _scan(text)
    if local_name not in scan.locals:
        return Unresolvable(
            f"local.{local_name} is not defined in this file (included locals are not followed)"
        )
    res = _resolve(_pieces_for_local(text, local_name, scan, frozenset()))
    if res.ref is None or res.ref_span is None:
        if res.unresolved:
            return Unresolvable(res.unresolved)
        return Unresolvable(
            f"local.{local_name} has no ?ref= (or ?version=): the source is not pinned"
        )
    return ResolvedSource(local_name, res.ref, res.ref_span, res.source)
