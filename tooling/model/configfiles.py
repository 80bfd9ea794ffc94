"""The configuration files a unit's evaluation reads: each parsed once per tree.

:class:`Scope` is the configuration being parsed (what ``get_terragrunt_dir()`` and
relative paths refer to, and the files it includes); :class:`ConfigFile` one parsed
file in that scope; :class:`Loader` reads them from the tree through the parse cache,
finds files up the folders, and keeps each file's read-function calls. Apart from the
evaluator so that the evaluator, the stacks and the loader form a chain, not a loop.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Any

from tooling.model.exprs import norm, outer_calls
from tooling.model.gitpaths import found_above, in_repository
from tooling.model.hcl import Body, Expr
from tooling.model.parsecache import ParseCache
from tooling.model.trees import Tree


@dataclass
class Scope:
    """The configuration being parsed: what ``get_terragrunt_dir()`` and relative paths refer to."""

    config: str  # repo-relative path of the configuration file
    includes: dict[str, ConfigFile] = field(default_factory=dict)

    @property
    def dir(self) -> str:
        return posixpath.dirname(self.config)


@dataclass
class ConfigFile:
    path: str  # repo-relative
    body: Body
    scope: Scope
    locals_cache: dict[str, Any] = field(default_factory=dict)


class Loader:
    def __init__(self, tree: Tree, cache: ParseCache) -> None:
        self.tree = tree
        self.cache = cache
        self.root_posix = tree.root.as_posix()
        self.root_prefix = self.root_posix.rstrip("/") + "/"
        self._bodies: dict[str, Body] = {}
        self._read_calls: dict[str, list[tuple[Expr, bool]]] = {}
        self._found: dict[tuple[str, str], str | None] = {}
        #: every name looked for above git's top level, and what was found there (None:
        #: nothing): the model's cache looks again before it is trusted (a file can appear
        #: there, or go, with no change here)
        self.looked_above: dict[str, str | None] = {}

    def find_up(self, directory: str, name: str) -> str | None:
        """``name`` in ``directory`` or the nearest folder above it (memoised: units share parents)."""
        key = (directory, name)
        if key not in self._found:
            candidate = norm(f"{directory}/{name}") if directory not in ("", ".") else norm(name)
            inside = in_repository(candidate, self.tree.git_prefix)
            if candidate.startswith("../") and not inside:
                self._found[key] = None  # above the git repository: not part of the model
            elif self.tree.exists(candidate):
                self._found[key] = candidate
            elif not in_repository(norm(f"{directory or '.'}/.."), self.tree.git_prefix):
                self._found[key] = None  # git's top level reached
            else:
                # Terragrunt looks on above the project root, up to git's top level here
                self._found[key] = self.find_up(norm(f"{directory or '.'}/.."), name)
        return self._found[key]

    def find_above_repository(self, name: str) -> str | None:
        """``name`` in a folder above git's top level, on disk (where Terragrunt's
        ``find_in_parent_folders`` goes on looking), as a ``../`` path; else None."""
        found = self.looked_above[name] = found_above(self.root_posix, self.tree.git_prefix, name)
        return found

    def read_calls(self, file: ConfigFile) -> list[tuple[Expr, bool]]:
        """The outermost read-function calls of a file (static, computed once per file)."""
        calls = self._read_calls.get(file.path)
        if calls is None:
            calls = self._read_calls[file.path] = list(outer_calls(file.body))
        return calls

    def file(self, rel: str, scope: Scope) -> ConfigFile:
        body = self._bodies.get(rel)
        if body is None:
            body = self._bodies[rel] = self.cache.get(
                self.tree.sha(rel), lambda: self.tree.read(rel), rel
            )
        return ConfigFile(rel, body, scope)
