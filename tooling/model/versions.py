"""Version tags as written: parse one keeping its style, render another in that style.

Pure functions only. :func:`parse_version` reads a tag such as ``v1.2``,
``dns-v1.2.3`` or ``1.2.3-rc.1``; :class:`Version` compares by semver
precedence; :func:`format_like` renders a target in the current ref's style.
Choosing upgrades among tags is :mod:`tooling.core.bump.upgrades`.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

__all__ = ["Version", "format_like", "parse_version"]

_PREFIX_RE = re.compile(r"[A-Za-z][A-Za-z0-9._/@-]*[-/_@]")
_BARE_VERSION_RE = re.compile(
    r"(?P<v>[vV])?"
    r"(?P<nums>(?:0|[1-9][0-9]*)(?:\.(?:0|[1-9][0-9]*)){0,2})"
    r"(?:-(?P<pre>[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
    r"(?:\+(?P<build>[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
)


@dataclass(frozen=True)
class Version:
    """A version tag as written.

    ``<`` and friends compare by semver precedence (missing components are 0,
    a prerelease sorts before its release, build metadata is ignored);
    ``==`` is structural, so ``v2.0`` and ``2.0.0`` are not ``==`` although
    neither is ``<`` the other.
    """

    text: str
    #: monorepo prefix including its separator: ``dns-``, ``dns/``, ``""``
    prefix: str
    #: ``"v"``, ``"V"`` or ``""``
    v: str
    #: the numeric components as written (1 to 3 of them)
    numbers: tuple[int, ...]
    prerelease: tuple[str, ...] = ()
    build: str | None = None

    @property
    def precision(self) -> int:
        return len(self.numbers)

    @property
    def core(self) -> tuple[int, int, int]:
        padded = (*self.numbers, 0, 0, 0)
        return (padded[0], padded[1], padded[2])

    @property
    def major(self) -> int:
        return self.core[0]

    @property
    def is_prerelease(self) -> bool:
        return bool(self.prerelease)

    def precedence(self) -> tuple[object, ...]:
        """Sort key implementing semver precedence."""
        pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.prerelease)
        return (self.core, 0 if self.prerelease else 1, pre)

    def __lt__(self, other: Version) -> bool:
        return self.precedence() < other.precedence()

    def __le__(self, other: Version) -> bool:
        return self.precedence() <= other.precedence()

    def __gt__(self, other: Version) -> bool:
        return self.precedence() > other.precedence()

    def __ge__(self, other: Version) -> bool:
        return self.precedence() >= other.precedence()


def parse_version(ref: str | None) -> Version | None:
    """Parse ``[prefix]v?MAJOR[.MINOR[.PATCH]][-pre][+build]``; None if ``ref`` is not one.

    The prefix starts with a letter and ends in ``-``, ``/``, ``_`` or ``@``
    (``dns-v1.2.3``, ``modules/dns/1.2.3``). A single number needs the ``v``
    (``v2``): a bare ``2`` or ``20240105`` is more often a date or build
    number than a version. Components with leading zeros are not versions
    (``2024.01.05``).
    """
    if not ref:
        return None
    # the shortest prefix that leaves a valid version wins: `v1.2.3-1` is a
    # prerelease, not the prefix `v1.2.3-` with version `1`
    splits = [
        0,
        *(i + 1 for i, c in enumerate(ref) if c in "-/_@" and _PREFIX_RE.fullmatch(ref[: i + 1])),
    ]
    for split in splits:
        match = _BARE_VERSION_RE.fullmatch(ref, split)
        if match is None:
            continue
        numbers = tuple(int(n) for n in match.group("nums").split("."))
        v = match.group("v") or ""
        if len(numbers) == 1 and not v:
            continue
        pre = match.group("pre")
        return Version(
            text=ref,
            prefix=ref[:split],
            v=v,
            numbers=numbers,
            prerelease=tuple(pre.split(".")) if pre else (),
            build=match.group("build"),
        )
    return None


def format_like(new: Version, template: Version, *, existing: Collection[str] | None = None) -> str:
    """Render ``new`` in the style of ``template``: its prefix, its ``v`` and its precision.

    The template's precision is kept when the extra components of ``new`` are
    zero (``v2.0`` and ``2.1.0`` give ``v2.1``); when that would drop a non-zero
    component (``v2.0`` and ``2.1.3``), and for prereleases, ``new`` keeps the
    precision it was written with (at least enough to show every non-zero
    component). If ``existing`` (the tag names) is given and the rendering is
    not among them, ``new.text`` is returned: a ref must name a real tag.
    """
    core = new.core
    significant = 3 if core[2] else 2 if core[1] else 1
    if new.prerelease or significant > template.precision:
        precision = max(new.precision, significant)
    else:
        precision = template.precision
    rendered = template.prefix + template.v + ".".join(str(n) for n in core[:precision])
    if new.prerelease:
        rendered += "-" + ".".join(new.prerelease)
    if new.build:
        rendered += "+" + new.build
    if existing is not None and rendered not in existing:
        return new.text
    return rendered
