"""Module bumps as data: which units pin what, what to bump them to, and the texts.

Pure functions only (no subprocess, no file or network access); the commands
in :mod:`tooling.commands.bump` read the files and the tags, call these, and act.

- :func:`inventory` reads every unit's ``terraform { source }`` (in the unit
  file, else in the one included file that sets it) into :class:`Pin` (a
  module pinned at a version, with the file and line of the ref) or
  :class:`Skipped` (with the reason: a branch, an unresolvable or registry
  source, a local path...). Nothing is skipped silently.
- :func:`plan_bump` (one module, one tag: ``invoke bump-module``) and
  :func:`plan_all` (every module, newest minor/patch and newest major apart:
  ``invoke bump-all``) turn pins and tags into :class:`BumpPlan`.
- :func:`apply_changes` edits the texts with :func:`tooling.core.refs.bump_text`
  (every other byte kept) and checks that exactly one line per pin changed.
- :func:`pr_title`, :func:`pr_body`, :func:`commit_message` and
  :func:`outdated_report` render them; :func:`changelog_sections` and
  :func:`render_changelog` build the changelog from what the module
  repository offers.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tooling.core.refs import bump_text, find_source_lines
from tooling.core.upgrades import Skip, pick_upgrades
from tooling.errors import ToolingError, UsageError
from tooling.model.sources import ModuleSource, RepoTags, Tag, parse_source, remote_url
from tooling.model.versions import Version, format_like, parse_version

__all__ = [
    "MARKER",
    "REGISTRY_UNSUPPORTED",
    "BumpPlan",
    "Change",
    "Changelog",
    "Inventory",
    "Pin",
    "Skipped",
    "UnitText",
    "apply_changes",
    "branch_name",
    "changed_lines",
    "changelog_sections",
    "commit_message",
    "inventory",
    "match_units",
    "nearest_tags",
    "outdated_report",
    "plan_all",
    "plan_bump",
    "pr_body",
    "pr_title",
    "render_changelog",
    "select_module",
]

#: hidden marker at the top of every bump pull request body
MARKER = "<!-- iac-tooling:bump -->"
#: the changelog part of a pull request body is cut at this many characters
MAX_CHANGELOG = 30_000

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


def _version(text: str) -> Version:
    version = parse_version(text)
    if version is None:
        raise ToolingError(f"{text} is not a version tag")
    return version


def _changes_to(pins: Iterable[Pin], target: Tag, tag_names: Iterable[str]) -> list[Change]:
    """Changes moving ``pins`` to ``target``, each written in its pin's style when that tag exists."""
    version = _version(target.name)
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
    for key in sorted(plans, key=lambda k: (k[0], _version(k[1]).precedence())):
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
        raise ToolingError("an edit changed the number of lines; this is a bug in tooling.core.bump")
    return [i for i, (x, y) in enumerate(zip(a, b, strict=True), 1) if x != y]


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
        done: set[tuple[str, str, str]] = set()
        for change in here:
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


# --------------------------------------------------------------------------- texts


def pr_title(plan: BumpPlan) -> str:
    """A conventional-commit title; a major bump carries ``!`` and says so."""
    if plan.major:
        return f"chore(deps)!: bump {plan.module} to {plan.target.name} (major)"
    return f"chore(deps): bump {plan.module} to {plan.target.name}"


