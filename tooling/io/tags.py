"""Module repositories: their tags (``git ls-remote --tags``) and their history.

The I/O edge of the bump tooling towards module repositories, with the pure
parts beside it:

- :func:`remote_url` turns a parsed module source into the URL git clones
  (``git::https://host/org/repo.git//sub?ref=v1`` -> ``https://host/org/repo.git``);
- :func:`discover` lists the tags of many repositories, **once per repository
  per run**, in a thread pool; a repository that fails is reported in its
  :class:`RepoTags` (``error``), it never aborts the others;
- :func:`fetch` mirrors a repository's tags into a local cache, so the
  changelog (annotated tag messages, commit subjects, ``CHANGELOG.md``) can be
  read at the new tag;
- :func:`mirror_now` lists a repository's tags as they are now and fetches
  only when that list differs from the one the mirror last fetched (the
  working-copy check asks this before every plan); :func:`tree_of` gives a
  commit's files, kept per commit in the mirror once read.

Git runs with the environment the caller passes (``Workspace.tool_env``): the
``url.<base>.insteadOf`` rewrites in it (the sandbox catalog,
``IAC_MODULE_REWRITE``) apply to ``ls-remote`` and ``fetch`` exactly as to
Terragrunt's downloads.

**Authentication.** SSH URLs use the user's keys and ssh configuration, as
any git command does. For HTTPS, a token from the environment
(:func:`token_from_env`) is given to git as an ``http.<url>.extraHeader``
config entry scoped to the token's host, and only for a repository whose URL
(after the rewrites) is HTTPS on that host. The entry travels in the child's
environment (``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n``),
never on its command line, so it is not in ``ps``, in the echoed command
(``IAC_ECHO_COMMANDS``) or in an error message; error text is redacted anyway.
"""

from __future__ import annotations

import base64
import hashlib
import os
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tooling.errors import ToolingError
from tooling.io import git, outdir, proc
from tooling.model.sources import RepoTags, Tag

__all__ = [
    "Token",
    "auth_config",
    "discover",
    "effective_url",
    "fetch",
    "list_tags",
    "ls_remote_args",
    "mirror_now",
    "parse_ls_remote",
    "rewrites_from_env",
    "token_from_env",
    "tree_of",
    "with_git_config",
]

#: seconds one ``ls-remote`` or ``fetch`` may take before it counts as failed
TIMEOUT = 120.0
#: thread-pool size for :func:`discover` (each worker waits on one git process)
MAX_JOBS = 16


# --------------------------------------------------------------------------- pure


def parse_ls_remote(text: str) -> dict[str, Tag]:
    """Parse ``git ls-remote --tags`` output into tags by name.

    An annotated tag appears twice: ``<tag object>  refs/tags/v1`` and
    ``<commit>  refs/tags/v1^{}``; the peeled (``^{}``) line gives the commit.
    """
    objects: dict[str, str] = {}
    peeled: dict[str, str] = {}
    for line in text.splitlines():
        sha, _, ref = line.strip().partition("\t")
        if not ref.startswith("refs/tags/") or not sha:
            continue
        name = ref[len("refs/tags/") :]
        if name.endswith("^{}"):
            peeled[name[:-3]] = sha
        else:
            objects[name] = sha
    return {
        name: Tag(name, peeled.get(name, sha), name in peeled)
        for name, sha in sorted(objects.items())
    }


def ls_remote_args(url: str) -> list[str]:
    """``git ls-remote --tags URL`` (its arguments): every tag, annotated ones with their peeled line."""
    return ["ls-remote", "--tags", url]


def fetch_args(url: str) -> list[str]:
    """Mirror the tags of ``url`` (and the commits they need) into the current repository,
    without the housekeeping git starts after a fetch (``maintenance.auto``: a mirror
    holds a few tags, and that process was one of every fetch's ten on a fresh runner),
    keeping what arrives as the pack it came in (``fetch.unpackLimit=1``: indexing the
    pack costs less than writing each object apart)."""
    return [
        "-c",
        "maintenance.auto=false",
        "-c",
        "fetch.unpackLimit=1",
        "fetch",
        "--quiet",
        "--force",
        "--no-tags",
        url,
        "+refs/tags/*:refs/tags/*",
    ]


