"""A plan report too large for one comment, as one comment and its follow-ups. Pure.

GitHub refuses comments over 65,536 characters. The first comment keeps every
report's head (the verdict, the failures, every destroy and replacement, the
drift, the waiting units with their gate reasons, what happens next, the
table); the per-unit folds (``<details>`` blocks) fill it in order and the
rest moves, whole, to follow-up comments, each with its own hidden marker so
the next push edits them in place. A fold is never cut: one larger than a
comment loses its fenced plan text (the artifact has it), never half a fence. A head that alone
is over a comment is cut at a line break, saying so (:func:`cut_head`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: the follow-up comments' markers: ``PART.format(n=2)`` is the second comment's
PART = "<!-- iac-tooling:plan-report:part-{n} -->"
_PART_RE = re.compile(r"<!-- iac-tooling:plan-report:part-(\d+) -->")
_ROOM = 600  # for the part header and the "continues below" note
_FENCE = re.compile(r"^(`{3,})[^\n]*\n.*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)


def part_number(body: str) -> int | None:
    """The part a follow-up comment's body is (2, 3, ...), None for another comment.
    Only a body that *starts* with the marker is a part: a plan text or error quoted
    in a comment may hold the marker too."""
    found = _PART_RE.match(body)
    return int(found.group(1)) if found else None


def split_report(text: str) -> tuple[str, list[str]]:
    """``text`` as its head (with whatever follows the last fold) and its top-level folds."""
    lines = text.rstrip("\n").split("\n")
    head: list[str] = []
    blocks: list[str] = []
    current: list[str] | None = None
    fence: str | None = None
    for line in lines:
        if current is None:
            if line == "<details>":
                current = [line]
            else:
                head.append(line)
            continue
        current.append(line)
        stripped = line.strip()
        if fence is None and stripped.startswith("```"):
            fence = stripped[: len(stripped) - len(stripped.lstrip("`"))]
        elif fence is not None and stripped == fence:
            fence = None
        elif fence is None and line == "</details>":
            blocks.append("\n".join(current))
            current = None
    if current is not None:  # an unclosed fold stays with the head, whole
        head.extend(current)
    return "\n".join(head).rstrip(), blocks


def fit_block(block: str, limit: int, artifact_hint: str) -> str:
    """``block``, with its fenced texts replaced by a pointer when it is over ``limit``."""
    if len(block) <= limit:
        return block
    shrunk = _FENCE.sub(f"_Plan text too large for a comment: it is in {artifact_hint}._", block)
    if len(shrunk) <= limit:
        return shrunk
    title = next((line for line in shrunk.split("\n") if line.startswith("<summary>")), "")
    return (
        f"<details>\n{title}\n\n_Too large for a comment: the unit's resources and plan "
        f"text are in {artifact_hint}._\n\n</details>"
    )


def cut_head(head: str, limit: int, artifact_hint: str) -> str:
    """``head`` as it is, or, over ``limit`` (thousands of destroys or drifted resources
    listed), cut at the last line break that fits, saying so: the first comment is
    always posted, with the verdict and whatever of the rest fits."""
    if len(head) <= limit:
        return head
    note = f"\n\n_The rest of this report's summary is too long for a comment: it is in {artifact_hint}._"
    cut = head[: limit - len(note)]
    return cut[: cut.rfind("\n")].rstrip() + note


def paginate(
    top: str,
    sections: Sequence[tuple[str, str]],
    *,
    budget: int,
    artifact_hint: str = "the plan artifact",
) -> list[str]:
    """The comments for ``top`` and ``sections`` (``(title, report)``; title ``""`` for
    one report): every section's head in the first, the folds in order after
    them, the rest in follow-ups of at most ``budget`` characters each."""
    split = [(title, *split_report(text)) for title, text in sections]
    first = [top.rstrip()] if top.strip() else []
    for title, head, _ in split:
        first.append((f"{title}\n\n" if title else "") + head)
    limit = budget - _ROOM
    first = [cut_head("\n\n".join(first), limit, artifact_hint)]
    pages: list[list[str]] = [first]
    sizes = [sum(len(p) + 2 for p in first)]
    shown_title: list[str | None] = [None]
    for title, _, blocks in split:
        for block in blocks:
            piece = fit_block(block, limit - len(title) - 40, artifact_hint)
            if sizes[-1] + len(piece) + 2 > limit:
                pages.append([])
                sizes.append(0)
                shown_title.append(None)
            if title and shown_title[-1] != title:
                heading = title + (" (continued)" if len(pages) > 1 else "")
                pages[-1].append(heading)
                sizes[-1] += len(heading) + 2
                shown_title[-1] = title
            pages[-1].append(piece)
            sizes[-1] += len(piece) + 2
    total = len(pages)
    out: list[str] = []
    for n, parts in enumerate(pages, 1):
        body = "\n\n".join(parts)
        if n == 1 and total > 1:
            body += (
                f"\n\n_The report continues in {total - 1} follow-up comment(s) below "
                "(GitHub refuses comments over 65,536 characters)._"
            )
        elif n > 1:
            body = (
                f"{PART.format(n=n)}\n**Plan report, part {n} of {total}** (continued)\n\n" + body
            )
        out.append(body.rstrip() + "\n")
    return out


def retired(n: int) -> str:
    """The body a follow-up comment of an earlier, longer report is edited to."""
    return (
        f"{PART.format(n=n)}\n_Part {n} of an earlier plan report: no longer used, "
        "the current report fits in the comments above._\n"
    )
