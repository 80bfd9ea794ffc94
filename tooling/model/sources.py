"""Module sources as data: go-getter addresses, commit SHAs, and a repository's tags.

Pure functions only: no subprocess and no file access.

:func:`parse_source` reads a Terragrunt/OpenTofu module source (go-getter
address) into a :class:`ModuleSource`: ``git::https://...``, ``git::ssh://...``,
SCP-style ``git@host:org/repo.git``, the ``github.com``/``gitlab.com``/
``bitbucket.org`` shorthands, plain ``https://.../repo.git``, a repository on
this machine (``git::file:///abs/repo.git``), ``tfr://`` registry sources,
local paths. :func:`support` says per source what ``invoke check`` (pins),
``invoke outdated`` and ``invoke bump-module`` do with it, and why not. It keeps the query string exactly as written and
the offsets of the ref so that an edit can replace only that substring, and
reads it as go-getter does (:mod:`tooling.model.getter`): the ref is the
percent-decoded value, the path is decoded with its ``..`` segments resolved
before it becomes the identity the allowlist checks, and a query go-getter
could read otherwise than it is written (a key given twice, ``?re%66=main&ref=v1``)
makes the source ``unknown``, never a guess.
:func:`remote_url` is the URL git clones for a source; :class:`Tag` and
:class:`RepoTags` are what listing a repository's tags returns.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from tooling.model.getter import clean_path, clean_subdir, decode, query_problem

__all__ = [
    "DEFAULT_REGISTRY",
    "ModuleSource",
    "RepoTags",
    "Support",
    "Tag",
    "is_commit_sha",
    "parse_query",
    "parse_source",
    "ref_from_query",
    "remote_url",
    "support",
]

SourceKind = Literal["git", "registry", "local", "unknown"]

#: Registry host of ``tfr:///ns/name/provider``: Terragrunt uses the OpenTofu
#: registry when it runs OpenTofu (this repository does).
DEFAULT_REGISTRY = "registry.opentofu.org"

#: Hosts whose ``host/org/repo`` shorthand go-getter resolves to a git clone.
_SHORTHAND_HOSTS = ("github.com", "gitlab.com", "bitbucket.org")

_SHA_RE = re.compile(r"[0-9a-fA-F]{40}")


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
    #: how the address is fetched: ``https``, ``ssh``, ``file``... (the URL's scheme, ``ssh``
    #: for SCP-style ``git@host:org/repo``, ``https`` for the ``github.com/...`` shorthand),
    #: ``tfr`` for the registry, ``s3``/``gcs``/``hg``... for a forced getter; None when local
    scheme: str | None = None
    #: lowercase host without port or user (registry host for ``registry``)
    host: str | None = None
    port: int | None = None
    #: ``org/repo`` without ``.git`` (may be ``group/sub/repo``); ``ns/name/provider``
    #: for a registry; the path as written for ``local``
    path: str | None = None
    #: the part after ``//`` (``modules/vm``), without leading/trailing slashes
    subdir: str | None = None
    #: value of the ``ref`` (git) or ``version`` (registry) query parameter, percent-decoded
    #: (what go-getter fetches); ``ref_span`` is where it is written
    ref: str | None = None
    ref_param: Literal["ref", "version"] | None = None
    #: every query parameter in order, values exactly as written (not URL-decoded)
    query: tuple[tuple[str, str], ...] = ()
    #: ``(start, end)`` of each query parameter's *value* in ``text``
    query_spans: tuple[tuple[int, int], ...] = ()
    ref_span: tuple[int, int] | None = None
    #: why a source is ``unknown`` (or a remark on an odd one)
    note: str | None = None
    #: go-getter could fetch something else than the source seems to say (a key given
    #: twice, a malformed escape, a subdirectory leaving the repository): refused
    ambiguous: bool = False

    @property
    def identity(self) -> str | None:
        """``host/org/repo`` (git) or ``host/ns/name/provider`` (registry); None otherwise.

        Scheme, user, port, ``.git``, subdir and query are not part of it, so
        the HTTPS and SSH spellings of one repository have the same identity. A repository
        on this machine (``git::file:///abs/repo.git``) is ``file:///abs/repo``.
        """
        if self.kind == "git" and self.scheme == "file" and self.path:
            return f"file:///{self.path}"
        if self.kind in ("git", "registry") and self.host and self.path:
            return f"{self.host}/{self.path}"
        return None

    @property
    def tag_prefix(self) -> str:
        """Monorepo tag prefix of the ref (``dns-`` for ``dns-v1.2.3``), else ``""``."""
        # imported here: every task's first line parses the units' sources, none reads a tag
        from tooling.model.versions import parse_version

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


def parse_query(
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


def _clean_repo_path(raw: str) -> str | None:
    """``org/repo`` as the server resolves it (decoded, dot segments removed, no ``.git``)."""
    path = clean_path(raw)
    if path is None:
        return None
    if path.endswith(".git"):
        path = path[: -len(".git")]
    return path.rstrip("/")


#: go-getter's forms of a remote source; anything else is a path on disk (as Terragrunt reads it)
_REMOTE_PREFIXES = ("github.com/", "git@", "bitbucket.org/", "gitlab.com/")


def local_source_dir(source: str) -> str | None:
    """The folder of a local module source (``./m``, ``../m``, ``m``, ``/abs``), or None if remote."""
    if "::" in source or "://" in source or source.startswith(_REMOTE_PREFIXES):
        return None
    first = source.split("/", 1)[0]
    if "." in first and first not in (".", "..") and "/" in source:
        return None  # a host name: go-getter's S3/GCS and other detectors
    path = source.split("?", 1)[0]
    if "//" in path:  # "dir//subdir": the whole folder is copied
        path = path.split("//", 1)[0]
    return path


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
                text,
                "unknown",
                scheme=forced,
                note=f"{forced}:: sources are not versioned by this tool "
                "(no git tags to list, no ?ref= to edit)",
            )

    qmark = text.find("?", body_start)
    address_end = qmark if qmark >= 0 else len(text)
    query: tuple[tuple[str, str], ...] = ()
    spans: tuple[tuple[int, int], ...] = ()
    if qmark >= 0:
        query, spans = parse_query(text, qmark + 1)
        ambiguous = query_problem(query)
        if ambiguous is not None:
            return ModuleSource(
                text, "unknown", query=query, query_spans=spans, note=ambiguous, ambiguous=True
            )
    address = text[body_start:address_end]

    url = _URL_RE.fullmatch(address)
    if url:
        scheme = url.group("scheme").lower()
        scheme_end = address.index("://") + 3
        if scheme == "tfr" and forced is None:
            return _registry_source(text, address, scheme_end, query, spans, default_registry)
        if scheme == "file" and forced == "git":
            return _file_git_source(text, address, scheme_end, query, spans)
        if scheme not in ("https", "http", "ssh", "git"):
            return ModuleSource(
                text,
                "unknown",
                scheme=scheme,
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
                scheme=scheme,
                query=query,
                query_spans=spans,
                note="plain http(s) URL without git:: or .git (an archive or X-Terraform-Get redirect)",
            )
        return _git_source(
            text, url.group("host"), url.group("port"), raw_path, subdir, query, spans, scheme
        )

    main, subdir = _split_subdir(address, 0)
    scp = _SCP_RE.fullmatch(main)
    if scp:
        return _git_source(
            text, scp.group("host"), None, scp.group("path"), subdir, query, spans, "ssh"
        )

    first, _, rest = main.partition("/")
    if first.lower() in _SHORTHAND_HOSTS and rest:
        return _git_source(text, first, None, rest, subdir, query, spans, "https")

    return ModuleSource(
        text, "unknown", query=query, query_spans=spans, note="not a recognised module source"
    )


def ref_from_query(
    query: tuple[tuple[str, str], ...], spans: tuple[tuple[int, int], ...], param: str
) -> tuple[str | None, tuple[int, int] | None]:
    """The decoded value of ``param`` and where it is written, as go-getter reads the query;
    (None, None) when it is absent, or ambiguous (given twice, a malformed escape)."""
    found: list[tuple[str | None, tuple[int, int]]] = []
    for (key, value), span in zip(query, spans, strict=True):
        if decode(key) == param:
            found.append((decode(value), span))
    if len(found) != 1 or found[0][0] is None:
        return None, None
    return found[0]


def _git_source(
    text: str,
    raw_host: str,
    raw_port: str | None,
    raw_path: str,
    subdir: str | None,
    query: tuple[tuple[str, str], ...],
    spans: tuple[tuple[int, int], ...],
    scheme: str,
) -> ModuleSource:
    host = raw_host.lower()
    path = _clean_repo_path(raw_path)
    if path is None:
        return ModuleSource(
            text,
            "unknown",
            query=query,
            query_spans=spans,
            note=f"the repository path {raw_path!r} has a malformed percent-escape",
            ambiguous=True,
        )
    subdir, subdir_problem = clean_subdir(subdir) if subdir else (None, None)
    if subdir_problem:
        return ModuleSource(
            text, "unknown", query=query, query_spans=spans, note=subdir_problem, ambiguous=True
        )
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
    ref, ref_span = ref_from_query(query, spans, "ref")
    return ModuleSource(
        text,
        "git",
        scheme=scheme,
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
    subdir, subdir_problem = clean_subdir(subdir) if subdir else (None, None)
    if subdir_problem:
        return ModuleSource(
            text, "unknown", query=query, query_spans=spans, note=subdir_problem, ambiguous=True
        )
    rest = main[scheme_end:]
    host_part, _, path = rest.partition("/")
    host, _, raw_port = host_part.partition(":")
    segments = path.strip("/").split("/")
    if len(segments) != 3 or not all(s and s not in (".", "..") and "%" not in s for s in segments):
        return ModuleSource(
            text,
            "unknown",
            query=query,
            query_spans=spans,
            note="registry source needs tfr://[host]/namespace/name/provider",
        )
    port = int(raw_port) if raw_port.isdigit() else None
    ref, ref_span = ref_from_query(query, spans, "version")
    return ModuleSource(
        text,
        "registry",
        scheme="tfr",
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


def _file_git_source(
    text: str,
    address: str,
    scheme_end: int,
    query: tuple[tuple[str, str], ...],
    spans: tuple[tuple[int, int], ...],
) -> ModuleSource:
    """``git::file:///abs/repo.git//subdir?ref=...``: a git repository on this machine."""
    main, subdir = _split_subdir(address, scheme_end)
    raw_path = main[scheme_end:]
    if not raw_path.startswith("/"):
        return ModuleSource(
            text,
            "unknown",
            scheme="file",
            query=query,
            query_spans=spans,
            note="a file:// git source needs an absolute path (git::file:///abs/repo.git)",
        )
    path = _clean_repo_path(raw_path)
    if not path:
        return ModuleSource(
            text,
            "unknown",
            scheme="file",
            query=query,
            query_spans=spans,
            note=f"the repository path {raw_path!r} has a malformed percent-escape",
            ambiguous=path is None,
        )
    subdir, subdir_problem = clean_subdir(subdir) if subdir else (None, None)
    if subdir_problem:
        return ModuleSource(
            text, "unknown", query=query, query_spans=spans, note=subdir_problem, ambiguous=True
        )
    ref, ref_span = ref_from_query(query, spans, "ref")
    return ModuleSource(
        text,
        "git",
        scheme="file",
        path=path,
        subdir=subdir,
        ref=ref,
        ref_param="ref",
        query=query,
        query_spans=spans,
        ref_span=ref_span,
    )


@dataclass(frozen=True)
class Support:
    """What the tooling does with one module source, and why not when it does not."""

    #: ``invoke check`` reads its version (the pin rules: a tag, or a SHA with its comment)
    pins: bool
    #: ``invoke outdated`` lists the repository's newer tags
    outdated: bool
    #: ``invoke bump-module``/``bump-all`` rewrite its ref
    bump: bool
    reason: str


#: why a registry source is neither listed nor bumped (its version is still checked)
REGISTRY_REASON = (
    "a registry module: its ?version= is checked, but its versions are not read from "
    "git tags and the registry protocol is not spoken, so it is neither listed nor bumped"
)


def support(source: ModuleSource) -> Support:
    """Per source form, what pins, ``outdated`` and ``bump-module`` do (the table in
    docs/bumps.md)."""
    if source.kind == "git" and source.identity is not None:
        return Support(
            True,
            True,
            True,
            f"a git repository ({source.scheme}): its tags are listed with git, its ?ref= is "
            "edited in place",
        )
    if source.kind == "registry":
        return Support(True, False, False, REGISTRY_REASON)
    if source.kind == "local":
        return Support(
            False,
            False,
            False,
            "a local path: its version is whatever the checkout holds (pin-local-source)",
        )
    return Support(False, False, False, source.note or "not a recognised module source")


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
    if source.kind != "git" or not (source.host or source.scheme == "file") or not source.path:
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
