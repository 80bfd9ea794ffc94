"""A bump's changelog, from what the module repository offers. Pure.

:func:`changelog_sections` cuts the sections between two versions out of a
``CHANGELOG.md``; :func:`render_changelog` renders a :class:`Changelog`
(sections, else tag messages, else commit subjects) within a size limit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tooling.model.versions import Version, parse_version

MAX_CHANGELOG = 30_000


# --------------------------------------------------------------------------- changelog


@dataclass(frozen=True)
class Changelog:
    """What the module repository says changed, in the form found."""

    #: annotated tag messages ``(tag, message)`` of the tags in the range, oldest first
    tag_messages: tuple[tuple[str, str], ...] = ()
    #: commit subjects in the range, newest first (used without tag messages)
    subjects: tuple[str, ...] = ()
    #: the CHANGELOG.md sections of the versions in the range, and the file's path
    changelog: str | None = None
    changelog_path: str | None = None
    #: why nothing could be read (the repository could not be fetched...)
    error: str | None = None


_HEADING_RE = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
_HEADING_VERSION_RE = re.compile(r"[\[(]?(?P<v>[vV]?\d+(?:\.\d+){0,2}(?:-[0-9A-Za-z.-]+)?)[\])]?")


def _heading_version(title: str) -> Version | None:
    for token in title.split():
        match = _HEADING_VERSION_RE.match(token)
        if match and (version := parse_version(match.group("v"))) is not None:
            return version
        if version := parse_version(token.strip("[]()")):
            return version
    return None


def changelog_sections(markdown: str, old: Version | None, new: Version) -> str | None:
    """The sections of a Keep-a-Changelog style file for the versions in (``old``, ``new``].

    Headings such as ``## [1.2.0] - 2025-07-01``, ``## v1.2.0`` or
    ``## dns-v1.2.3`` are recognised; prefixes are ignored (compare the
    numbers). Returns None unless there is a section for ``new`` itself.
    Headings are moved down to level 4 so the text nests in a PR body.
    """
    lines = markdown.splitlines()
    headings: list[tuple[int, int, Version | None]] = []  # (index, level, version), outside fences
    fenced: set[int] = set()
    fence = False
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
            fenced.add(i)
            continue
        if fence:
            fenced.add(i)
            continue
        match = _HEADING_RE.match(line)
        if match:
            headings.append((i, len(match.group(1)), _heading_version(match.group(2))))
    versioned = [(i, lvl, v) for i, lvl, v in headings if v is not None]
    if not versioned:
        return None
    level = min(lvl for _, lvl, _ in versioned)
    heads = [(i, v) for i, lvl, v in versioned if lvl == level]

    def in_range(v: Version) -> bool:
        # precedence() ignores the tag prefix: `## 1.2.0` documents `dns-v1.2.0`
        if v.precedence() > new.precedence():
            return False
        return old is None or v.precedence() > old.precedence()

    if not any(v.precedence() == new.precedence() for _, v in heads):
        return None
    shift = max(0, 4 - level)
    chunks: list[str] = []
    for start, version in heads:
        if not in_range(version):
            continue
        end = next((i for i, lvl, _ in headings if i > start and lvl <= level), len(lines))
        section = list(range(start, end))
        while section and (not lines[section[-1]].strip() or _is_link_ref(lines[section[-1]])):
            section.pop()
        chunks.append(
            "\n".join(lines[i] if i in fenced else _shift_heading(lines[i], shift) for i in section)
        )
    return "\n\n".join(chunks) if chunks else None


def _is_link_ref(line: str) -> bool:
    return re.match(r"^\[[^\]]+\]:\s*\S+", line) is not None


def _shift_heading(line: str, shift: int) -> str:
    match = _HEADING_RE.match(line)
    if not match or not shift:
        return line
    return "#" * min(6, len(match.group(1)) + shift) + line[len(match.group(1)) :]


def render_changelog(log: Changelog, limit: int = MAX_CHANGELOG) -> str:
    """The changelog part of a pull request body (markdown)."""
    parts: list[str] = []
    if log.tag_messages:
        parts.append("Release notes (annotated tags):\n")
        for tag, message in log.tag_messages:
            subject, _, rest = message.strip().partition("\n")
            parts.append(f"- **{tag}**: {subject.strip()}")
            if rest.strip():
                parts.extend(
                    "  " + line if line.strip() else "" for line in rest.strip().splitlines()
                )
    elif log.subjects:
        parts.append("Commits:\n")
        parts.extend(f"- {subject}" for subject in log.subjects)
    if log.changelog:
        if parts:
            parts.append("")
        parts.append(f"<details><summary>{log.changelog_path or 'CHANGELOG.md'}</summary>\n")
        parts.append(log.changelog)
        parts.append("\n</details>")
    if not parts:
        parts.append(
            f"_No changelog: {log.error}_"
            if log.error
            else "_The module repository offers no changelog._"
        )
    text = "\n".join(parts)
    if len(text) > limit:
        text = (
            text[:limit].rsplit("\n", 1)[0] + "\n\n_(cut: see the module repository for the rest)_"
        )
    return text
