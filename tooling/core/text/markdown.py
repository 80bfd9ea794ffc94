"""Any text as inline Markdown that shows it as written (GitHub's CommonMark). Pure.

A unit path, a resource address (a ``for_each`` key holds any character), a gate
reason or an error line must never open HTML (``<!--``, ``</details>``), end its
code span early, split a table row, notify anyone (an ``@user`` or ``@org/team``
mention outside code) or reorder what a reader sees (a bidirectional control, an
escape sequence: shown as ``\u202e``, :mod:`tooling.core.text.terminal`).
:mod:`tooling.core.text.redact` registers each secret in the forms :func:`plain` and
:func:`code` write it too.
"""

from __future__ import annotations

import re

from tooling.core.text.terminal import escape

_TICKS = re.compile(r"`+")
#: after ``@``, a zero-width space as an entity: GitHub shows ``@name`` but mentions nobody
NO_MENTION = "@&#8203;"


def fence_for(text: str) -> str:
    """The backtick fence for a block of ``text``: three, or one more than its longest
    run of backticks (found in one pass: a plan text may hold a 100,000-long run)."""
    return "`" * max(3, max((len(m) for m in _TICKS.findall(text)), default=0) + 1)


def fenced(text: str, info: str) -> str:
    """``text`` in a fenced code block of language ``info``, its fence longer than any
    run of backticks inside (:func:`block` escapes what the text itself holds)."""
    fence = fence_for(text)
    return f"{fence}{info}\n{text}\n{fence}"


def code(text: str, *, cell: bool = False) -> str:
    """``text`` as one inline code span, whatever it holds: its delimiter is longer than
    any run of backticks inside, and a line break is a space; in a table ``cell`` each
    ``|`` is escaped (GitHub splits the row on it even inside code)."""
    text = escape(" ".join(text.splitlines()))
    ticks = "`" * (max((len(m) for m in _TICKS.findall(text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    span = f"{ticks}{pad}{text}{pad}{ticks}"
    return span.replace("|", "\\|") if cell else span


def plain(text: str) -> str:
    """``text`` as inline Markdown that shows it as written: no HTML (``<``, ``>``, ``&``
    as entities), no code span (a backtick escaped), no table cell split (``|``), no
    mention (``@`` followed by a zero-width space), no control character."""
    text = escape(" ".join(text.splitlines()))
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = text.replace("@", NO_MENTION)
    return text.replace("\\", "\\\\").replace("`", "\\`").replace("|", "\\|")


def block(text: str) -> str:
    """A text for a fenced code block (an error, a plan): shown as written, every
    control and bidirectional character escaped; mentions do not fire inside code."""
    return escape(text)