@dataclass(frozen=True)
class Token:
    """A token for git over HTTPS on one host. ``repr`` never shows the value."""

    value: str = field(repr=False)
    host: str

    def redact(self, text: str) -> str:
        out = text.replace(self.value, "***")
        return out.replace(_basic(self.value), "***")


def _basic(token: str) -> str:
    return base64.b64encode(f"x-access-token:{token}".encode()).decode()


def token_from_env(environ: Mapping[str, str] | None = None) -> Token | None:
    """The token for module repositories over HTTPS, or None.

    ``IAC_GIT_TOKEN``, else ``GITHUB_TOKEN``, else ``GH_TOKEN``. It is used
    only for the host ``IAC_GIT_TOKEN_HOST``, else the host of
    ``GITHUB_SERVER_URL`` (GitHub Actions sets it; GitHub Enterprise), else
    ``github.com``.
    """
    env = os.environ if environ is None else environ
    value = ""
    for name in ("IAC_GIT_TOKEN", "GITHUB_TOKEN", "GH_TOKEN"):
        value = env.get(name, "").strip()
        if value:
            break
    if not value:
        return None
    if any(ch.isspace() or not ch.isprintable() for ch in value):
        raise ToolingError(
            "the git token (IAC_GIT_TOKEN, GITHUB_TOKEN or GH_TOKEN) contains whitespace or "
            "control characters; check how it is set"
        )
    host = env.get("IAC_GIT_TOKEN_HOST", "").strip().lower()
    if not host:
        server = env.get("GITHUB_SERVER_URL", "").strip()
        host = (urllib.parse.urlsplit(server).hostname or "") if server else ""
    return Token(value, host or "github.com")


