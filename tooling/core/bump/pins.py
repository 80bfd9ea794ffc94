"""Which unit pins which module at which version (or why it cannot be bumped). Pure.

:func:`inventory` reads every unit's ``terraform { source }`` (in the unit file,
else in the one included file that sets it) into :class:`Pin` or :class:`Skipped`
(with the reason); the ``select_*`` and ``match_units`` functions choose among them.

A source written through an included file's locals
(``"${include.envcommon.locals.base_source_url}?ref=v0.8.0"``, Gruntwork's
layout) is not a literal of the unit's file: the module comes from the model's
evaluated ``terraform.source``, and the ref from the literal that holds it (the
unit's own ``?ref=``, or the included file's local, found as
:mod:`tooling.core.refs` finds a local). Such a pin is edited by its span
(:attr:`Pin.by_span`).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tooling.core.bump.upgrades import Skip, pick_upgrades
from tooling.core.refs import SourceLine, find_source_lines, included
from tooling.errors import ToolingError, UsageError
from tooling.model.sources import ModuleSource, parse_source, remote_url
from tooling.model.versions import Version, parse_version

REGISTRY_UNSUPPORTED = (
    "tfr:// registry sources are not bumped: this tool reads versions from git tags and does "
    "not speak the module registry protocol; pin the module's git repository "
    '(source = "git::https://.../repo.git?ref=vX.Y.Z") to get bump pull requests'
)


# --------------------------------------------------------------------------- inventory


@dataclass(frozen=True)
class UnitText:
    """A unit and the texts the scan needs: its own file first, then its included files."""

    path: str
    tier: str
    files: tuple[tuple[str, str], ...]
    #: ``terraform.source`` as the model evaluates it (None: not known)
    source: str | None = None


@dataclass(frozen=True)
class Pin:
    """A unit pinning a git module at a version."""

    unit: str
    tier: str
    #: the file holding the ref literal (the unit file, or an included file)
    file: str
    #: 1-based line of the ref literal in ``file``
    line: int
    #: offsets of the ref in ``file`` (units sharing one literal share this)
    span: tuple[int, int]
    source: ModuleSource
    #: the ref as written: a tag, or a commit SHA when pinned by SHA
    ref: str
    #: the version the unit is at (the ``# vX.Y.Z`` comment for a SHA pin)
    current: Version
    url: str
    #: the module came from the evaluated source, not from the file's literals: edit by span
    by_span: bool = False

    @property
    def identity(self) -> str:
        identity = self.source.identity
        assert identity is not None  # a Pin is only made for a git source with one
        return identity

    @property
    def module(self) -> str:
        """The repository's short name (``terraform-proxmox``)."""
        name = self.source.short_name
        assert name is not None
        return name

    @property
    def prefix(self) -> str:
        return self.current.prefix

    @property
    def sha_pinned(self) -> bool:
        return self.ref != self.current.text


@dataclass(frozen=True)
class Skipped:
    """A unit whose source cannot be bumped, and why (shown to the user as is)."""

    unit: str
    reason: str
    file: str | None = None
    line: int | None = None
    source: str | None = None
    ref: str | None = None
    module: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "unit": self.unit,
            "module": self.module,
            "source": self.source,
            "ref": self.ref,
            "file": self.file,
            "line": self.line,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Inventory:
    pins: tuple[Pin, ...]
    skipped: tuple[Skipped, ...]


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _scan_unit(unit: UnitText) -> Pin | Skipped:
    found: list[tuple[str, str, list[Any]]] = []
    for path, text in unit.files:
        try:
            lines = find_source_lines(text)
        except ToolingError as exc:
            return Skipped(unit.path, f"{path}: cannot scan: {exc}", file=path)
        if lines:
            found.append((path, text, lines))
        if path == unit.files[0][0] and lines:
            break  # the unit's own terraform.source wins over an included one
    if not found:
        return Skipped(unit.path, "no terraform { source } in the unit or the files it includes")
    if len(found) > 1:
        names = ", ".join(path for path, _, _ in found)
        return Skipped(
            unit.path,
            f"several included files set terraform.source ({names}); bump them by hand",
        )
    path, text, lines = found[0]
    line = lines[0]
    src: ModuleSource | None = line.source
    if src is None and unit.source is not None:
        through = _through_include(unit, path, line, parse_source(unit.source))
        if through is not None:
            return through
    module = src.short_name if src is not None else None

    def skip(reason: str) -> Skipped:
        return Skipped(unit.path, reason, path, line.line, line.value, line.ref, module)

    if src is None:
        return skip(
            f"unresolvable source: {line.unresolved or 'the source is not a string literal'}"
        )
    if src.kind == "registry":
        return skip(REGISTRY_UNSUPPORTED)
    if src.kind == "local":
        return skip("local module path: versioned with this repository, nothing to bump")
    if src.kind != "git" or src.identity is None:
        return skip(f"not a versioned module source: {src.note}")
    url = remote_url(src)
    if url is None:  # pragma: no cover - every git source with an identity has a URL
        return skip("cannot work out the repository URL")
    if line.ref_span is None:
        if line.unresolved:
            return skip(f"unresolvable ref: {line.unresolved}")
        no_ref = pick_upgrades(line.ref, ())
        return skip(no_ref.reason if isinstance(no_ref, Skip) else "the ref cannot be located")
    current_ref = line.current_ref
    version = parse_version(current_ref)
    if version is None or line.ref is None:
        not_version = pick_upgrades(current_ref, ())
        return skip(
            not_version.reason
            if isinstance(not_version, Skip)
            else f"ref {current_ref} is not a version"
        )
    return Pin(
        unit=unit.path,
        tier=unit.tier,
        file=path,
        line=_line_of(text, line.ref_span[0]),
        span=line.ref_span,
        source=src,
        ref=line.ref,
        current=version,
        url=url,
    )


