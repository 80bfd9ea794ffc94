"""Upgrades of module refs: which tag to move to, or why a ref cannot move.

Pure functions only. :func:`pick_upgrades` chooses the newest tag in the
current major and the newest in a later major (or says why it cannot:
:class:`Skip`). :func:`is_branch_name` is the one classifier of refs that name
a branch (the check rules and the bump planner both use it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tooling.model.sources import is_commit_sha
from tooling.model.versions import Version, parse_version

__all__ = [
    "BRANCH_NAMES",
    "Skip",
    "Upgrade",
    "is_branch_name",
    "not_a_version_reason",
    "pick_upgrades",
]


@dataclass(frozen=True)
class Upgrade:
    """Upgrade targets for one ref; both None means it is up to date."""

    current: Version
    #: newest version above ``current`` with the same major (minor/patch upgrade)
    latest_in_major: Version | None
    #: newest version with a higher major (a breaking upgrade)
    latest_major: Version | None

    @property
    def up_to_date(self) -> bool:
        return self.latest_in_major is None and self.latest_major is None


@dataclass(frozen=True)
class Skip:
    """A ref that cannot be compared, and why (shown to the user as is)."""

    ref: str | None
    reason: str


_DATE_RE = re.compile(r"(?:[A-Za-z][\w./-]*?[-/_])?\d{4}([-._/]?)\d{2}\1\d{2}(?:[T_.-].*)?")
_SHORT_SHA_RE = re.compile(r"(?=.*[0-9])(?=.*[a-fA-F])[0-9a-fA-F]{7,39}")
#: refs that name a branch rather than a version (compared case-insensitively)
BRANCH_NAMES = frozenset(
    {
        "main",
        "master",
        "develop",
        "development",
        "dev",
        "trunk",
        "head",
        "stable",
        "latest",
        "release",
    }
)
_BRANCH_PREFIXES = ("feature/", "release/", "hotfix/", "bugfix/")


def is_branch_name(ref: str) -> bool:
    """True for a ref that names a branch (``main``, ``release``, ``feature/x``...): it moves."""
    return ref.lower() in BRANCH_NAMES or ref.startswith(_BRANCH_PREFIXES)


def not_a_version_reason(ref: str | None) -> str:
    """Why ``ref`` cannot be compared as a version, and what to pin instead."""
    if not ref:
        return "the source has no ?ref=, so it follows the default branch; pin a version tag to track upgrades"
    if is_commit_sha(ref):
        return (
            f"ref {ref} is a commit SHA with no version; add a '# vX.Y.Z' comment after the "
            "source (or pin a tag) so the current version is known"
        )
    if _SHORT_SHA_RE.fullmatch(ref):
        return f"ref {ref} looks like an abbreviated commit SHA, not a version tag; pin a tag"
    if _DATE_RE.fullmatch(ref):
        return f"ref {ref} looks like a date, not a semantic version; pin a vMAJOR.MINOR.PATCH tag"
    if is_branch_name(ref):
        return (
            f"ref {ref} is a branch; a branch moves, so there is no version to compare; pin a tag"
        )
    if not any(c.isdigit() for c in ref):
        return f"ref {ref} looks like a branch name, not a version tag; pin a tag"
    return f"ref {ref} is not a semantic version ([prefix-]vMAJOR[.MINOR[.PATCH]][-pre]); pin a version tag"


def pick_upgrades(current_ref: str | None, available_tags: Iterable[str]) -> Upgrade | Skip:
    """Choose upgrade targets for ``current_ref`` among ``available_tags``.

    Only tags with the same prefix count (``dns-v*`` never upgrades to
    ``api-v*``). A prerelease tag is a candidate only while the current ref is
    a prerelease of the same MAJOR.MINOR.PATCH (``v2.0.0-rc.1`` may go to
    ``v2.0.0-rc.2`` or ``v2.0.0``). Tags that are not versions are ignored; a
    current ref that is not a version, or no tag of its prefix at all, is a
    :class:`Skip` with the reason. Of equal-precedence tags (``v2.1``,
    ``v2.1.0``), the one written like ``current_ref`` wins.
    """
    current = parse_version(current_ref)
    if current is None:
        return Skip(current_ref, not_a_version_reason(current_ref))
    tags = list(available_tags)
    same_prefix = [
        v for v in (parse_version(t) for t in tags) if v is not None and v.prefix == current.prefix
    ]
    if not same_prefix:
        what = f"prefix {current.prefix!r}" if current.prefix else "no prefix"
        return Skip(current_ref, f"none of the {len(tags)} available tags is a version with {what}")

    def candidate(tag: Version) -> bool:
        if not tag > current:
            return False
        if tag.is_prerelease:
            return current.is_prerelease and tag.core == current.core
        return True

    def best(versions: Sequence[Version]) -> Version | None:
        if not versions:
            return None
        return max(
            versions,
            key=lambda t: (t.precedence(), t.v == current.v, t.precision == current.precision),
        )

    candidates = [t for t in same_prefix if candidate(t)]
    return Upgrade(
        current=current,
        latest_in_major=best([t for t in candidates if t.major == current.major]),
        latest_major=best([t for t in candidates if t.major > current.major]),
    )
