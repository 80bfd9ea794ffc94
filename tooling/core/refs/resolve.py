"""Following a ``source`` value through ``${...}`` and ``local.x`` to the literal that holds its ref.

The value is cut into pieces: literal runs (with their offsets in the file)
and opaque pieces (an expression that is not a literal or a local of this
file, with the reason). The composed string is parsed as a module source, and
the ref's span is mapped back into the file, when it lies in one literal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tooling.core.refs.tree import LOCAL_REF_RE, Part, Scan, Value, scan_file
from tooling.model.sources import ModuleSource, parse_query, parse_source, ref_from_query

_OPAQUE = "\x00"


@dataclass(frozen=True)
class Piece:
    """A piece of a composed source: literal text at ``offset`` in the file, or opaque."""

    text: str
    offset: int | None  # None: an opaque (unresolvable) interpolation
    reason: str | None = None


def _pieces_for_parts(
    text: str, parts: Sequence[Part], scan: Scan, seen: frozenset[str]
) -> list[Piece]:
    pieces: list[Piece] = []
    for part in parts:
        if part.kind == "literal":
            pieces.append(Piece(text[part.start : part.end], part.start))
            continue
        expr = text[part.start : part.end].strip().strip("~").strip()
        local = LOCAL_REF_RE.fullmatch(expr)
        if part.kind == "interp" and local:
            pieces.extend(pieces_for_local(text, local.group(1), scan, seen))
        elif part.kind == "directive":
            pieces.append(
                Piece(_OPAQUE, None, f"the template directive %{{{expr}}} is not a literal")
            )
        else:
            pieces.append(
                Piece(_OPAQUE, None, f"${{{expr}}} is not a literal or a local of this file")
            )
    return pieces


def pieces_for_local(text: str, name: str, scan: Scan, seen: frozenset[str]) -> list[Piece]:
    if name in seen:
        return [Piece(_OPAQUE, None, f"local.{name} refers to itself")]
    attr = scan.locals.get(name)
    if attr is None:
        return [
            Piece(
                _OPAQUE,
                None,
                f"local.{name} is not defined in this file (included locals are not followed)",
            )
        ]
    return pieces_for_value(text, attr.value, scan, seen | {name}, f"local.{name}")


def pieces_for_value(
    text: str, value: Value, scan: Scan, seen: frozenset[str], what: str
) -> list[Piece]:
    if value.parts is not None:
        return _pieces_for_parts(text, value.parts, scan, seen)
    written = text[value.start : value.end]
    local = LOCAL_REF_RE.fullmatch(written)
    if local:
        return pieces_for_local(text, local.group(1), scan, seen)
    return [Piece(_OPAQUE, None, f"{what} is the expression `{written}`, not a string literal")]


@dataclass(frozen=True)
class Resolution:
    """The composed source parsed; ``ref_span`` in the file when the ref lies in one literal."""

    source: ModuleSource | None
    ref: str | None
    ref_span: tuple[int, int] | None
    unresolved: str | None


def resolve(pieces: Sequence[Piece]) -> Resolution:
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
            return Resolution(source, source.ref, None, None)
        span, reason = to_file(source.ref_span)
        return Resolution(source, source.ref, span, reason)

    first_reason = opaque[0].reason
    qmark = composed.find("?")
    if qmark < 0:
        return Resolution(None, None, None, first_reason)
    query, spans = parse_query(composed, qmark + 1)
    param = "version" if composed.startswith("tfr://") else "ref"
    ref, ref_span = ref_from_query(query, spans, param)
    if ref is None or ref_span is None:
        return Resolution(None, None, None, first_reason)
    span, reason = to_file(ref_span)
    if span is None:
        return Resolution(None, None, None, reason)
    return Resolution(None, ref, span, f"the module is unknown: {first_reason}")


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
    scan = scan_file(text)
    if local_name not in scan.locals:
        return Unresolvable(
            f"local.{local_name} is not defined in this file (included locals are not followed)"
        )
    res = resolve(pieces_for_local(text, local_name, scan, frozenset()))
    if res.ref is None or res.ref_span is None:
        if res.unresolved:
            return Unresolvable(res.unresolved)
        return Unresolvable(
            f"local.{local_name} has no ?ref= (or ?version=): the source is not pinned"
        )
    return ResolvedSource(local_name, res.ref, res.ref_span, res.source)
