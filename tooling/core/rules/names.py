"""Unit folder names: what a unit's path may be made of. Pure.

A unit's path becomes its state key, a log and report folder name, a
``--filter`` query, a branch name and shell words in CI: only plain lowercase
segments (``[a-z0-9][a-z0-9-]*`` by default, ``policy.toml [check]
unit_name_pattern``) are allowed below the live folder. Spaces, ``$(…)``,
``..``, non-ASCII letters and names that differ from another only by case
(``DNS`` beside ``dns``, one folder on a case-insensitive file system) are
refused by ``invoke check`` and by ``invoke plan`` before it builds any state
key or command.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tooling.model.policy import DEFAULT_PATTERN
from tooling.model.stacks import STACK_DIR


@dataclass(frozen=True)
class BadName:
    """One unit path whose name breaks the rule, and why."""

    path: str
    why: str


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """The segment pattern; :class:`ValueError` (the caller names the setting) if it is not a regex."""
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"not a regular expression ({exc})") from None


def _inner(path: str, live: Sequence[str]) -> list[str]:
    """The segments of ``path`` below its live folder (all of them if none holds it)."""
    for folder in sorted(live, key=len, reverse=True):
        if folder in (".", ""):
            return path.split("/")
        prefix = folder.rstrip("/") + "/"
        if path.startswith(prefix):
            return path[len(prefix) :].split("/")
    return path.split("/")


def segment_problem(segment: str, pattern: re.Pattern[str]) -> str | None:
    """Why one folder name is not allowed, or None."""
    if segment in ("", ".", ".."):
        return f"{segment!r} is not a folder name"
    if not segment.isascii():
        return f"{segment!r} has non-ASCII characters"
    if pattern.fullmatch(segment) is None:
        return f"{segment!r} does not match {pattern.pattern}"
    return None


def bad_unit_names(
    paths: Iterable[str], live: Sequence[str] = ("live",), pattern: str = DEFAULT_PATTERN
) -> list[BadName]:
    """Every unit path in ``paths`` whose folders break the naming rule, sorted by path."""
    regex = compile_pattern(pattern)
    paths = sorted(set(paths))
    bad: dict[str, str] = {}
    for path in paths:
        for segment in _inner(path, live):
            if segment == STACK_DIR:
                continue  # the folder `terragrunt stack generate` writes units into
            why = segment_problem(segment, regex)
            if why:
                bad[path] = why
                break
    # folders (at any depth) that differ only by case: one folder where case is ignored
    folded: dict[str, set[str]] = {}
    for path in paths:
        parts = path.split("/")
        for depth in range(1, len(parts) + 1):
            prefix = "/".join(parts[:depth])
            folded.setdefault(prefix.casefold(), set()).add(prefix)
    for path in paths:
        parts = path.split("/")
        for depth in range(1, len(parts) + 1):
            twins = folded["/".join(parts[:depth]).casefold()]
            if len(twins) > 1:
                mine = "/".join(parts[:depth])
                others = ", ".join(sorted(twins - {mine}))
                bad.setdefault(path, f"{mine} differs only by case from {others}")
                break
    return [BadName(p, bad[p]) for p in sorted(bad)]
