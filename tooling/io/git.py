"""Thin wrapper around git, with the pure parsers beside it (after pre-commit's git.py).

Change detection works on the lists these functions return; it never calls git
itself.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tooling.errors import ToolingError
from tooling.io import proc
from tooling.model.gitpaths import changes_to_project, clean_prefix, listing_to_project
from tooling.model.trees import GitTree
from tooling.model.units import LIVE_DIR, Change


def git(
    repo: Path | None,
    *args: str,
    ok_codes: Sequence[int] = (0,),
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> proc.Result:
    """``git ARGS`` in ``repo`` through the one runner (every git call in the tooling comes here).

    A folder that is no git repository is one line saying so and what to do, whatever
    the command (git's own message is ``fatal: not a git repository ...``), unless the
    caller accepts exit code 128 (and handles it).
    """
    result = proc.run(["git", *args], cwd=repo, env=env, ok_codes=(*ok_codes, 128), timeout=timeout)
    if result.returncode == 128 and 128 not in ok_codes and NOT_A_REPOSITORY in result.stderr:
        raise ToolingError(
            f"{repo or Path.cwd()}: not inside a git repository (no .git here or above): "
            "the tooling compares commits; run `git init`, then commit the files "
            "(`git add -A && git commit -m 'first commit'`)"
        )
    if result.returncode not in ok_codes:
        raise proc.CalledProcessError(result, repo)
    return result


#: what git says, whatever the command, in a folder outside any repository
NOT_A_REPOSITORY = "not a git repository"
NO_COMMIT_HINT = (
    "the repository has no commit yet: commit its files first "
    "(`git add -A && git commit -m 'first commit'`), then run this again"
)


def has_commit(repo: Path) -> bool:
    """Whether the repository holds any commit (a fresh ``git init`` holds none)."""
    result = git(repo, "rev-list", "-n", "1", "--all", ok_codes=(0, 128))
    return result.returncode == 0 and bool(result.stdout.strip())


def out(repo: Path, *args: str) -> str:
    """The stripped standard output of ``git ARGS`` (which must succeed)."""
    return git(repo, *args).stdout.strip()


def commit_sha(repo: Path, rev: str) -> str | None:
    """The commit ``rev`` names, or None when it names none (no error)."""
    result = git(
        repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", ok_codes=(0, 1, 128)
    )
    sha = result.stdout.strip()
    return sha if result.returncode == 0 and sha else None


def zsplit(text: str) -> list[str]:
    """Split NUL-separated git output; tolerate a trailing NUL."""
    parts = text.split("\0")
    if parts and parts[-1] == "":
        parts.pop()
    return parts


def parse_name_status(text: str) -> list[Change]:
    """Parse ``git diff --name-status -z -M`` output."""
    fields = zsplit(text)
    out: list[Change] = []
    i = 0
    while i < len(fields):
        status = fields[i]
        code = status[:1]
        if code in ("R", "C"):
            old, new = fields[i + 1], fields[i + 2]
            out.append(Change("R" if code == "R" else "A", new, old))
            i += 3
        else:
            out.append(Change(code if code in "AMD" else "M", fields[i + 1]))
            i += 2
    return out


def parse_ls_tree(text: str) -> dict[str, str]:
    """``git ls-tree -r -z --full-tree REV`` -> {path: blob sha} (blobs only)."""
    out: dict[str, str] = {}
    for record in zsplit(text):
        meta, _, path = record.partition("\t")
        parts = meta.split()
        if len(parts) >= 3 and parts[1] == "blob":
            out[path] = parts[2]
    return out


def parse_ls_tree_links(text: str) -> set[str]:
    """``git ls-tree -r -z --full-tree REV`` -> the paths that are symbolic links (mode 120000)."""
    return {record.partition("\t")[2] for record in zsplit(text) if record.startswith("120000 ")}


def parse_porcelain_paths(text: str) -> list[Change]:
    """``git status --porcelain=v1 -z --untracked-files=all`` -> changes."""
    fields = zsplit(text)
    out: list[Change] = []
    i = 0
    while i < len(fields):
        record = fields[i]
        xy, path = record[:2], record[3:]
        if "R" in xy or "C" in xy:
            out.append(Change("R", path, fields[i + 1]))
            i += 2
            continue
        status = "D" if "D" in xy else "A" if xy in ("??", "A ", "AM") else "M"
        out.append(Change(status, path))
        i += 1
    return out


@dataclass(frozen=True)
class Identity:
    """Who commits: name and email (the four GIT_AUTHOR_*/GIT_COMMITTER_* variables)."""

    name: str
    email: str

    def env(self) -> dict[str, str]:
        return {
            "GIT_AUTHOR_NAME": self.name,
            "GIT_AUTHOR_EMAIL": self.email,
            "GIT_COMMITTER_NAME": self.name,
            "GIT_COMMITTER_EMAIL": self.email,
        }


#: ``git var GIT_COMMITTER_IDENT`` (a pattern: compiled by ``re`` when first used)
_IDENT_RE = r"^(?P<name>.*?) <(?P<email>[^>]*)> -?\d+ [+-]\d{4}$"


def parse_ident(text: str) -> Identity | None:
    """``git var GIT_AUTHOR_IDENT`` output -> identity."""
    match = re.match(_IDENT_RE, text.strip())
    return Identity(match.group("name"), match.group("email")) if match else None


def parse_tag_messages(text: str) -> dict[str, str]:
    """``for-each-ref`` records (name NUL type NUL message RS) -> annotated tag messages."""
    out: dict[str, str] = {}
    for record in text.split("\x1e"):
        fields = record.lstrip("\n").split("\x00")
        if len(fields) == 3 and fields[1] == "tag" and fields[2].strip():
            out[fields[0]] = fields[2].strip()
    return out


def prefix(repo: Path) -> str:
    """Where ``repo`` (the project root) sits below git's top level: ``"infra"``, or ``""``
    at the top level and outside any git repository (``git rev-parse --show-prefix``).

    Git names changed and listed paths from its top level; everything here that returns
    paths translates them to the project root with it (:mod:`tooling.model.gitpaths`)."""
    try:
        result = git(repo, "rev-parse", "--show-prefix", ok_codes=(0, 128))
    except ToolingError:  # no git installed: no repository to be below
        return ""
    return clean_prefix(result.stdout) if result.returncode == 0 else ""


def rev_parse(repo: Path, rev: str) -> str:
    result = git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", ok_codes=(0, 1))
    sha = result.stdout.strip()
    if result.returncode != 0 or not sha:
        if not has_commit(repo):
            raise ToolingError(f"unknown revision {rev!r}: {NO_COMMIT_HINT}")
        raise ToolingError(
            f"unknown revision {rev!r}: fetch it (git fetch origin {rev}) or name another with --base/--head"
        )
    return sha


def merge_base(repo: Path, base: str, head: str) -> str:
    result = git(repo, "merge-base", base, head, ok_codes=(0, 1))
    sha = result.stdout.strip()
    if result.returncode != 0 or not sha:
        raise ToolingError(
            f"{base} and {head} have no common ancestor: a shallow clone? Fetch more history (fetch-depth: 0)."
        )
    return sha


def changed(repo: Path, base: str, head: str, git_prefix: str | None = None) -> list[Change]:
    """The paths changed between two revisions, relative to the project root ``repo``
    (a path outside it: ``../``-relative); ``git_prefix``: :func:`prefix` when known."""
    out = git(repo, "diff", "--name-status", "-z", "-M", base, head).stdout
    at = prefix(repo) if git_prefix is None else git_prefix
    return changes_to_project(parse_name_status(out), at)


def uncommitted(repo: Path, git_prefix: str | None = None) -> list[Change]:
    """The working tree's uncommitted changes, relative to the project root ``repo``;
    ``git_prefix``: :func:`prefix` when known."""
    out = git(
        repo, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames"
    ).stdout
    at = prefix(repo) if git_prefix is None else git_prefix
    return changes_to_project(parse_porcelain_paths(out), at)


def default_branch(repo: Path) -> str:
    """origin's HEAD branch when known, else main/master, whichever exists."""
    result = git(
        repo, "symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD", ok_codes=(0, 1, 128)
    )
    if result.returncode == 0 and result.stdout.strip():
        return result.stdout.strip()
    for candidate in ("origin/main", "main", "origin/master", "master"):
        if (
            git(repo, "rev-parse", "--verify", "--quiet", candidate, ok_codes=(0, 1)).returncode
            == 0
        ):
            return candidate
    if not has_commit(repo):
        raise ToolingError(f"no default branch: {NO_COMMIT_HINT}")
    raise ToolingError("cannot find the default branch: pass --base REF")


def tree_at(
    repo: Path,
    rev: str,
    tree_sha: str | None = None,
    live: str | tuple[str, ...] = LIVE_DIR,
    git_prefix: str | None = None,
    default_tiers: tuple[tuple[str, str], ...] = (),
) -> GitTree:
    """A :class:`GitTree` for ``rev``; files are listed (one ``ls-tree``) only when needed."""
    if tree_sha is None:
        tree_sha = git(repo, "rev-parse", f"{rev}^{{tree}}").stdout.strip()
    listing: list[str] = []
    at = prefix(repo) if git_prefix is None else git_prefix

    def ls_tree() -> str:
        if not listing:
            listing.append(git(repo, "ls-tree", "-r", "-z", "--full-tree", rev).stdout)
        return listing[0]

    return GitTree(
        repo,
        tree_sha,
        lambda: listing_to_project(parse_ls_tree(ls_tree()), at),
        lambda shas: cat_blobs(repo, shas),
        live=live,
        links=lambda: set(
            listing_to_project(dict.fromkeys(parse_ls_tree_links(ls_tree()), ""), at)
        ),
        git_prefix=at,
        default_tiers=default_tiers,
    )


def toplevel(repo: Path) -> Path:
    """Git's top level of the repository holding ``repo`` (``git rev-parse --show-toplevel``)."""
    return Path(git(repo, "rev-parse", "--show-toplevel").stdout.strip()).resolve()


def add_worktree(repo: Path, path: Path, rev: str) -> Path:
    """A detached worktree of ``rev`` at ``path`` (a stale one left by a crash is replaced)."""
    if path.exists():
        remove_worktree(repo, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    git(repo, "worktree", "add", "--detach", "--quiet", str(path), rev)
    return path


def remove_worktree(repo: Path, path: Path) -> None:
    git(repo, "worktree", "remove", "--force", str(path), ok_codes=(0, 128))
    shutil.rmtree(path, ignore_errors=True)
    git(repo, "worktree", "prune", ok_codes=(0, 128))


def _refuse_options(*revs: str) -> None:
    """A revision that git would read as an option is a usage error, not a revision."""
    for rev in revs:
        if rev.startswith("-"):
            raise ToolingError(f"{rev!r} is not a revision", code=2)


def resolve(repo: Path, base: str, head: str) -> tuple[str, str, str]:
    """(base commit, head commit, head tree) with one ``rev-parse``."""
    _refuse_options(base, head)
    result = git(
        repo,
        "rev-parse",
        f"{base}^{{commit}}",
        f"{head}^{{commit}}",
        f"{head}^{{tree}}",
        ok_codes=(0, 128),
    )
    shas = result.stdout.split()
    if result.returncode == 0 and len(shas) == 3 and all(len(s) == 40 for s in shas):
        return shas[0], shas[1], shas[2]
    rev_parse(repo, base)  # names the revision that is unknown
    rev_parse(repo, head)
    raise ToolingError(f"cannot resolve {base} and {head}: {result.stderr.strip()}")


def resolve_range(repo: Path, base: str, head: str) -> tuple[str, str, str, str]:
    """(base commit, head commit, head tree, their merge base) with one ``rev-parse``:
    ``BASE...HEAD`` lists the head, the base, then ``^`` and each merge base. When
    there is not exactly one (none, or several: ``git merge-base`` picks), or the
    revisions do not resolve, :func:`resolve` and :func:`merge_base` answer as before."""
    _refuse_options(base, head)
    result = git(
        repo,
        "rev-parse",
        f"{base}^{{commit}}...{head}^{{commit}}",
        f"{head}^{{tree}}",
        ok_codes=(0, 128),
    )
    words = result.stdout.split()
    if result.returncode == 0 and len(words) == 4 and words[2].startswith("^"):
        head_sha, base_sha, merged, tree = words[0], words[1], words[2][1:], words[3]
        if all(len(s) == 40 for s in (head_sha, base_sha, merged, tree)):
            return base_sha, head_sha, tree, merged
    base_sha, head_sha, tree = resolve(repo, base, head)
    return base_sha, head_sha, tree, merge_base(repo, base_sha, head_sha)


def prefix_and_tree(repo: Path, rev: str) -> tuple[str, str] | None:
    """(:func:`prefix`, ``rev``'s tree SHA) with one ``rev-parse``; None when it fails (no
    such revision, no commit yet, no repository): ask each apart then."""
    try:
        result = git(repo, "rev-parse", "--show-prefix", f"{rev}^{{tree}}", ok_codes=(0, 128))
    except ToolingError:  # no git installed
        return None
    lines = result.stdout.split("\n")
    if result.returncode != 0 or len(lines) < 2 or len(lines[1].strip()) != 40:
        return None
    return clean_prefix(lines[0]), lines[1].strip()


def cat_blobs(repo: Path, shas: list[str]) -> dict[str, bytes]:
    """Read many blobs with one ``git cat-file --batch``."""
    code, data, err = proc.run_bytes(
        ["git", "cat-file", "--batch"], cwd=repo, input_bytes=("\n".join(shas) + "\n").encode()
    )
    if code != 0:
        raise ToolingError(f"git cat-file failed: {err.decode(errors='replace').strip()}")
    out: dict[str, bytes] = {}
    pos = 0
    while pos < len(data):
        end = data.index(b"\n", pos)
        header = data[pos:end].decode().split()
        pos = end + 1
        if len(header) < 3 or header[1] == "missing":
            continue
        size = int(header[2])
        out[header[0]] = data[pos : pos + size]
        pos += size + 1
    return out


def worktree_changes(
    repo: Path, *, besides: Path | None = None, pending: list[Change] | None = None
) -> tuple[list[str], str, list[tuple[str, bytes]]]:
    """The uncommitted difference of ``repo``'s working tree: the changed paths (tracked
    and untracked, not ignored), ``git diff HEAD --binary``, and each untracked file's
    content; untracked files under ``besides`` (the run's own report folder) left out.
    ``pending``: :func:`uncommitted` of ``repo``, when the caller just asked."""
    inside = _under(repo, besides)

    def mine(path: str) -> bool:
        return inside is not None and (path == inside or path.startswith(inside + "/"))

    listed_changes = uncommitted(repo) if pending is None else pending
    files = [c.path for c in listed_changes if not mine(c.path.rstrip("/"))]
    if not files:
        return [], "", []
    diff = diff_head(repo)
    listed = git(repo, "ls-files", "--others", "--exclude-standard", "-z").stdout
    untracked = []
    for path in zsplit(listed):
        if mine(path):
            continue
        full = repo / path
        content = full.read_bytes() if full.is_file() and not full.is_symlink() else b""
        if full.is_symlink():
            content = os.readlink(full).encode()
        untracked.append((path, content))
    return files, diff, untracked


def diff_head(repo: Path) -> str:
    """``git diff HEAD --binary`` of ``repo``'s working tree, its bytes kept as they are (a
    file that is not UTF-8 is part of the difference: decoded with ``surrogateescape``,
    encoding it the same way gives the bytes back)."""
    args = ["git", "diff", "HEAD", "--binary", "--no-color", "--no-ext-diff"]
    code, out, err = proc.run_bytes(args, cwd=repo)
    if code != 0:
        result = proc.Result(
            tuple(args), code, out.decode(errors="replace"), err.decode(errors="replace")
        )
        raise proc.CalledProcessError(result, repo)
    return out.decode("utf-8", "surrogateescape")


def _under(repo: Path, folder: Path | None) -> str | None:
    """``folder`` relative to ``repo`` (POSIX), or None when it is not inside it."""
    if folder is None:
        return None
    try:
        return folder.resolve().relative_to(repo.resolve()).as_posix()
    except ValueError:
        return None