def rewrites_from_env(env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The ``(from, to)`` URL rewrites (``url.<to>.insteadOf = <from>``) set in ``env``."""
    try:
        count = int(env.get("GIT_CONFIG_COUNT", "0"))
    except ValueError:
        return ()
    out: list[tuple[str, str]] = []
    for i in range(count):
        key = env.get(f"GIT_CONFIG_KEY_{i}", "")
        value = env.get(f"GIT_CONFIG_VALUE_{i}", "")
        if key.lower().startswith("url.") and key.lower().endswith(".insteadof") and value:
            out.append((value, key[len("url.") : -len(".insteadOf")]))
    return tuple(out)


def effective_url(url: str, rewrites: Sequence[tuple[str, str]]) -> str:
    """``url`` after git's ``insteadOf`` rewriting: the longest matching prefix wins."""
    best: tuple[str, str] | None = None
    for src, dst in rewrites:
        if url.startswith(src) and (best is None or len(src) > len(best[0])):
            best = (src, dst)
    return best[1] + url[len(best[0]) :] if best else url


def auth_config(
    url: str, token: Token | None, rewrites: Sequence[tuple[str, str]] = ()
) -> list[tuple[str, str]]:
    """Git config entries that authenticate ``url`` with ``token``; empty when they must not.

    Only an HTTPS URL (after ``rewrites``) on the token's host gets the header,
    and the entry is scoped to that origin (``http.https://host/.extraHeader``)
    so git sends it nowhere else, not even after a redirect to another host.
    Basic auth with the user ``x-access-token`` is what GitHub (and GitLab, Gitea)
    accept for a token over git's smart HTTP.
    """
    if token is None:
        return []
    parts = urllib.parse.urlsplit(effective_url(url, rewrites))
    if parts.scheme.lower() != "https" or (parts.hostname or "").lower() != token.host:
        return []
    origin = f"https://{parts.hostname}" + (f":{parts.port}" if parts.port else "") + "/"
    key = f"http.{origin}.extraHeader"
    # The empty value first clears headers set elsewhere for this URL (such as the
    # one actions/checkout persists in the repository's config): git would send
    # both Authorization headers, and the forge refuse the request.
    return [(key, ""), (key, f"Authorization: Basic {_basic(token.value)}")]


def with_git_config(env: Mapping[str, str], pairs: Sequence[tuple[str, str]]) -> dict[str, str]:
    """``env`` plus git config entries appended after those it (or our environment) sets."""
    out = dict(env)
    if not pairs:
        return out
    raw = out.get("GIT_CONFIG_COUNT", os.environ.get("GIT_CONFIG_COUNT", "0"))
    count = int(raw) if raw.isdigit() else 0
    for key, value in pairs:
        out[f"GIT_CONFIG_KEY_{count}"] = key
        out[f"GIT_CONFIG_VALUE_{count}"] = value
        count += 1
    out["GIT_CONFIG_COUNT"] = str(count)
    return out


def _git_env(url: str, env: Mapping[str, str], token: Token | None) -> dict[str, str]:
    out = with_git_config(env, auth_config(url, token, rewrites_from_env(env)))
    # never wait for a password on a terminal: fail, and report the repository
    out["GIT_TERMINAL_PROMPT"] = "0"
    return out


def auth_env(url: str, env: Mapping[str, str], token: Token | None) -> dict[str, str]:
    """``env`` for any git child reaching ``url`` (Terragrunt's module download too):
    the token's header for that origin only, in the environment, and no password prompt."""
    return _git_env(url, env, token)


def _failure(exc: ToolingError, token: Token | None) -> str:
    if isinstance(exc, proc.CalledProcessError):
        stderr = exc.result.stderr.strip().splitlines()
        text = (
            " ".join(line.strip() for line in stderr[-3:]) or f"exit code {exc.result.returncode}"
        )
    else:
        text = str(exc)
    return token.redact(text) if token else text


# --------------------------------------------------------------------------- I/O


def list_tags(url: str, env: Mapping[str, str], token: Token | None = None) -> RepoTags:
    """The tags of one repository; a failure is returned in ``error``, not raised."""
    start = time.perf_counter()
    try:
        result = git.git(None, *ls_remote_args(url), env=_git_env(url, env, token), timeout=TIMEOUT)
    except ToolingError as exc:
        return RepoTags(url, error=_failure(exc, token), seconds=time.perf_counter() - start)
    return RepoTags(url, parse_ls_remote(result.stdout), seconds=time.perf_counter() - start)


def discover(
    urls: Mapping[str, str],
    env: Mapping[str, str],
    token: Token | None = None,
    *,
    jobs: int | None = None,
) -> dict[str, RepoTags]:
    """List the tags of every repository in ``urls`` (key -> URL) in parallel.

    Call it once per run with every repository the run needs: each URL is
    listed once. The result has an entry for every key.
    """
    distinct = sorted(set(urls.values()))
    if not distinct:
        return {}
    workers = max(1, min(jobs or MAX_JOBS, len(distinct)))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ls-remote") as pool:
        listed = dict(
            zip(distinct, pool.map(lambda u: list_tags(u, env, token), distinct), strict=True)
        )
    return {key: listed[url] for key, url in urls.items()}


def cache_path(cache_dir: Path, url: str) -> Path:
    """Where :func:`fetch` mirrors ``url``: one bare repository per URL."""
    name = url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1].removesuffix(".git")
    digest = hashlib.sha256(url.encode()).hexdigest()[:12]
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "repo"
    return cache_dir / "module-repos" / f"{safe}-{digest}.git"


def fetch(url: str, cache_dir: Path, env: Mapping[str, str], token: Token | None = None) -> Path:
    """Mirror the tags of ``url`` into a bare repository under ``cache_dir``; return it.

    Raises :class:`ToolingError` (redacted) when the repository cannot be fetched.
    """
    repo = cache_path(cache_dir, url)
    if not (repo / "HEAD").exists():
        repo.parent.mkdir(parents=True, exist_ok=True)
        git.git(None, "init", "--quiet", "--bare", str(repo))
    try:
        git.git(repo, *fetch_args(url), env=_git_env(url, env, token), timeout=TIMEOUT)
    except ToolingError as exc:
        raise ToolingError(f"cannot fetch {url}: {_failure(exc, token)}") from None
    return repo


#: the ``ls-remote --tags`` text a mirror was last fetched at, in the bare repository
LISTED_AT_FETCH = "iac-tags-listed"
#: a commit's ``ls-tree -r -z`` output, one file per commit, in the bare repository
TREES = "iac-trees"