def _through_include(
    unit: UnitText, path: str, line: SourceLine, evaluated: ModuleSource
) -> Pin | Skipped | None:
    """The pin of a source the file writes through an included file's locals, from the
    model's evaluated source and the literal holding its ref; None: not that case."""
    if unit.source is None or evaluated.kind != "git" or evaluated.identity is None:
        return None
    url = remote_url(evaluated)
    if url is None or evaluated.ref is None:
        return None
    own = _text_of(unit, path)
    found = included.locate(line.value.strip(), line.ref_span, unit.files[1:], unit.source)
    if found is None:
        return None
    file = found[0] or path
    text = own if found[0] is None else _text_of(unit, file)
    span = found[1]
    version = parse_version(evaluated.ref)
    if version is None or version.text != evaluated.ref or text[span[0] : span[1]] != evaluated.ref:
        return Skipped(
            unit.path,
            f"ref {evaluated.ref} written through an included file's locals is not a version "
            "tag; a commit SHA pinned there is bumped by hand",
            file,
            _line_of(text, span[0]),
            unit.source,
            evaluated.ref,
            evaluated.short_name,
        )
    return Pin(
        unit=unit.path,
        tier=unit.tier,
        file=file,
        line=_line_of(text, span[0]),
        span=span,
        source=evaluated,
        ref=evaluated.ref,
        current=version,
        url=url,
        by_span=True,
    )


def _text_of(unit: UnitText, path: str) -> str:
    return next(text for name, text in unit.files if name == path)


def inventory(units: Iterable[UnitText]) -> Inventory:
    """Every unit's module pin, or the reason it has none that can be bumped."""
    pins: list[Pin] = []
    skipped: list[Skipped] = []
    for unit in units:
        result = _scan_unit(unit)
        if isinstance(result, Pin):
            pins.append(result)
        else:
            skipped.append(result)
    return Inventory(tuple(pins), tuple(skipped))


def _is_glob(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


def match_units(path: str, patterns: Sequence[str]) -> bool:
    """True when ``path`` matches one of ``patterns`` (globs, or a folder prefix).

    ``live/cluster/*`` and ``live/cluster`` both select every unit under
    ``live/cluster``; ``*`` also matches ``/``. No patterns select everything.
    """
    if not patterns:
        return True
    for pattern in patterns:
        pattern = pattern.strip().rstrip("/")
        if not pattern:
            continue
        if _is_glob(pattern):
            if fnmatch.fnmatchcase(path, pattern):
                return True
        elif path == pattern or path.startswith(pattern + "/"):
            return True
    return False


def split_globs(text: str | None) -> tuple[str, ...]:
    """``--units`` value: comma-separated globs."""
    return tuple(p.strip() for p in (text or "").split(",") if p.strip())


def select_pins(pins: Iterable[Pin], patterns: Sequence[str]) -> list[Pin]:
    """Pins of units matching ``patterns``, plus every pin sharing a ref literal with one.

    A ref in an included file is one literal for every unit that includes it:
    editing it moves them all, so they are all listed.
    """
    pins = list(pins)
    chosen = [p for p in pins if match_units(p.unit, patterns)]
    shared = {(p.file, p.span) for p in chosen}
    return [p for p in pins if p in chosen or (p.file, p.span) in shared]


def _norm_identity(text: str) -> str | None:
    for candidate in (text, f"git::{text}"):
        identity = parse_source(candidate).identity
        if identity:
            return identity
    return None


def select_module(pins: Sequence[Pin], query: str) -> list[Pin]:
    """The pins of the module named by ``query``: its repository URL, identity or short name.

    Raises :class:`ToolingError` when nothing or more than one repository matches.
    """
    wanted = query.strip().removesuffix("/")
    identity = _norm_identity(wanted)
    plain = wanted.lower().removesuffix(".git")
    matched = [
        p
        for p in pins
        if p.module.lower() == plain
        or p.identity.lower() == plain
        or (identity is not None and p.identity.lower() == identity.lower())
    ]
    identities = sorted({p.identity for p in matched})
    if not identities:
        known = sorted({p.module for p in pins})
        raise ToolingError(
            f"no unit pins a module named {query!r}; pinned modules: "
            + (", ".join(known) if known else "none")
            + " (pass the short name or the repository URL)"
        )
    if len(identities) > 1:
        raise UsageError(
            f"{query!r} names several repositories ({', '.join(identities)}): "
            "pass the repository URL instead of the short name"
        )
    return matched


def nearest_tags(requested: str, tags: Iterable[str], n: int = 5) -> list[str]:
    """Up to ``n`` version tags closest to ``requested`` (same tag prefix), oldest first."""
    want = parse_version(requested)
    versions = [v for v in (parse_version(t) for t in tags) if v is not None]
    if want is not None:
        same = [v for v in versions if v.prefix == want.prefix]
        versions = same or versions
    versions.sort(key=lambda v: (v.precedence(), v.text))
    if want is None:
        return [v.text for v in versions[-n:]]
    below = [v for v in versions if v < want]
    above = [v for v in versions if not v < want]
    picked: list[Version] = []
    while len(picked) < n and (below or above):
        if above:
            picked.append(above.pop(0))
        if below and len(picked) < n:
            picked.append(below.pop())
    return [v.text for v in sorted(picked, key=lambda v: (v.precedence(), v.text))]
