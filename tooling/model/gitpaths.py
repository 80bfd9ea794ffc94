"""Git's paths and the project's: the one translation between them.

Git names paths relative to its top level (``git diff``, ``git status``,
``git ls-tree --full-tree``); the model names them relative to the project
root (the folder holding policy.toml and the root file). When the project
root is a sub-folder of the git repository (``infra/``), the two differ by
git's *prefix* (``git rev-parse --show-prefix``: ``"infra/"``; ``""`` at the
top level). Every changed path and every listed file goes through
:func:`to_project` before it meets a unit path; a path outside the project
root keeps a ``../`` form, the form the model records for a file a unit reads
there (through ``get_repo_root()`` or a ``../`` path).
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable, Mapping

from tooling.model.units import Change


def clean_prefix(prefix: str) -> str:
    """``git rev-parse --show-prefix`` output -> ``"infra"`` (no slashes), ``""`` at the top."""
    return prefix.strip().strip("/")


def to_project(path: str, prefix: str) -> str:
    """A git-top-level-relative ``path`` -> relative to the project root at ``prefix``."""
    prefix = clean_prefix(prefix)
    if not prefix:
        return path
    if path.startswith(prefix + "/"):
        return path[len(prefix) + 1 :]
    if path == prefix:
        return "."
    return posixpath.relpath(path, prefix)


def changes_to_project(changes: Iterable[Change], prefix: str) -> list[Change]:
    """Each change's path (and a rename's old path) relative to the project root."""
    return [
        Change(
            c.status,
            to_project(c.path, prefix),
            None if c.old is None else to_project(c.old, prefix),
        )
        for c in changes
    ]


def listing_to_project(listing: Mapping[str, str], prefix: str) -> dict[str, str]:
    """``{git path: blob sha}`` -> ``{project path: blob sha}``."""
    if not clean_prefix(prefix):
        return dict(listing)
    return {to_project(path, prefix): sha for path, sha in listing.items()}


def top_level(root_posix: str, prefix: str) -> str:
    """Git's top level (what Terragrunt's ``get_repo_root()`` returns) from the project root."""
    depth = len([p for p in clean_prefix(prefix).split("/") if p])
    return posixpath.normpath(posixpath.join(root_posix, *[".."] * depth)) if depth else root_posix


def from_top(folder: str, prefix: str) -> str:
    """A project-relative ``folder`` relative to git's top level (``get_path_from_repo_root()``)."""
    prefix = clean_prefix(prefix)
    return posixpath.normpath(posixpath.join(prefix, folder)) if prefix else folder


def in_repository(path: str, prefix: str) -> bool:
    """Whether the project-relative ``path`` lies inside the git repository: in the project
    root, or above it no higher than git's top level (``../shared/x.hcl`` below ``infra/``)."""
    clean = posixpath.normpath(path)
    ups = 0
    for part in clean.split("/"):
        if part != "..":
            break
        ups += 1
    depth = len([p for p in clean_prefix(prefix).split("/") if p])
    return ups <= depth


def found_above(root_posix: str, prefix: str, name: str) -> str | None:
    """``name`` in a folder above git's top level, on disk (where Terragrunt's
    ``find_in_parent_folders`` goes on looking after the repository), as a path relative
    to the project root ``root_posix``; None when no folder up to ``/`` holds it."""
    folder = posixpath.dirname(top_level(root_posix, prefix))
    while True:
        candidate = posixpath.join(folder, name)
        if os.path.lexists(candidate):
            return posixpath.relpath(candidate, root_posix)
        parent = posixpath.dirname(folder)
        if parent == folder:
            return None
        folder = parent
