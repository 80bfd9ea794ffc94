"""What HCL (and Terragrunt) refuse although a tolerant parser would read it. Pure.

:func:`tooling.model.hcl.parse` refuses it with file:line, so that no reader of a
file (the model, the rules, ``invoke units``) shows a value Terragrunt does not use:
bytes that are not UTF-8 or a NUL byte (:func:`refused_bytes`), an attribute set twice
in one body, and in Terragrunt configuration a block Terragrunt reads once given twice
(:func:`once_only`).
"""

from __future__ import annotations

#: blocks Terragrunt reads once per file: a second one of the same type and labels is an
#: error to Terragrunt (``locals``, ``terraform``, ``remote_state``, ``generate "x"``...) or
#: silently replaces the first (``dependency "x"``, ``extra_arguments "x"``): either way the
#: file does not say what runs, so the reader refuses it (OpenTofu code, ``*.tf``, repeats
#: ``locals`` and ``terraform`` legitimately and is not checked for it)
_ONCE_BLOCKS = frozenset(
    {
        "locals",
        "terraform",
        "remote_state",
        "generate",
        "include",
        "dependency",
        "dependencies",
        "exclude",
        "errors",
        "engine",
        "feature",
        "catalog",
        "unit",
        "stack",
        "extra_arguments",
        "before_hook",
        "after_hook",
        "error_hook",
        "retry",
        "ignore",
    }
)
#: OpenTofu's own files, whose blocks repeat legitimately
CODE_SUFFIXES = (".tf", ".tofu", ".tf.json", ".tofu.json")


class Refused(Exception):
    """A file HCL (or Terragrunt) refuses although it parses: where, and why."""

    def __init__(self, line: int, col: int, why: str) -> None:
        super().__init__(why)
        self.line, self.col, self.why = line, col, why


def _position(data: bytes, offset: int) -> tuple[int, int]:
    """1-based line and column of the byte ``offset`` of ``data``."""
    start = data.rfind(b"\n", 0, offset) + 1
    return data.count(b"\n", 0, offset) + 1, offset - start + 1


def refused_bytes(data: bytes) -> tuple[int, int, str] | None:
    """(line, column, why) of the first byte of ``data`` the reader refuses, or None:
    bytes that are not UTF-8 (Terragrunt refuses them outside comments, and a rule
    reading the text would read something else than Terragrunt), or a NUL byte (the
    syntax tree ends there: whatever follows would go unread)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = _position(data, exc.start)
        return line, col, f"not UTF-8: byte 0x{data[exc.start]:02X}"
    nul = data.find(b"\0")
    if nul >= 0:
        line, col = _position(data, nul)
        return line, col, "a NUL byte"
    return None


def once_only(
    seen: dict[tuple[str, ...], int], btype: str, labels: list[str], line: int, col: int
) -> None:
    """Record the block ``btype`` ``labels`` of one body at ``line`` in ``seen``; raise
    :class:`Refused` when it is one of :data:`_ONCE_BLOCKS` and was given before."""
    if btype not in _ONCE_BLOCKS:
        return
    key = (btype, *labels)
    if key in seen:
        shown = " ".join([btype, *(f'"{lab}"' for lab in labels)])
        raise Refused(line, col, f"the block {shown} is given twice, first at line {seen[key]}")
    seen[key] = line
