"""Module sources, their versions, and byte-exact edits of ``terragrunt.hcl``.

Pure functions only: no subprocess and no file access. The caller reads the
text, asks for the tags of a repository elsewhere, and writes the result.

Three layers:

- **Sources.** :func:`parse_source` reads a Terragrunt/OpenTofu module source
  (go-getter address) into a :class:`ModuleSource`: ``git::https://...``,
  ``git::ssh://...``, SCP-style ``git@host:org/repo.git``, the
  ``github.com``/``gitlab.com``/``bitbucket.org`` shorthands, plain
  ``https://.../repo.git``, ``tfr://`` registry sources, local paths. It keeps
  the query string exactly as written and the offsets of the ref so that an
  edit can replace only that substring.
- **Versions.** :func:`parse_version` reads a tag such as ``v1.2``,
  ``dns-v1.2.3`` or ``1.2.3-rc.1`` keeping its style; :func:`pick_upgrades`
  chooses the newest tag in the current major and the newest in a later major
  (or says why it cannot: :class:`Skip`); :func:`format_like` renders a target
  in the current ref's style.
- **Edits.** :func:`find_source_lines` finds ``source`` attributes in
  ``terraform { ... }`` blocks with a small HCL scanner (strings, template
  interpolations, comments and heredocs are tracked, so text inside them is
  never mistaken for structure); :func:`bump_text` replaces the ref (and, for
  a commit SHA pinned with a ``# vX.Y.Z`` comment, the SHA and the comment) and
  keeps every other byte; :func:`resolve_local_source` follows
  ``source = local.base`` to the string literal that holds the ref.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from tooling.errors import ToolingError

__all__ = [
    "DEFAULT_REGISTRY",
    "ModuleSource",
    "ResolvedSource",
    "Segment",
    "Skip",
    "SourceLine",
    "Unresolvable",
    "Upgrade",
    "Version",
    "bump_text",
    "find_source_lines",
    "format_like",
    "is_commit_sha",
    "parse_source",
    "parse_version",
    "pick_upgrades",
    "resolve_local_source",
]

SourceKind = Literal["git", "registry", "local", "unknown"]

#: Registry host of ``tfr:///ns/name/provider``: Terragrunt uses the OpenTofu
#: registry when it runs OpenTofu (this repository does).
DEFAULT_REGISTRY = "registry.opentofu.org"

#: Hosts whose ``host/org/repo`` shorthand go-getter resolves to a git clone.
_SHORTHAND_HOSTS = ("github.com", "gitlab.com", "bitbucket.org")

_SHA_RE = re.compile(r"[0-9a-fA-F]{40}")
_SAFE_REF_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/+-]*")


def is_commit_sha(ref: str | None) -> bool:
    """True for a full 40-hex-digit commit SHA."""
    return ref is not None and _SHA_RE.fullmatch(ref) is not None


# --------------------------------------------------------------------------- sources


@dataclass(frozen=True)
class ModuleSource:
    """One parsed module source.

    ``ref_span`` and the offsets in ``query_spans`` index into ``text`` (the
    source string as given, without quotes).
    """

    text: str
    kind: SourceKind
    #: lowercase host without port or user (registry host for ``registry``)
    host: str | None = None
    port: int | None = None
    #: ``org/repo`` without ``.git`` (may be ``group/sub/repo``); ``ns/name/provider``
    #: for a registry; the path as written for ``local``
    path: str | None = None
    #: the part after ``//`` (``modules/vm``), without leading/trailing slashes
    subdir: str | None = None
    #: value of the ``ref`` (git) or ``version`` (registry) query parameter, as written
    ref: str | None = None
    ref_param: Literal["ref", "version"] | None = None
    #: every query parameter in order, values exactly as written (not URL-decoded)
    query: tuple[tuple[str, str], ...] = ()
    #: ``(start, end)`` of each query parameter's *value* in ``text``
    query_spans: tuple[tuple[int, int], ...] = ()
    ref_span: tuple[int, int] | None = None
    #: why a source is ``unknown`` (or a remark on an odd one)
    note: str | None = None

    @property
    def identity(self) -> str | None:
        """``host/org/repo`` (git) or ``host/ns/name/provider`` (registry); None otherwise.

        Scheme, user, port, ``.git``, subdir and query are not part of it, so
        the HTTPS and SSH spellings of one repository have the same identity.
        """
        if self.kind in ("git", "registry") and self.host and self.path:
            return f"{self.host}/{self.path}"
        return None

    @property
    def tag_prefix(self) -> str:
        """Monorepo tag prefix of the ref (``dns-`` for ``dns-v1.2.3``), else ``""``."""
        version = parse_version(self.ref) if self.ref else None
        return version.prefix if version else ""

    @property
    def module_key(self) -> tuple[str, str] | None:
        """``(identity, tag_prefix)``: what one release stream of a module is keyed by."""
        identity = self.identity
        return (identity, self.tag_prefix) if identity else None

    @property
    def short_name(self) -> str | None:
        """Repository name (last path segment); the module *name* for a registry source."""
        if not self.path:
            return None
        segments = [s for s in self.path.split("/") if s]
        if not segments:
            return None
        if self.kind == "registry" and len(segments) == 3:
            return segments[1]
        return segments[-1]


_FORCED_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)::")
_URL_RE = re.compile(
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://"
    r"(?:(?P<user>[^@/]*)@)?"
    r"(?P<host>\[[0-9A-Fa-f:.]+\]|[^:/?#]*)"
    r"(?::(?P<port>[^/]*))?"
    r"(?P<path>/.*)?"
)
_SCP_RE = re.compile(r"(?P<user>[A-Za-z0-9._~-]+)@(?P<host>[A-Za-z0-9.-]+):(?P<path>(?!//).+)")
_HOST_RE = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*")


def _parse_query(
    text: str, start: int
) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[int, int], ...]]:
    """Split ``text[start:]`` (the part after ``?``) into raw pairs and value spans."""
    items: list[tuple[str, str]] = []
    spans: list[tuple[int, int]] = []
    pos = start
    for chunk in text[start:].split("&"):
        key, eq, value = chunk.partition("=")
        value_start = pos + len(key) + len(eq)
        items.append((key, value))
        spans.append((value_start, value_start + len(value)))
        pos += len(chunk) + 1
    return tuple(items), tuple(spans)


def _split_subdir(address: str, search_from: int) -> tuple[str, str | None]:
    idx = address.find("//", search_from)
    if idx < 0:
        return address, None
    subdir = address[idx + 2 :].strip("/")
    return address[:idx], subdir or None


def _clean_repo_path(raw: str) -> str:
    path = raw.strip("/")
    if path.endswith(".git"):
        path = path[: -len(".git")]
    return path.rstrip("/")


def parse_source(text: str, *, default_registry: str = DEFAULT_REGISTRY) -> ModuleSource:
    """Parse a module source string (the content of ``source = "..."``).

    Never raises: what it does not understand is ``kind="unknown"`` with a ``note``.
    """
    if not text.strip():
        return ModuleSource(text, "unknown", note="empty source")
    if text.startswith(("./", "../", "/", ".\\", "..\\")) or text in (".", ".."):
        return ModuleSource(text, "local", path=text)
    if text.startswith("file://"):
        return ModuleSource(text, "local", path=text[len("file://") :])

    forced: str | None = None
    body_start = 0
    forced_match = _FORCED_RE.match(text)
    if forced_match:
        forced = forced_match.group(1).lower()
        body_start = forced_match.end()
        if forced != "git":
            return ModuleSource(
                text, "unknown", note=f"{forced}:: sources are not versioned by this tool"
            )

    qmark = text.find("?", body_start)
    address_end = qmark if qmark >= 0 else len(text)
    query: tuple[tuple[str, str], ...] = ()
    spans: tuple[tuple[int, int], ...] = ()
    if qmark >= 0:
        query, spans = _parse_query(text, qmark + 1)
    address = text[body_start:address_end]

    url = _URL_RE.fullmatch(address)
    if url:
        scheme = url.group("scheme").lower()
        scheme_end = address.index("://") + 3
        if scheme == "tfr" and forced is None:
            return _registry_source(text, address, scheme_end, query, spans, default_registry)
        if scheme not in ("https", "http", "ssh", "git"):
            return ModuleSource(
                text,
                "unknown",
                query=query,
                query_spans=spans,
                note=f"unsupported scheme {scheme}://",
            )
        main, subdir = _split_subdir(address, scheme_end)
        url = _URL_RE.fullmatch(main)
        if url is None:  # pragma: no cover - a prefix of a URL is still a URL
            return ModuleSource(
                text, "unknown", query=query, query_spans=spans, note="unparsable URL"
            )
        raw_path = url.group("path") or ""
        if (
            forced is None
            and scheme in ("https", "http")
            and not raw_path.rstrip("/").endswith(".git")
        ):
            return ModuleSource(
                text,
                "unknown",
                query=query,
                query_spans=spans,
                note="plain http(s) URL without git:: or .git (an archive or X-Terraform-Get redirect)",
            )
        return _git_source(
            text, url.group("host"), url.group("port"), raw_path, subdir, query, spans
        )

    main, subdir = _split_subdir(address, 0)
    scp = _SCP_RE.fullmatch(main)
    if scp:
        return _git_source(text, scp.group("host"), None, scp.group("path"), subdir, query, spans)

    first, _, rest = main.partition("/")
    if first.lower() in _SHORTHAND_HOSTS and rest:
        return _git_source(text, first, None, rest, subdir, query, spans)

    return ModuleSource(
        text, "unknown", query=query, query_spans=spans, note="not a recognised module source"
    )


def _ref_from_query(
    query: tuple[tuple[str, str], ...], spans: tuple[tuple[int, int], ...], param: str
) -> tuple[str | None, tuple[int, int] | None]:
    for (key, value), span in zip(query, spans, strict=True):
        if key == param:
            return value, span
    return None, None


def _git_source(
    text: str,
    raw_host: str,
    raw_port: str | None,
    raw_path: str,
    subdir: str | None,
    query: tuple[tuple[str, str], ...],
    spans: tuple[tuple[int, int], ...],
) -> ModuleSource:
    host = raw_host.lower()
    path = _clean_repo_path(raw_path)
    port: int | None = None
    if raw_port:
        if not raw_port.isdigit():
            return ModuleSource(
                text, "unknown", query=query, query_spans=spans, note=f"bad port {raw_port!r}"
            )
        port = int(raw_port)
    if not host or (not _HOST_RE.fullmatch(host.strip("[]")) and not host.startswith("[")):
        return ModuleSource(
            text, "unknown", query=query, query_spans=spans, note=f"bad host {raw_host!r}"
        )
    if "/" not in path:
        return ModuleSource(
            text, "unknown", query=query, query_spans=spans, note="git source without org/repo path"
        )
    ref, ref_span = _ref_from_query(query, spans, "ref")
    return ModuleSource(
        text,
        "git",
        host=host,
        port=port,
        path=path,
        subdir=subdir,
        ref=ref,
        ref_param="ref",
        query=query,
        query_spans=spans,
        ref_span=ref_span,
    )


def _registry_source(
    text: str,
    address: str,
    scheme_end: int,
    query: tuple[tuple[str, str], ...],
    spans: tuple[tuple[int, int], ...],
    default_registry: str,
) -> ModuleSource:
    main, subdir = _split_subdir(address, scheme_end)
    rest = main[scheme_end:]
    host_part, _, path = rest.partition("/")
    host, _, raw_port = host_part.partition(":")
    segments = path.strip("/").split("/")
    if len(segments) != 3 or not all(segments):
        return ModuleSource(
            text,
            "unknown",
            query=query,
            query_spans=spans,
            note="registry source needs tfr://[host]/namespace/name/provider",
        )
    port = int(raw_port) if raw_port.isdigit() else None
    ref, ref_span = _ref_from_query(query, spans, "version")
    return ModuleSource(
        text,
        "registry",
        host=(host or default_registry).lower(),
        port=port,
        path="/".join(segments),
        subdir=subdir,
        ref=ref,
        ref_param="version",
        query=query,
        query_spans=spans,
        ref_span=ref_span,
    )


# --------------------------------------------------------------------------- versions


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
_BRANCH_NAMES = {
    "main",
    "master",
    "develop",
    "development",
    "dev",
    "trunk",
    "head",
    "stable",
    "latest",
}


def _not_a_version_reason(ref: str | None) -> str:
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
    if ref.lower() in _BRANCH_NAMES or ref.startswith(
        ("feature/", "release/", "hotfix/", "bugfix/")
    ):
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
        return Skip(current_ref, _not_a_version_reason(current_ref))
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


# --------------------------------------------------------------------------- HCL scanner


@dataclass(frozen=True)
class _Part:
    kind: Literal["literal", "interp", "directive"]
    start: int  # literal: its text; interp/directive: the expression between `${` and `}`
    end: int


@dataclass(frozen=True)
class _Tok:
    kind: Literal[
        "ident",
        "string",
        "lbrace",
        "rbrace",
        "open",
        "close",
        "equals",
        "newline",
        "comment",
        "heredoc",
        "other",
    ]
    start: int
    end: int
    parts: tuple[_Part, ...] = ()


_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z_][A-Za-z0-9_-]*)*")
_HEREDOC_RE = re.compile(r"<<-?([A-Za-z_][A-Za-z0-9_-]*)[ \t]*\r?\n")


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _lex_string(text: str, i: int) -> tuple[tuple[_Part, ...], int]:
    """Scan a quoted template from ``i`` (after the quote); return parts and the closing quote index."""
    parts: list[_Part] = []
    lit_start = i
    n = len(text)
    opened = i - 1
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == '"':
            if i > lit_start:
                parts.append(_Part("literal", lit_start, i))
            return tuple(parts), i
        if c == "\n":
            break
        if text.startswith(("$${", "%%{"), i):
            i += 3
            continue
        if text.startswith(("${", "%{"), i):
            if i > lit_start:
                parts.append(_Part("literal", lit_start, i))
            close = _skip_template_expr(text, i + 2, opened)
            parts.append(_Part("interp" if c == "$" else "directive", i + 2, close))
            i = close + 1
            lit_start = i
            continue
        i += 1
    raise ToolingError(
        f"unterminated string starting on line {_line_of(text, opened)}; fix the HCL first"
    )


def _skip_template_expr(text: str, i: int, opened: int) -> int:
    depth = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == '"':
            _, i = _lex_string(text, i + 1)
        elif c == "{":
            depth += 1
        elif c == "}":
            if depth == 0:
                return i
            depth -= 1
        i += 1
    raise ToolingError(
        f"unterminated ${{...}} in the string on line {_line_of(text, opened)}; fix the HCL first"
    )


def _lex(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            toks.append(_Tok("newline", i, i + 1))
            i += 1
        elif c in " \t\r\f\ufeff":
            i += 1
        elif c == "#" or text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            if end > i and text[end - 1] == "\r":
                end -= 1
            toks.append(_Tok("comment", i, end))
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise ToolingError(
                    f"unterminated /* comment on line {_line_of(text, i)}; fix the HCL first"
                )
            toks.append(_Tok("comment", i, end + 2))
            i = end + 2
        elif c == '"':
            parts, close = _lex_string(text, i + 1)
            toks.append(_Tok("string", i, close + 1, parts))
            i = close + 1
        elif text.startswith("<<", i) and (heredoc := _HEREDOC_RE.match(text, i)):
            marker = heredoc.group(1)
            pos = heredoc.end()
            while True:
                line_end = text.find("\n", pos)
                line_end = n if line_end < 0 else line_end
                if text[pos:line_end].strip() == marker:
                    break
                if line_end >= n:
                    raise ToolingError(
                        f"unterminated heredoc <<{marker} on line {_line_of(text, i)}; fix the HCL first"
                    )
                pos = line_end + 1
            toks.append(_Tok("heredoc", i, line_end))
            i = line_end
        elif c == "{":
            toks.append(_Tok("lbrace", i, i + 1))
            i += 1
        elif c == "}":
            toks.append(_Tok("rbrace", i, i + 1))
            i += 1
        elif c in "([":
            toks.append(_Tok("open", i, i + 1))
            i += 1
        elif c in ")]":
            toks.append(_Tok("close", i, i + 1))
            i += 1
        elif c == "=":
            if text.startswith(("==", "=>"), i):
                toks.append(_Tok("other", i, i + 2))
                i += 2
            else:
                toks.append(_Tok("equals", i, i + 1))
                i += 1
        elif c in "!<>" and text.startswith("=", i + 1):
            toks.append(_Tok("other", i, i + 2))
            i += 2
        elif ident := _IDENT_RE.match(text, i):
            toks.append(_Tok("ident", i, ident.end()))
            i = ident.end()
        else:
            toks.append(_Tok("other", i, i + 1))
            i += 1
    return toks


@dataclass(frozen=True)
class _Attr:
    name: str
    name_start: int
    value: tuple[_Tok, ...]  # the expression's tokens, comments left out


def _skip_group(toks: Sequence[_Tok], k: int) -> int:
    """``toks[k]`` opens a group; return the index after its closing token."""
    depth = 0
    while k < len(toks):
        kind = toks[k].kind
        if kind in ("lbrace", "open"):
            depth += 1
        elif kind in ("rbrace", "close"):
            depth -= 1
            if depth == 0:
                return k + 1
        k += 1
    return k


def _parse_body(text: str, toks: Sequence[_Tok], k: int) -> tuple[list[_Attr], int]:
    """Attributes directly in a block body starting at ``toks[k]`` (after ``{``)."""
    attrs: list[_Attr] = []
    at_start = True
    while k < len(toks):
        tok = toks[k]
        if tok.kind == "newline":
            at_start = True
            k += 1
        elif tok.kind == "comment":
            k += 1
        elif tok.kind == "rbrace":
            return attrs, k + 1
        elif (
            at_start
            and tok.kind == "ident"
            and "." not in text[tok.start : tok.end]
            and k + 1 < len(toks)
            and toks[k + 1].kind == "equals"
        ):
            k += 2
            value: list[_Tok] = []
            depth = 0
            while k < len(toks):
                t = toks[k]
                if depth == 0 and t.kind in ("newline", "rbrace"):
                    break
                if t.kind in ("lbrace", "open"):
                    depth += 1
                elif t.kind in ("rbrace", "close"):
                    depth -= 1
                if t.kind != "comment":
                    value.append(t)
                k += 1
            attrs.append(_Attr(text[tok.start : tok.end], tok.start, tuple(value)))
            at_start = False
        elif tok.kind in ("lbrace", "open"):
            k = _skip_group(toks, k)
            at_start = False
        else:
            at_start = False
            k += 1
    return attrs, k


@dataclass(frozen=True)
class _Scan:
    toks: tuple[_Tok, ...]
    sources: tuple[_Attr, ...]
    locals: dict[str, _Attr]


def _scan(text: str) -> _Scan:
    toks = _lex(text)
    sources: list[_Attr] = []
    locals_: dict[str, _Attr] = {}
    k = 0
    stmt_start = True
    while k < len(toks):
        tok = toks[k]
        if tok.kind == "newline":
            stmt_start = True
            k += 1
            continue
        if tok.kind == "comment":
            k += 1
            continue
        word = text[tok.start : tok.end] if tok.kind == "ident" else ""
        if (
            stmt_start
            and word in ("terraform", "locals")
            and k + 1 < len(toks)
            and toks[k + 1].kind == "lbrace"
        ):
            attrs, k = _parse_body(text, toks, k + 2)
            if word == "terraform":
                sources.extend(a for a in attrs if a.name == "source")
            else:
                for attr in attrs:
                    locals_.setdefault(attr.name, attr)
            stmt_start = False
            continue
        if tok.kind in ("lbrace", "open"):
            k = _skip_group(toks, k)
            # a block's closing brace ends its statement
            stmt_start = True
            continue
        stmt_start = False
        k += 1
    return _Scan(tuple(toks), tuple(sources), locals_)


# --------------------------------------------------------------------------- resolution


@dataclass(frozen=True)
class Segment:
    """A literal run of a quoted string: its text and its offsets in the file."""

    text: str
    start: int
    end: int


@dataclass(frozen=True)
class _Piece:
    text: str
    offset: int | None  # None: an opaque (unresolvable) interpolation
    reason: str | None = None


_OPAQUE = "\x00"
_LOCAL_REF_RE = re.compile(r"local\.([A-Za-z_][A-Za-z0-9_-]*)")


def _expr_text(text: str, value: Sequence[_Tok]) -> str:
    return text[value[0].start : value[-1].end] if value else ""


def _pieces_for_parts(
    text: str, parts: Sequence[_Part], scan: _Scan, seen: frozenset[str]
) -> list[_Piece]:
    pieces: list[_Piece] = []
    for part in parts:
        if part.kind == "literal":
            pieces.append(_Piece(text[part.start : part.end], part.start))
            continue
        expr = text[part.start : part.end].strip().strip("~").strip()
        local = _LOCAL_REF_RE.fullmatch(expr)
        if part.kind == "interp" and local:
            pieces.extend(_pieces_for_local(text, local.group(1), scan, seen))
        elif part.kind == "directive":
            pieces.append(
                _Piece(_OPAQUE, None, f"the template directive %{{{expr}}} is not a literal")
            )
        else:
            pieces.append(
                _Piece(_OPAQUE, None, f"${{{expr}}} is not a literal or a local of this file")
            )
    return pieces


def _pieces_for_local(text: str, name: str, scan: _Scan, seen: frozenset[str]) -> list[_Piece]:
    if name in seen:
        return [_Piece(_OPAQUE, None, f"local.{name} refers to itself")]
    attr = scan.locals.get(name)
    if attr is None:
        return [
            _Piece(
                _OPAQUE,
                None,
                f"local.{name} is not defined in this file (included locals are not followed)",
            )
        ]
    return _pieces_for_value(text, attr.value, scan, seen | {name}, f"local.{name}")


def _pieces_for_value(
    text: str, value: Sequence[_Tok], scan: _Scan, seen: frozenset[str], what: str
) -> list[_Piece]:
    if len(value) == 1 and value[0].kind == "string":
        return _pieces_for_parts(text, value[0].parts, scan, seen)
    if len(value) == 1 and value[0].kind == "ident":
        local = _LOCAL_REF_RE.fullmatch(text[value[0].start : value[0].end])
        if local:
            return _pieces_for_local(text, local.group(1), scan, seen)
    return [
        _Piece(
            _OPAQUE,
            None,
            f"{what} is the expression `{_expr_text(text, value)}`, not a string literal",
        )
    ]


@dataclass(frozen=True)
class _Resolution:
    source: ModuleSource | None
    ref: str | None
    ref_span: tuple[int, int] | None
    unresolved: str | None


def _resolve(pieces: Sequence[_Piece]) -> _Resolution:
    composed = "".join(p.text for p in pieces)
    starts: list[int] = []
    pos = 0
    for piece in pieces:
        starts.append(pos)
        pos += len(piece.text)
    opaque = [p for p in pieces if p.offset is None]

    def to_file(span: tuple[int, int]) -> tuple[tuple[int, int] | None, str | None]:
        a, b = span
        for piece, start in zip(pieces, starts, strict=True):
            end = start + len(piece.text)
            if start <= a and b <= end and (a < end or a == b == end):
                if piece.offset is None:
                    return None, piece.reason
                return (piece.offset + a - start, piece.offset + b - start), None
        touched = [
            p.reason
            for p, s in zip(pieces, starts, strict=True)
            if s < b and a < s + len(p.text) and p.reason
        ]
        return None, touched[0] if touched else "the ref is split across several strings"

    if not opaque:
        source = parse_source(composed)
        if source.ref_span is None:
            return _Resolution(source, source.ref, None, None)
        span, reason = to_file(source.ref_span)
        return _Resolution(source, source.ref, span, reason)

    first_reason = opaque[0].reason
    qmark = composed.find("?")
    if qmark < 0:
        return _Resolution(None, None, None, first_reason)
    query, spans = _parse_query(composed, qmark + 1)
    param = "version" if composed.startswith("tfr://") else "ref"
    ref, ref_span = _ref_from_query(query, spans, param)
    if ref is None or ref_span is None:
        return _Resolution(None, None, None, first_reason)
    span, reason = to_file(ref_span)
    if span is None:
        return _Resolution(None, None, None, reason)
    return _Resolution(None, ref, span, f"the module is unknown: {first_reason}")


# --------------------------------------------------------------------------- edits


@dataclass(frozen=True)
class SourceLine:
    """One ``source`` attribute of a ``terraform`` block.

    All spans are offsets into the scanned text. When the value reaches the
    ref through locals, ``ref_span`` points into the ``locals`` literal that
    holds it.
    """

    #: 1-based line of the ``source`` keyword
    line: int
    #: the value as written: the string's content without its quotes, or the bare expression
    value_span: tuple[int, int]
    value: str
    #: the value is a quoted string containing ``${...}`` or ``%{...}``
    interpolated: bool
    #: literal runs of a quoted value (one for a plain string, none for a bare expression)
    segments: tuple[Segment, ...]
    #: ``base`` when the value is exactly ``local.base`` or ``"${local.base}"``
    local: str | None
    #: the parsed source after following locals; None when part of it is not literal.
    #: Its own spans index ``source.text``, not the file.
    source: ModuleSource | None
    ref: str | None
    ref_span: tuple[int, int] | None
    #: version written in a comment after a SHA ref on the same line (``# v1.2.3``)
    comment_version: str | None
    comment_version_span: tuple[int, int] | None
    #: why ``source`` or ``ref_span`` is unknown
    unresolved: str | None

    @property
    def pinned_by_sha(self) -> bool:
        return is_commit_sha(self.ref)

    @property
    def current_ref(self) -> str | None:
        """The version this line is at: the comment's version for a SHA pin, else the ref."""
        if self.pinned_by_sha and self.comment_version is not None:
            return self.comment_version
        return self.ref


_COMMENT_TOKEN_RE = re.compile(r"[^\s=,:;()\[\]\"'`*/#]+(?:/[^\s=,:;()\[\]\"'`*/#]+)*")


def _comment_version(
    text: str, toks: Sequence[_Tok], after: int
) -> tuple[str | None, tuple[int, int] | None]:
    """First version in a comment that follows offset ``after`` on the same line."""
    line_end = text.find("\n", after)
    line_end = len(text) if line_end < 0 else line_end
    for tok in toks:
        if tok.kind != "comment" or tok.start < after or tok.start >= line_end:
            continue
        body_start = tok.start + (1 if text[tok.start] == "#" else 2)
        for match in _COMMENT_TOKEN_RE.finditer(text, body_start, tok.end):
            if parse_version(match.group()):
                return match.group(), (match.start(), match.end())
        return None, None
    return None, None


def find_source_lines(text: str) -> list[SourceLine]:
    """Every ``source = ...`` directly inside a top-level ``terraform { }`` block, in order.

    Raises :class:`ToolingError` for an unterminated string, comment or heredoc.
    """
    scan = _scan(text)
    found: list[SourceLine] = []
    for attr in scan.sources:
        value = attr.value
        if not value:
            continue
        interpolated = False
        segments: tuple[Segment, ...] = ()
        local: str | None = None
        if len(value) == 1 and value[0].kind == "string":
            tok = value[0]
            value_span = (tok.start + 1, tok.end - 1)
            interpolated = any(p.kind != "literal" for p in tok.parts)
            segments = tuple(
                Segment(text[p.start : p.end], p.start, p.end)
                for p in tok.parts
                if p.kind == "literal"
            )
            if len(tok.parts) == 1 and tok.parts[0].kind == "interp":
                inner = _LOCAL_REF_RE.fullmatch(
                    text[tok.parts[0].start : tok.parts[0].end].strip().strip("~").strip()
                )
                local = inner.group(1) if inner else None
        else:
            value_span = (value[0].start, value[-1].end)
            if len(value) == 1 and value[0].kind == "ident":
                bare = _LOCAL_REF_RE.fullmatch(text[value[0].start : value[0].end])
                local = bare.group(1) if bare else None
        res = _resolve(_pieces_for_value(text, value, scan, frozenset(), "source"))
        comment_version: str | None = None
        comment_span: tuple[int, int] | None = None
        if res.ref_span is not None and is_commit_sha(res.ref):
            comment_version, comment_span = _comment_version(text, scan.toks, res.ref_span[1])
        found.append(
            SourceLine(
                line=_line_of(text, attr.name_start),
                value_span=value_span,
                value=text[value_span[0] : value_span[1]],
                interpolated=interpolated,
                segments=segments,
                local=local,
                source=res.source,
                ref=res.ref,
                ref_span=res.ref_span,
                comment_version=comment_version,
                comment_version_span=comment_span,
                unresolved=res.unresolved,
            )
        )
    return found


def bump_text(
    text: str,
    old_ref: str,
    new_ref: str,
    *,
    identity: str | None = None,
    new_sha_comment: str | None = None,
) -> str:
    """Replace ``old_ref`` by ``new_ref`` in every matching ``source``; keep every other byte.

    A source matches when its current ref (see :attr:`SourceLine.current_ref`)
    is ``old_ref`` and, if ``identity`` is given, its module identity is that
    (sources whose identity cannot be resolved then never match). For a
    source pinned to a commit SHA with a ``# vX.Y.Z`` comment, ``old_ref`` is
    the comment's version: the SHA is replaced by ``new_sha_comment`` (the new
    tag's 40-hex commit) and the comment's version by ``new_ref``. A ref that
    lives in a ``locals`` literal is edited there, once. Returns ``text``
    unchanged when nothing matches.
    """
    if not _SAFE_REF_RE.fullmatch(new_ref):
        raise ToolingError(
            f"refusing to write ref {new_ref!r}: use letters, digits and . _ / + - only"
        )
    if new_sha_comment is not None and not is_commit_sha(new_sha_comment):
        raise ToolingError(f"new_sha_comment must be a 40-hex commit SHA, got {new_sha_comment!r}")
    edits: dict[tuple[int, int], str] = {}
    for line in find_source_lines(text):
        if line.ref_span is None or line.current_ref != old_ref:
            continue
        if identity is not None and (line.source is None or line.source.identity != identity):
            continue
        if line.pinned_by_sha and line.comment_version_span is not None:
            if new_sha_comment is None:
                raise ToolingError(
                    f"line {line.line} pins {old_ref} by commit SHA; pass the commit SHA of "
                    f"{new_ref} (new_sha_comment) to update both the SHA and its comment"
                )
            edits[line.ref_span] = new_sha_comment
            edits[line.comment_version_span] = new_ref
        else:
            edits[line.ref_span] = new_ref
    out = text
    previous_start = len(text) + 1
    for (start, end), replacement in sorted(edits.items(), reverse=True):
        if end > previous_start:  # pragma: no cover - spans come from disjoint tokens
            raise ToolingError("overlapping edits; this is a bug in tooling.model.modules")
        out = out[:start] + replacement + out[end:]
        previous_start = start
    return out


@dataclass(frozen=True)
class ResolvedSource:
    """Where the ref of a ``local`` source string lives."""

    local: str
    ref: str
    #: offsets of the ref in the text: edit here
    ref_span: tuple[int, int]
    #: the whole source after following locals; None if part of it is not literal
    source: ModuleSource | None


@dataclass(frozen=True)
class Unresolvable:
    """A ref that cannot be located in a literal of this file, and why."""

    reason: str


def resolve_local_source(text: str, local_name: str) -> ResolvedSource | Unresolvable:
    """Follow ``local.<local_name>`` (through ``${local.x}`` and aliases) to the literal holding its ref."""
    scan = _scan(text)
    if local_name not in scan.locals:
        return Unresolvable(
            f"local.{local_name} is not defined in this file (included locals are not followed)"
        )
    res = _resolve(_pieces_for_local(text, local_name, scan, frozenset()))
    if res.ref is None or res.ref_span is None:
        if res.unresolved:
            return Unresolvable(res.unresolved)
        return Unresolvable(
            f"local.{local_name} has no ?ref= (or ?version=): the source is not pinned"
        )
    return ResolvedSource(local_name, res.ref, res.ref_span, res.source)


# --------------------------------------------------------------------------- tags


@dataclass(frozen=True)
class Tag:
    """One tag of a module repository."""

    name: str
    #: the commit the tag names (peeled through an annotated tag object)
    commit: str
    annotated: bool


@dataclass(frozen=True)
class RepoTags:
    """The outcome of listing one repository's tags: ``tags`` or ``error``."""

    url: str
    tags: Mapping[str, Tag] = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


def remote_url(source: ModuleSource) -> str | None:
    """The URL git clones for a git module source; None for anything else.

    The ``git::`` forcing prefix, the ``//subdir`` and the query are dropped;
    the scheme, user and port are kept as written (they are how the user
    reaches the repository). go-getter's ``github.com/org/repo`` shorthand
    becomes ``https://github.com/org/repo.git``.
    """
    if source.kind != "git" or not source.host or not source.path:
        return None
    text = source.text.removeprefix("git::")
    text = text.split("?", 1)[0]
    scheme = text.find("://")
    if scheme >= 0:
        sub = text.find("//", scheme + 3)
        return text[:sub] if sub >= 0 else text
    sub = text.find("//")
    address = text[:sub] if sub >= 0 else text
    first = address.split("/", 1)[0].lower()
    if first == source.host and "@" not in address.split("/", 1)[0]:
        # the shorthand: go-getter detects it as https
        path = source.path + ".git"
        return f"https://{source.host}/{path}"
    return address  # SCP-style git@host:org/repo.git