def mirror_now(
    url: str, cache_dir: Path, env: Mapping[str, str], token: Token | None = None
) -> tuple[Path, dict[str, Tag]]:
    """The mirror of ``url`` (:func:`fetch`) and its tags as the repository lists them now.

    On a warm mirror one ``git ls-remote --tags`` always runs: a tag moved, added or
    deleted upstream is seen at once. The fetch runs only when that listing differs
    from the one recorded after the mirror's last fetch: on a warm cache whose tags
    did not move, one process instead of a fetch and its helpers. A mirror not made
    yet (a fresh runner) is fetched at once, and its tags, listed from it as
    ``ls-remote`` prints them (:func:`listed_in`), are the repository's now: the
    listing a fetch would be compared with could only differ. The listing is
    recorded only after a fetch succeeded, so a failed or interrupted fetch is tried
    again next time. A tag deleted upstream is absent from the result, even though
    the mirror keeps it.
    """
    repo = cache_path(cache_dir, url)
    if not (repo / "HEAD").exists():
        (repo / LISTED_AT_FETCH).unlink(missing_ok=True)
        fetch(url, cache_dir, env, token)
        listed = listed_in(repo)
        outdir.write_text(repo / LISTED_AT_FETCH, listed, raw=True)
        return repo, parse_ls_remote(listed)
    env_for = _git_env(url, env, token)
    try:
        listed = git.git(None, *ls_remote_args(url), env=env_for, timeout=TIMEOUT).stdout
    except ToolingError as exc:
        raise ToolingError(f"cannot list the tags of {url}: {_failure(exc, token)}") from None
    record = repo / LISTED_AT_FETCH
    try:
        fresh = (repo / "HEAD").exists() and record.read_text(encoding="utf-8") == listed
    except (OSError, UnicodeDecodeError):
        fresh = False
    if not fresh:
        record.unlink(missing_ok=True)
        fetch(url, cache_dir, env, token)
        outdir.write_text(record, listed, raw=True)
    return repo, parse_ls_remote(listed)


def listed_in(repo: Path) -> str:
    """The tags of the mirror ``repo``, in ``git ls-remote --tags``'s text (``SHA<TAB>ref``,
    an annotated tag followed by its peeled ``^{}`` line, by name): ``git show-ref
    --tags --dereference`` peels as ``ls-remote`` does, a tag of a tag to its commit."""
    shown = git.git(repo, "show-ref", "--tags", "--dereference", ok_codes=(0, 1)).stdout
    lines = (line.partition(" ") for line in shown.splitlines())
    return "".join(f"{sha}\t{ref}\n" for sha, _, ref in lines if ref)


def tree_of(repo: Path, commit: str) -> dict[str, str] | None:
    """``{path: blob SHA}`` of ``commit`` in ``repo``, or None when ``commit`` names no
    commit there. A commit's tree never changes, so the listing is kept per commit
    (:data:`TREES`) and read from there next time, without a git process; it is kept
    only after ``git rev-parse`` confirmed the object is a commit."""
    kept = repo / TREES / commit
    if len(commit) == 40 and all(c in "0123456789abcdef" for c in commit):
        try:
            return git.parse_ls_tree(kept.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            pass
    if git.commit_sha(repo, commit) != commit:
        return None
    listed = git.git(repo, "ls-tree", "-r", "-z", "--full-tree", commit).stdout
    outdir.write_text(kept, listed, raw=True)
    return git.parse_ls_tree(listed)


def blobs_of(repo: Path, shas: Sequence[str]) -> dict[str, bytes]:
    """The contents of the blobs ``shas`` in ``repo`` (one ``git cat-file --batch``); a
    SHA the repository lacks is left out."""
    wanted = [s for s in dict.fromkeys(shas) if s]
    if not wanted:
        return {}
    _code, out, _err = proc.run_bytes(
        ["git", "cat-file", "--batch"],
        cwd=repo,
        input_bytes="".join(f"{s}\n" for s in wanted).encode(),
    )
    found: dict[str, bytes] = {}
    at = 0
    for sha in wanted:
        end = out.find(b"\n", at)
        if end < 0:
            break
        header = out[at:end].split()
        at = end + 1
        if len(header) != 3 or header[1] != b"blob":
            continue  # "<sha> missing"
        size = int(header[2])
        found[sha] = out[at : at + size]
        at += size + 1
    return found
