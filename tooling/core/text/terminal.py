"""Any text as a terminal shows it literally. Pure.

A unit path, a runner's or an approver's name, an error line from a tool or a
record read back may hold characters a terminal acts on instead of showing:
escape sequences (ESC, CSI, OSC: move the cursor, rewrite a line, set the
window title, hide text), other control characters, and the bidirectional
controls that reorder what follows (U+202E shows ``exe.txt`` for ``txt.exe``).
:func:`escape` writes each as its Python escape (``\\x1b``, ``\\u202e``), so
what is shown is what is there. :mod:`tooling.io.redacting` applies it to all
of the tooling's own output; :mod:`tooling.core.text.markdown` to the report's text.
"""

from __future__ import annotations

import re

#: the bidirectional formatting characters (Unicode's Bidi_Control property)
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"

#: C0 controls but tab and line feed, DEL, C1 controls, the line and paragraph
#: separators, and the bidirectional controls
_UNSAFE = re.compile(f"[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f\\u2028\\u2029{BIDI_CONTROLS}]")


def _escaped(found: re.Match[str]) -> str:
    char = found.group()
    return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"


def escape(text: str) -> str:
    """``text`` with every character a terminal would act on written as its escape;
    line feeds and tabs are kept (a table's layout), everything else printable is
    unchanged."""
    return _UNSAFE.sub(_escaped, text)


def escape_line(text: str) -> str:
    """``text`` for one line of output (a name, a record): :func:`escape`, and line
    feeds and tabs escaped too, so a value can neither start a line of its own nor
    shift the columns."""
    return escape(text).replace("\n", "\\x0a").replace("\t", "\\x09")
