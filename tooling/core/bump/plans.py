"""Bump plans and their edits. Pure.

:func:`plan_bump` (one module, one tag) and :func:`plan_all` (every module:
newest minor/patch and newest major apart) turn pins and tags into
:class:`BumpPlan`; :func:`apply_changes` edits the texts byte-exact and checks
that exactly one line per pin changed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from tooling.core.bump.pins import Pin, nearest_tags
from tooling.core.bump.upgrades import Skip, pick_upgrades
from tooling.core.refs import bump_text
from tooling.errors import ToolingError
from tooling.model.sources import RepoTags, Tag
from tooling.model.versions import Version, format_like, parse_version

# --------------------------------------------------------------------------- plans


@dataclass(frozen=True)
class Change:
    """One pin moving to a tag."""

    pin: Pin
    #: the tag (as written in the unit: the pin's style when such a tag exists)
    new_version: str
    #: the tag's commit (used for a SHA pin)
    new_commit: str

    @property
    def old(self) -> str:
        return self.pin.current.text

    @property
    def new_ref(self) -> str:
        """What replaces the ref: the commit for a SHA pin, else the tag."""
        return self.new_commit if self.pin.sha_pinned else self.new_version

    @property
    def is_major(self) -> bool:
        target = parse_version(self.new_version)
        return target is not None and target.major > self.pin.current.major

    @property
    def is_downgrade(self) -> bool:
        target = parse_version(self.new_version)
        return target is not None and target < self.pin.current


@dataclass(frozen=True)
class BumpPlan:
    """One pull request: a module's pins moving to one tag."""

    module: str
    identity: str
    url: str
    target: Tag
    changes: tuple[Change, ...]
    #: the other tags of the repository, for the changelog range
    tags: Mapping[str, Tag] = field(default_factory=dict, compare=False)

    @property
    def major(self) -> bool:
        return any(c.is_major for c in self.changes)

    @property
    def branch(self) -> str:
        return branch_name(self.module, self.target.name)

    @property
    def oldest(self) -> Version:
        return min((c.pin.current for c in self.changes), key=lambda v: v.precedence())

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(sorted({c.pin.file for c in self.changes}))


def branch_name(module: str, version: str) -> str:
    """``bump/<module>-<version>``, with characters git refuses in a ref replaced."""
    raw = f"bump/{module}-{version}"
    safe = re.sub(r"[\x00-\x20~^:?*\[\\\x7f]|\.\.|@\{", "-", raw)
    return safe.rstrip("./").replace("/.", "/-")


def tag_version(text: str) -> Version:
    """The version a tag name is; a tag that is none is an error."""
    version = parse_version(text)
    if version is None:
        raise ToolingError(f"{text} is not a version tag")
    return version


def _changes_to(pins: Iterable[Pin], target: Tag, tag_names: Iterable[str]) -> list[Change]:
    """Changes moving ``pins`` to ``target``, each written in its pin's style when that tag exists."""
    version = tag_version(target.name)
    existing = set(tag_names)
    return [
        Change(pin, format_like(version, pin.current, existing=existing), target.commit)
        for pin in pins
        if pin.current.precedence() != version.precedence()  # v1.2 and v1.2.0: one release
    ]


def plan_bump(pins: Sequence[Pin], tags: RepoTags, version: str) -> BumpPlan:
    """``bump-module``: move every pin in ``pins`` (one repository) to the tag ``version``.

    The tag must exist in the repository (the message lists the nearest tags).
    A pin already at that version is left alone; a pin at a newer version is
    moved back (it is what was asked; the pull request body says
    "downgrade").
    """
    if not pins:
        raise ToolingError("no unit to bump")
    first = pins[0]
    target = tags.tags.get(version)
    if target is None:
        near = nearest_tags(version, tags.tags)
        listing = ", ".join(near) if near else "none"
        raise ToolingError(
            f"{first.module} ({first.url}) has no tag {version!r}; the nearest tags are: {listing}"
        )
    want = parse_version(version)
    if want is None:
        raise ToolingError(
            f"{version!r} is a tag of {first.module} but not a version "
            "([prefix-]vMAJOR[.MINOR[.PATCH]]); bump to a version tag"
        )
    same_prefix = [p for p in pins if p.prefix == want.prefix]
    if not same_prefix:
        prefixes = sorted({p.prefix or "(none)" for p in pins})
        raise ToolingError(
            f"{version} has the tag prefix {want.prefix or '(none)'!r} but the units pin "
            f"{first.module} with the prefix {', '.join(prefixes)}; name a tag of that prefix"
        )
    changes = [
        Change(p, version, target.commit)
        for p in same_prefix
        if p.current.precedence() != want.precedence()
    ]
    return BumpPlan(first.module, first.identity, first.url, target, tuple(changes), tags.tags)


