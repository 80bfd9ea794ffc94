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

Three parts: :mod:`.tree` reads the file (sources, locals, comments, with
offsets), :mod:`.resolve` follows a value through ``${...}`` and locals to the
literal holding its ref, and this module finds and edits the source lines.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from tooling.core.refs.resolve import pieces_for_value, resolve
from tooling.core.refs.tree import LOCAL_REF_RE, scan_file
from tooling.errors import ToolingError
from tooling.model.sources import ModuleSource, is_commit_sha
from tooling.model.versions import parse_version

__all__ = ["Segment", "SourceLine", "bump_text", "find_source_lines"]

_SAFE_REF_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/+-]*")


@dataclass(frozen=True)
class Segment:
    """A literal run of a quoted string: its text and its offsets in the file."""

    text: str
    start: int
    end: int


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
    scan = scan_file(text)
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
                inner = LOCAL_REF_RE.fullmatch(
                    text[parts[0].start : parts[0].end].strip().strip("~").strip()
                )
                local = inner.group(1) if inner else None
        else:
            value_span = (value.start, value.end)
            bare = LOCAL_REF_RE.fullmatch(text[value.start : value.end])
            local = bare.group(1) if bare else None
        res = resolve(pieces_for_value(text, value, scan, frozenset(), "source"))
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
