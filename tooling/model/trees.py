"""Read-only views of a repository's files: the working tree, or one git revision.

A warm run reads a revision's cached model by its tree SHA alone: :mod:`hashlib` and
the HCL module (for :func:`~tooling.model.hcl.blob_sha`) are imported only when a
working tree is hashed or a fingerprint is computed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Protocol

from tooling.errors import ToolingError
from tooling.model.gitpaths import in_repository
from tooling.model.units import LIVE_DIR, UNIT_FILE


class Tree(Protocol):
    """Read-only view of a repository's files at one revision (or the working tree).

    Both kinds answer the same way for the same files: a folder "exists"
    (Terragrunt's ``find_in_parent_folders`` finds folders too), tool folders
    (``.terraform``, ``.terragrunt-cache``...) hold no units, and units are
    looked for only under the live folders.
    """

    root: Path
    #: the project root relative to git's top level ("infra"; "" at the top level or outside git)
    git_prefix: str
    #: (live root, tier): the default tier of the units under it ([layout.roots] tier)
    default_tiers: tuple[tuple[str, str], ...]

    def exists(self, path: str) -> bool: ...

    def is_dir(self, path: str) -> bool: ...

    def sha(self, path: str) -> str: ...

    def read(self, path: str) -> bytes: ...

    def unit_files(self) -> list[str]: ...

    def files_under(self, folder: str) -> list[str]: ...

    def realpath(self, path: str) -> str: ...

    def links_under(self, folder: str) -> list[str]: ...

    def fingerprint(self) -> str: ...


#: folders that tools write into a checkout; never part of the model, even when committed
SKIP_DIRS = frozenset(
    {
        ".git",
        ".terragrunt-cache",
        ".terraform",
        ".iac",
        "__pycache__",
        ".venv",
        "node_modules",
    }
)


def skipped(path: str) -> bool:
    """Whether ``path`` lies in a folder the model never reads (see :data:`SKIP_DIRS`)."""
    return any(part in SKIP_DIRS for part in path.split("/")[:-1])


def in_live(path: str, live: tuple[str, ...]) -> bool:
    if path.startswith("../"):  # outside the project root (git's paths above it): read, never units
        return False
    return any(folder in ("", ".") or path.startswith(f"{folder}/") for folder in live)


def _is_unit_file(path: str, live: tuple[str, ...]) -> bool:
    return path.rsplit("/", 1)[-1] == UNIT_FILE and in_live(path, live) and not skipped(path)


class WorkTree:
    """The files on disk under ``root`` (what ``--uncommitted`` and plans see)."""

    def __init__(
        self,
        root: Path,
        live: str | tuple[str, ...] = LIVE_DIR,
        git_prefix: str = "",
        default_tiers: tuple[tuple[str, str], ...] = (),
    ) -> None:
        self.root = root.resolve()
        self.live = (live,) if isinstance(live, str) else tuple(live)
        self.git_prefix = git_prefix.strip("/")
        self.default_tiers = default_tiers
        self._files: dict[str, Path] = {}
        self._dirs: set[str] = set()
        self._shas: dict[str, str] = {}
        #: symbolic links under the live folders (to files or folders) -> their target
        self._links: dict[str, str] = {}
        for folder in self.live:
            base = self.root / folder
            for dirpath, dirnames, filenames in os.walk(base):
                dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
                rel = os.path.relpath(dirpath, self.root).replace(os.sep, "/")
                self._dirs.add(rel)
                for name in filenames:
                    self._files[name if rel == "." else f"{rel}/{name}"] = Path(dirpath, name)
                for name in (*dirnames, *filenames):
                    if os.path.islink(os.path.join(dirpath, name)):
                        link = name if rel == "." else f"{rel}/{name}"
                        self._links[link] = os.readlink(os.path.join(dirpath, name))
        for entry in os.scandir(self.root):
            if entry.is_file():
                self._files[entry.name] = Path(entry.path)

    def _listed(self, path: str) -> bool:
        return in_live(path, self.live)

    def _outside(self, path: str) -> bool:
        """Above the project root and outside its git repository: never part of the model."""
        return path.startswith("../") and not in_repository(path, self.git_prefix)

    def exists(self, path: str) -> bool:
        if path in self._files or path in self._dirs:
            return True
        if self._listed(path) or skipped(path + "/x") or self._outside(path):
            return False
        return (self.root / path).exists()

    def is_dir(self, path: str) -> bool:
        if path in self._dirs:
            return True
        if self._listed(path) or self._outside(path):
            return False
        return (self.root / path).is_dir()

    def read(self, path: str) -> bytes:
        try:
            return (self.root / path).read_bytes()
        except OSError as exc:
            raise ToolingError(f"{path}: cannot read: {exc.strerror}") from exc

    def sha(self, path: str) -> str:
        sha = self._shas.get(path)
        if sha is None:
            from tooling.model.hcl import blob_sha

            sha = self._shas[path] = blob_sha(self.read(path))
        return sha

    def unit_files(self) -> list[str]:
        return sorted(p for p in self._files if _is_unit_file(p, self.live))

    def files_under(self, folder: str) -> list[str]:
        prefix = "" if folder in ("", ".") else folder.rstrip("/") + "/"
        if self._listed(prefix + "x"):
            return sorted(p for p in self._files if p.startswith(prefix))
        out: list[str] = []
        for dirpath, dirnames, filenames in os.walk(self.root / folder):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
            rel = os.path.relpath(dirpath, self.root).replace(os.sep, "/")
            out.extend(name if rel == "." else f"{rel}/{name}" for name in filenames)
        return sorted(out)

    def realpath(self, path: str) -> str:
        """``path`` with symbolic links resolved, when it stays inside the repository."""
        real = os.path.realpath(self.root / path)
        rel = os.path.relpath(real, self.root).replace(os.sep, "/")
        return path if rel.startswith("../") or rel == ".." else rel

    def links_under(self, folder: str) -> list[str]:
        prefix = "" if folder in ("", ".") else folder.rstrip("/") + "/"
        return sorted(p for p in self._links if p.startswith(prefix))

    def fingerprint(self) -> str:
        import hashlib

        digest = hashlib.sha1(repr((self.live, self.git_prefix, self.default_tiers)).encode())
        for path in sorted(self._files):
            digest.update(path.encode())
            if path.endswith(".hcl"):
                digest.update(self.sha(path).encode())
        # a link pointed elsewhere reads other files
        for link, target in sorted(self._links.items()):
            digest.update(f"{link}->{target}".encode())
        return digest.hexdigest()


class GitTree:
    """The files of one git revision: listed with ``ls-tree`` (only when needed), read in batches.

    The tree SHA is the fingerprint, so a cached model is found without listing
    a single file. ``lister`` returns {path: blob sha}; ``links`` the paths that
    are symbolic links (their blob is the link's target).
    """

    def __init__(
        self,
        root: Path,
        tree_sha: str,
        lister: Callable[[], Mapping[str, str]],
        reader: Callable[[list[str]], dict[str, bytes]],
        live: str | tuple[str, ...] = LIVE_DIR,
        links: Callable[[], set[str]] | None = None,
        git_prefix: str = "",
        default_tiers: tuple[tuple[str, str], ...] = (),
    ) -> None:
        self.root = root.resolve()
        self.live = (live,) if isinstance(live, str) else tuple(live)
        self.git_prefix = git_prefix.strip("/")
        self.default_tiers = default_tiers
        self._tree_sha = tree_sha
        self._lister = lister
        self._links = links
        self._link_set: set[str] | None = None
        self._listed: dict[str, str] | None = None
        self._dirs: set[str] | None = None
        self._reader = reader
        self._blobs: dict[str, bytes] = {}

    @property
    def _entries(self) -> dict[str, str]:
        if self._listed is None:
            self._listed = dict(self._lister())  # path -> blob sha
        return self._listed

    @property
    def _folders(self) -> set[str]:
        if self._dirs is None:
            self._dirs = {"."}
            for path in self._entries:
                while "/" in path:
                    path = path.rsplit("/", 1)[0]
                    if path in self._dirs:
                        break
                    self._dirs.add(path)
        return self._dirs

    def exists(self, path: str) -> bool:
        return path in self._entries or path in self._folders

    def is_dir(self, path: str) -> bool:
        return path in self._folders

    def sha(self, path: str) -> str:
        try:
            return self._entries[path]
        except KeyError:
            raise ToolingError(f"{path}: not in the revision being read") from None

    def files_under(self, folder: str) -> list[str]:
        prefix = "" if folder in ("", ".") else folder.rstrip("/") + "/"
        return sorted(
            p
            for p in self._entries
            if p.startswith(prefix) and not skipped(p) and (prefix or not p.startswith("../"))
        )

    def _link_paths(self) -> set[str]:
        if self._link_set is None:
            self._link_set = self._links() if self._links is not None else set()
        return self._link_set

    def links_under(self, folder: str) -> list[str]:
        prefix = "" if folder in ("", ".") else folder.rstrip("/") + "/"
        return sorted(p for p in self._link_paths() if p.startswith(prefix) and not skipped(p))

    def realpath(self, path: str) -> str:
        links = self._link_paths()
        if not links:
            return path
        parts = path.split("/")
        for depth in range(len(parts), 0, -1):
            head = "/".join(parts[:depth])
            if head in links:
                target = self.read(head).decode(errors="replace")
                base = head.rsplit("/", 1)[0] if "/" in head else "."
                resolved = os.path.normpath(f"{base}/{target}").replace(os.sep, "/")
                rest = "/".join(parts[depth:])
                joined = f"{resolved}/{rest}" if rest else resolved
                return (
                    joined if joined.startswith("../") or joined == path else self.realpath(joined)
                )
        return path

    def prefetch(self, paths: Iterable[str]) -> None:
        wanted = [
            self._entries[p]
            for p in paths
            if p in self._entries and self._entries[p] not in self._blobs
        ]
        if wanted:
            self._blobs.update(self._reader(wanted))

    def read(self, path: str) -> bytes:
        sha = self.sha(path)
        if sha not in self._blobs:
            self._blobs.update(self._reader([sha]))
        return self._blobs[sha]

    def unit_files(self) -> list[str]:
        return sorted(p for p in self._entries if _is_unit_file(p, self.live))

    def fingerprint(self) -> str:
        if self.live == (LIVE_DIR,) and not self.git_prefix and not self.default_tiers:
            return self._tree_sha
        import hashlib

        return hashlib.sha1(
            f"{self._tree_sha}|{self.live!r}|{self.git_prefix}|{self.default_tiers!r}".encode()
        ).hexdigest()
