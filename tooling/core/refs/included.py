"""The literal holding a module ref written through an included file's locals. Pure.

Gruntwork's layout writes a unit's source as
``"${include.envcommon.locals.base_source_url}?ref=v0.8.0"`` (the URL a local
of ``_envcommon/mysql.hcl``, the ref the unit's own) or as
``include.envcommon.locals.source_url`` (the whole source, ref included, in the
included file). Neither is a literal of the unit's file. :func:`locate` finds
where the ref is written, but only when the included local is itself made of
literals (through ``local.x`` of its own file, as :mod:`.resolve` follows
them) and the text so composed is exactly the source the model evaluated: a
source that also depends on ``get_env()`` or a function is never taken for a
literal.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tooling.core.refs.resolve import Piece, pieces_for_local, resolve
from tooling.core.refs.tree import scan_file
from tooling.errors import ToolingError

_NAME = r"[A-Za-z_][\w-]*"
_INTERP_RE = re.compile(rf"\$\{{\s*include\.{_NAME}\.locals\.({_NAME})\s*\}}")
_BARE_RE = re.compile(rf"include\.{_NAME}\.locals\.({_NAME})")


def _literal_local(
    files: Sequence[tuple[str, str]], name: str
) -> tuple[str, str, list[Piece]] | None:
    """The first included file defining ``local.name`` and its pieces, if all literal."""
    for path, text in files:
        try:
            scan = scan_file(text)
        except ToolingError:
            continue
        if name not in scan.locals:
            continue
        pieces = pieces_for_local(text, name, scan, frozenset())
        return (path, text, pieces) if all(p.offset is not None for p in pieces) else None
    return None


def locate(
    value: str,
    own_ref_span: tuple[int, int] | None,
    included: Sequence[tuple[str, str]],
    evaluated: str,
) -> tuple[str | None, tuple[int, int]] | None:
    """Where the ref of a source written through an included local lies: (None, span) in
    the unit's own file, (included file, span) in an included file; None when ``value``
    (the source as written: a quoted string's content, or the bare expression) is not
    such a source, or its literals do not compose ``evaluated``."""
    whole = _BARE_RE.fullmatch(value) or _INTERP_RE.fullmatch(value)
    if whole is not None:
        found = _literal_local(included, whole.group(1))
        if found is None:
            return None
        path, _text, pieces = found
        res = resolve(pieces)
        if "".join(p.text for p in pieces) != evaluated or res.ref_span is None:
            return None
        return path, res.ref_span
    head = _INTERP_RE.match(value)
    if head is None or own_ref_span is None:
        return None
    rest = value[head.end() :]
    if "${" in rest or "%{" in rest:
        return None
    found = _literal_local(included, head.group(1))
    if found is None or "".join(p.text for p in found[2]) + rest != evaluated:
        return None
    return None, own_ref_span