def plan_all(pins: Sequence[Pin], repos: Mapping[str, RepoTags]) -> list[BumpPlan]:
    """``bump-all``: per module and tag prefix, one plan to the newest minor/patch of
    each pinned major, and one to the newest higher major (flagged by ``major``).

    ``repos`` holds the tags by identity; a repository missing or in error is
    left out (the caller reports it).
    """
    plans: dict[tuple[str, str], list[Change]] = {}
    meta: dict[tuple[str, str], tuple[Pin, Tag, RepoTags]] = {}
    for pin in pins:
        repo = repos.get(pin.identity)
        if repo is None or not repo.ok:
            continue
        upgrade = pick_upgrades(pin.current.text, repo.tags)
        if isinstance(upgrade, Skip):
            continue
        for target in (upgrade.latest_in_major, upgrade.latest_major):
            if target is None:
                continue
            tag = repo.tags[target.text]
            key = (pin.identity, target.text)
            plans.setdefault(key, []).extend(_changes_to([pin], tag, repo.tags))
            meta.setdefault(key, (pin, tag, repo))
    out = []
    for key in sorted(plans, key=lambda k: (k[0], tag_version(k[1]).precedence())):
        first, tag, repo = meta[key]
        changes = tuple(sorted(plans[key], key=lambda c: c.pin.unit))
        if changes:
            out.append(BumpPlan(first.module, first.identity, first.url, tag, changes, repo.tags))
    return out


# --------------------------------------------------------------------------- edits


def changed_lines(old: str, new: str) -> list[int]:
    """1-based numbers of the lines that differ (the texts have the same line count)."""
    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    if len(a) != len(b):
        raise ToolingError(
            "an edit changed the number of lines; this is a bug in tooling.core.bump"
        )
    return [i for i, (x, y) in enumerate(zip(a, b, strict=True), 1) if x != y]


def _edit_spans(file: str, text: str, changes: Sequence[Change]) -> str:
    """``text`` with each pin's ref span (a literal reached through an included file's
    locals) replaced by its new tag, last span first; each span once."""
    edits = {c.pin.span: c for c in changes}
    for (start, end), change in sorted(edits.items(), reverse=True):
        if text[start:end] != change.pin.ref:
            raise ToolingError(
                f"{file}:{change.pin.line}: expected the ref {change.pin.ref!r} there; "
                "the file changed since it was read: run the bump again"
            )
        text = text[:start] + change.new_version + text[end:]
    return text


def apply_changes(texts: Mapping[str, str], changes: Sequence[Change]) -> dict[str, str]:
    """The new text of every file ``changes`` touch; each ref literal changes on its line only.

    Raises :class:`ToolingError` if the result changes any other line, or
    leaves a pin unchanged (the file no longer matches the plan).
    """
    out: dict[str, str] = {}
    for file in sorted({c.pin.file for c in changes}):
        if file not in texts:
            raise ToolingError(f"{file}: not found; was it moved since the plan was made?")
        text = texts[file]
        here = [c for c in changes if c.pin.file == file]
        text = _edit_spans(file, text, [c for c in here if c.pin.by_span])
        done: set[tuple[str, str, str]] = set()
        for change in here:
            if change.pin.by_span:
                continue
            key = (change.old, change.new_version, change.pin.identity)
            if key in done:
                continue
            done.add(key)
            text = bump_text(
                text,
                change.old,
                change.new_version,
                identity=change.pin.identity,
                new_sha_comment=change.new_commit if change.pin.sha_pinned else None,
            )
        expected = sorted({c.pin.line for c in here})
        got = changed_lines(texts[file], text)
        if got != expected:
            raise ToolingError(
                f"{file}: the bump changed lines {got or 'none'}, expected {expected}; "
                "the file changed since it was read, or this is a bug in tooling.core.bump"
            )
        out[file] = text
    return out
