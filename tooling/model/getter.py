"""How go-getter reads the parts of a module source that can be spelled several ways. Pure.

A module source is fetched by go-getter (through Terragrunt), which parses it
with Go's ``net/url``: the query is percent-decoded (``re%66`` is ``ref``, ``+``
is a space) and a key given twice keeps its *first* value; the path is
percent-decoded too, and the server (or git's HTTP client) resolves ``.`` and
``..`` segments. What the tooling shows and checks must be what runs, so:

- :func:`decode` decodes one query key or value as Go's ``QueryUnescape`` does;
- :func:`query_problem` says why a query is ambiguous (a key given twice once
  decoded, a malformed escape, a ``;`` separator): such a source is refused,
  never guessed;
- :func:`clean_path` decodes a repository path and removes its dot segments
  (RFC 3986), so ``platform-modules/../evil-org/backdoor`` is checked as
  ``evil-org/backdoor``;
- :func:`clean_subdir` does the same for the ``//subdir`` and refuses one that
  leaves the repository.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["clean_path", "clean_subdir", "decode", "query_problem"]

_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_ESCAPE = re.compile(rb"%([0-9A-Fa-f]{2})")


def decode(text: str, *, plus: bool = True) -> str | None:
    """``text`` percent-decoded (``+`` as a space when ``plus``, as in a query); None when
    an escape is malformed or the bytes are not UTF-8 (Go would refuse or mangle it)."""
    if _BAD_ESCAPE.search(text):
        return None
    raw = text.replace("+", " ") if plus else text
    try:
        return _ESCAPE.sub(lambda m: bytes([int(m[1], 16)]), raw.encode("utf-8")).decode("utf-8")
    except UnicodeDecodeError:
        return None


def query_problem(query: Sequence[tuple[str, str]]) -> str | None:
    """Why go-getter could read ``query`` (raw ``key=value`` pairs) otherwise than it is
    written; None when every key is written once and decodes cleanly."""
    seen: dict[str, str] = {}
    for key, value in query:
        if not key and not value:
            continue  # an empty piece (``?a=1&&b=2``): Go skips it
        written = f"{key}={value}"
        if ";" in key or ";" in value:
            return f"the query separates parameters with ';' in {written!r} (Go refuses it)"
        name = decode(key)
        if name is None or decode(value) is None:
            return f"the query parameter {written!r} has a malformed percent-escape"
        if name in seen:
            return (
                f"the query gives {name!r} twice ({seen[name]!r} and {written!r}); "
                "go-getter takes the first"
            )
        seen[name] = written
    return None


def _dot_segments(segments: Sequence[str]) -> tuple[list[str], bool]:
    """RFC 3986 ``remove_dot_segments`` on a path's segments: (result, climbed above the root)."""
    out: list[str] = []
    above = False
    for segment in segments:
        if segment in ("", "."):
            continue
        if segment == "..":
            if out:
                out.pop()
            else:
                above = True
            continue
        out.append(segment)
    return out, above


def clean_path(raw: str) -> str | None:
    """A repository path as the server sees it: decoded, dot segments removed, no leading or
    trailing slash (``.git`` kept); None when it does not decode."""
    decoded = decode(raw, plus=False)
    if decoded is None:
        return None
    segments, _above = _dot_segments(decoded.split("/"))
    return "/".join(segments)


def clean_subdir(raw: str) -> tuple[str | None, str | None]:
    """(subdir, problem): the ``//subdir`` decoded with its dot segments removed (None when
    empty), or why it is refused (it does not decode, or it leaves the repository)."""
    decoded = decode(raw, plus=False)
    if decoded is None:
        return None, f"the subdirectory {raw!r} has a malformed percent-escape"
    segments, above = _dot_segments(decoded.split("/"))
    if above:
        return None, f"the subdirectory {raw!r} climbs out of the module repository"
    return "/".join(segments) or None, None
