"""Any text as inline Markdown that shows it as written (GitHub's CommonMark). Pure.

A unit path, a resource address (a ``for_each`` key holds any character), a gate
reason or an error line must never open HTML (``<!--``, ``</details>``), end its
code span early or split a table row. :mod:`tooling.core.redact` registers each
secret in the forms :func:`plain` and :func:`code` write it too.
"""

from __future__ import annotations

import re

_TICKS = re.compile(r"`+")


_TICKS = re.compile(r"`+")


def fence_for(text: str) -> str:
    """The backtick fence for a block of ``text``: three, or one more than its longest
    run of backticks (found in one pass: a plan text may hold a 100,000-long run)."""
    return "`" * max(3, max((len(m) for m in _TICKS.findall(text)), default=0) + 1)


def code(text: str, *, cell: bool = False) -> str:
    """``text`` as one inline code span, whatever it holds: its delimiter is longer than
    any run of backticks inside, and a line break is a space; in a table ``cell`` each
    ``|`` is escaped (GitHub splits the row on it even inside code)."""
    text = " ".join(text.splitlines())
    ticks = "`" * (max((len(m) for m in _TICKS.findall(text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    span = f"{ticks}{pad}{text}{pad}{ticks}"
    return span.replace("|", "\\|") if cell else span


def plain(text: str) -> str:
    """``text`` as inline Markdown that shows it as written: no HTML (``<``, ``>``, ``&``
    as entities), no code span (a backtick escaped), no table cell split (``|``)."""
    text = " ".join(text.splitlines())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("\\", "\\\\").replace("`", "\\`").replace("|", "\\|")
