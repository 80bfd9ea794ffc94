"""Read-only views of a repository's files: the working tree, or one git revision."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Protocol

from tooling.errors import ToolingError
from tooling.model.hcl import blob_sha
from tooling.model.units import LIVE_DIR, UNIT_FILE


class Tree(Protocol):
    """Read-only view of a repository's files at one revision (or the working tree)."""

    root: Path

    def exists(self, path: str) -> bool: ...

    def sha(self, path: str) -> str: ...

    def read(self, path: str) -> bytes: ...

    def unit_files(self) -> list[str]: ...

    def fingerprint(self) -> str: ...


_SKIP_DIRS = {
    ".git",
    ".terragrunt-cache",
    ".terraform",
    ".iac",
    "__pycache__",
    ".venv",
    "node_modules",
}


class WorkTree:
    """The files on disk under ``root`` (what ``--uncommitted`` and plans see)."""

    def __init__(self, root: Path, live: str = LIVE_DIR) -> None:
        self.root = root.resolve()
        self.live = live
        self._files: dict[str, Path] = {}
        self._shas: dict[str, str] = {}
        base = self.root / live
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS]
            rel = os.path.relpath(dirpath, self.root).replace(os.sep, "/")
            for name in filenames:
                self._files[f"{rel}/{name}"] = Path(dirpath, name)
        for entry in os.scandir(self.root):
            if entry.is_file():
                self._files[entry.name] = Path(entry.path)

    def exists(self, path: str) -> bool:
        if path in self._files:
            return True
        return not path.startswith(f"{self.live}/") and (self.root / path).exists()

    def read(self, path: str) -> bytes:
        try:
            return (self.root / path).read_bytes()
        except OSError as exc:
            raise ToolingError(f"{path}: cannot read: {exc.strerror}") from exc

    def sha(self, path: str) -> str:
        sha = self._shas.get(path)
        if sha is None:
            sha = self._shas[path] = blob_sha(self.read(path))
        return sha

    def unit_files(self) -> list[str]:
        return sorted(p for p in self._files if p.rsplit("/", 1)[-1] == UNIT_FILE)

    def fingerprint(self) -> str:
        digest = hashlib.sha1()
        for path in sorted(self._files):
            digest.update(path.encode())
            if path.endswith(".hcl"):
                digest.update(self.sha(path).encode())
        return digest.hexdigest()


class GitTree:
    """The files of one git revision: listed with ``ls-tree`` (only when needed), read in batches.

    The tree SHA is the fingerprint, so a cached model is found without listing
    a single file.
    """

    def __init__(
        self,
        root: Path,
        tree_sha: str,
        lister: Callable[[], Mapping[str, str]],
        reader: Callable[[list[str]], dict[str, bytes]],
    ) -> None:
        self.root = root.resolve()
        self._tree_sha = tree_sha
        self._lister = lister
        self._listed: dict[str, str] | None = None
        self._reader = reader
        self._blobs: dict[str, bytes] = {}

    @property
    def _entries(self) -> dict[str, str]:
        if self._listed is None:
            self._listed = dict(self._lister())  # path -> blob sha
        return self._listed

    def exists(self, path: str) -> bool:
        return path in self._entries

    def sha(self, path: str) -> str:
        try:
            return self._entries[path]
        except KeyError:
            raise ToolingError(f"{path}: not in the revision being read") from None

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
        return sorted(
            p
            for p in self._entries
            if p.startswith(f"{LIVE_DIR}/") and p.rsplit("/", 1)[-1] == UNIT_FILE
        )

    def fingerprint(self) -> str:
        return self._tree_sha