def commit_message(plan: BumpPlan) -> str:
    lines = [pr_title(plan), ""]
    lines.extend(f"{c.pin.unit}: {c.old} -> {c.new_version}" for c in plan.changes)
    if plan.major:
        lines += ["", f"BREAKING CHANGE: {plan.module} {plan.target.name} is a new major version."]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def pr_body(plan: BumpPlan, log: Changelog) -> str:
    """The pull request body: units table, major warning, changelog."""
    current = sorted({c.old for c in plan.changes}, key=lambda t: _version(t).precedence())
    lines = [
        MARKER,
        f"Bumps **{plan.module}** (`{plan.identity}`) from {', '.join(current)} "
        f"to **{plan.target.name}**.",
        "",
    ]
    if plan.major:
        majors = sorted({c.pin.current.major for c in plan.changes if c.is_major})
        lines += [
            "> [!WARNING]",
            f"> **Major version bump** (v{', v'.join(map(str, majors))} -> "
            f"v{_version(plan.target.name).major}): expect breaking changes. "
            "Read the changelog and each unit's plan (replacements and deletions need "
            "a manual approval before apply).",
            "",
        ]
    lines += ["| Unit | Tier | Version |", "|---|---|---|"]
    for change in plan.changes:
        extra = " (downgrade)" if change.is_downgrade else ""
        if change.pin.sha_pinned:
            extra += f" (commit {change.pin.ref[:12]} -> {change.new_commit[:12]})"
        lines.append(
            f"| `{_cell(change.pin.unit)}` | {_cell(change.pin.tier)} | "
            f"{_cell(change.old)} -> {_cell(change.new_version)}{extra} |"
        )
    shared = sorted(
        {c.pin.file for c in plan.changes if not c.pin.file.startswith(c.pin.unit + "/")}
    )
    if shared:
        lines += [
            "",
            "The ref lives in a shared file: " + ", ".join(f"`{f}`" for f in shared) + ".",
        ]
    lines += [
        "",
        f"### Changelog ({plan.oldest.text} -> {plan.target.name})",
        "",
        render_changelog(log),
        "",
        "---",
        "Opened by `invoke bump-module` / `invoke bump-all`: one line per unit changed; "
        "the plan workflow plans exactly these units. A new run updates this pull request "
        "(rebased onto the default branch); a pull request closed unmerged is not reopened "
        "for this version.",
    ]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- outdated


def _unit_json(pin: Pin, upgrade: Any, existing: set[str]) -> dict[str, Any]:
    def fmt(v: Version | None) -> str | None:
        return format_like(v, pin.current, existing=existing) if v is not None else None

    return {
        "path": pin.unit,
        "tier": pin.tier,
        "file": pin.file,
        "line": pin.line,
        "ref": pin.ref,
        "current": pin.current.text,
        "latest": fmt(upgrade.latest_in_major),
        "latest_major": fmt(upgrade.latest_major),
    }


def outdated_report(inv: Inventory, repos: Mapping[str, RepoTags]) -> dict[str, Any]:
    """The ``invoke outdated --json`` document (see docs/bumps.md).

    ``modules`` has one entry per release stream (repository, tag prefix, pinned
    major): ``current`` is its oldest pinned version, ``latest`` the newest
    release in that major, ``latest_major`` the newest of a higher major (None
    when there is none). ``skipped`` lists units whose source cannot be
    bumped, ``errors`` repositories whose tags could not be listed.
    """
    streams: dict[tuple[str, str, int], list[tuple[Pin, Any]]] = {}
    skipped = [s.to_json() for s in inv.skipped]
    errors: dict[str, dict[str, Any]] = {}
    for pin in inv.pins:
        repo = repos.get(pin.identity)
        if repo is None or not repo.ok:
            entry = errors.setdefault(
                pin.identity,
                {
                    "module": pin.module,
                    "identity": pin.identity,
                    "url": pin.url,
                    "error": repo.error if repo else "not queried",
                    "units": [],
                },
            )
            entry["units"].append(pin.unit)
            continue
        upgrade = pick_upgrades(pin.current.text, repo.tags)
        if isinstance(upgrade, Skip):
            skipped.append(
                Skipped(
                    pin.unit,
                    upgrade.reason,
                    pin.file,
                    pin.line,
                    pin.source.text,
                    pin.ref,
                    pin.module,
                ).to_json()
            )
            continue
        streams.setdefault((pin.identity, pin.prefix, pin.current.major), []).append((pin, upgrade))
    modules = []
    for (identity, prefix, _major), members in sorted(streams.items()):
        repo = repos[identity]
        existing = set(repo.tags)
        oldest_pin, oldest_up = min(members, key=lambda m: m[0].current.precedence())
        units = [_unit_json(p, u, existing) for p, u in sorted(members, key=lambda m: m[0].unit)]
        first = _unit_json(oldest_pin, oldest_up, existing)
        newest = max(
            (u.latest_in_major for _, u in members if u.latest_in_major is not None),
            key=lambda v: v.precedence(),
            default=None,
        )
        modules.append(
            {
                "module": oldest_pin.module,
                "identity": identity,
                "url": oldest_pin.url,
                "tag_prefix": prefix,
                "current": oldest_pin.current.text,
                "latest": format_like(newest, oldest_pin.current, existing=existing)
                if newest is not None
                else None,
                "latest_major": first["latest_major"],
                "outdated": any(u["latest"] or u["latest_major"] for u in units),
                "units": units,
            }
        )
    return {
        "modules": modules,
        "skipped": sorted(skipped, key=lambda s: s["unit"]),
        "errors": sorted(errors.values(), key=lambda e: e["identity"]),
    }
