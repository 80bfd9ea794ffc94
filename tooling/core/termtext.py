"""Text from elsewhere, made safe to print on a terminal. Pure.

A name, a path or a message read from a record, a plan or an API may hold
control characters: an escape sequence (``ESC [ … m``, an OSC title or link)
that the terminal would obey, a carriage return that overwrites what came
before, or a bidirectional control that reorders what follows. :func:`escape`
shows each as a Python-style escape (``\\x1b``, ``\\r``, ``\\u202e``), so what is
printed is what the text holds.
"""

from __future__ import annotations

#: the bidirectional controls (Unicode's Bidi_Control set): shown, never obeyed
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _unsafe(char: str) -> bool:
    code = ord(char)
    # C0 (tab and newline included), DEL and C1
    return code < 0x20 or 0x7F <= code <= 0x9F or char in _BIDI


def _escaped(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def escape(text: str) -> str:
    """``text`` with every C0, DEL and C1 control character and every bidirectional
    control shown as an escape (``\\x1b``, ``\\x9b``, ``\\u202e``); a backslash is kept
    as it is. Everything else, non-ASCII letters included, is unchanged."""
    if not any(_unsafe(c) for c in text):
        return text
    return "".join(_escaped(c) if _unsafe(c) else c for c in text)
