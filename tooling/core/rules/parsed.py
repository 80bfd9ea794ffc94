"""What Terragrunt parses for the units in play, and what of it leaves the repository. Pure.

Terragrunt parses more than a unit's own file: the files it includes, the files
``read_terragrunt_config()`` reads, and the configuration of every dependency (for
its outputs or mocks), whose own includes and dependencies it parses in turn. The
rules that run before any Terragrunt process (``run_cmd``, the command functions, a
secret read through ``get_env``...) must read all of it, or a command hidden one hop
away runs with the job's credentials. :func:`parse_closure` follows the model from the
units in play to every file Terragrunt will parse for them, and names what cannot be
scanned because it is not in the repository: a dependency outside the live folders
(it is no unit: nothing scans or plans it), a configuration read outside the git
repository, a file that is a symbolic link to one (:class:`Leaf`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from tooling.model.gitpaths import in_repository
from tooling.model.stacks import StackSource
from tooling.model.trees import in_live, skipped
from tooling.model.units import UNIT_FILE, Model

#: what a :class:`Leaf` is: a dependency outside the live folders, a configuration read
#: outside the repository, a symbolic link pointing outside it
DEPENDENCY, READ, LINK = "dependency", "read", "link"


@dataclass(frozen=True, order=True)
class Leaf:
    """Something Terragrunt would parse for a unit in play that lies outside what the
    scan covers: where it is written (``file:line``), what it is, and where it points."""

    file: str
    line: int
    kind: str  # DEPENDENCY | READ | LINK
    target: str
    unit: str  # the unit in play that reaches it


@dataclass(frozen=True)
class ParseClosure:
    """The units in play (with every dependency, transitively), the files Terragrunt
    parses for them, in order, and what of it the scan cannot cover."""

    units: tuple[str, ...]
    files: tuple[str, ...]
    leaves: tuple[Leaf, ...] = ()
    #: the sources the stacks among them fetch (:func:`tooling.model.stacks.stack_closure`)
    stack_sources: tuple[StackSource, ...] = ()


def outside_repository(path: str, git_prefix: str) -> bool:
    """Whether the project-relative ``path`` lies outside the git repository."""
    return path.startswith("../") and not in_repository(path, git_prefix)


def _line_of(text: str | None, needle: str) -> int:
    if not text or not needle:
        return 1
    at = text.find(needle)
    return text.count("\n", 0, at) + 1 if at >= 0 else 1


def _where(files: Sequence[str], needle: str, text: Callable[[str], str | None]) -> tuple[str, int]:
    """The first of ``files`` whose text mentions ``needle``, and the line (to name the
    place only): else the first file, line 1."""
    for path in files:
        body = text(path)
        if body and needle in body:
            return path, _line_of(body, needle)
    return (files[0] if files else ""), 1


def parse_closure(
    model: Model,
    start: Iterable[str],
    *,
    live: Sequence[str],
    git_prefix: str = "",
    text: Callable[[str], str | None] = lambda _path: None,
    escapes: Callable[[str], str | None] = lambda _path: None,
) -> ParseClosure:
    """The closure of the units ``start`` (paths of ``model``'s units): those units and
    every unit they depend on, transitively; each one's file and the files it reads
    (folders and Terragrunt's caches left out), in order; and the :class:`Leaf` s.

    ``text`` gives a file's text (to name the line of a leaf), ``escapes`` where a
    file that is a symbolic link leaving the repository points (None: it does not)."""
    live = tuple(live)
    units: dict[str, None] = {}
    files: dict[str, None] = {}
    leaves: dict[Leaf, None] = {}
    todo = [p for p in start if p in model.units]
    while todo:
        path = todo.pop(0)
        if path in units:
            continue
        units[path] = None
        unit = model.units[path]
        own = f"{path}/{UNIT_FILE}" if path != "." else UNIT_FILE
        mine = [own, *(r for r in unit.reads if r.endswith(".hcl") and r != own)]
        files[own] = None
        for read in unit.reads:
            if read.endswith("/") or skipped(read):
                continue
            if outside_repository(read, git_prefix):
                name = posixpath.basename(read)
                file, line = _where(mine, name, text)
                leaves[Leaf(file, line, READ, read, path)] = None
                continue
            files[read] = None
        for dep in unit.dependencies:
            if dep in model.units:
                todo.append(dep)
            elif outside_repository(dep, git_prefix) or not in_live(dep, live):
                known = unit.line_of.get(f"dependency:{dep}")
                file, line = (
                    (own, known) if known else _where(mine, posixpath.basename(dep) or dep, text)
                )
                leaves[Leaf(file, line, DEPENDENCY, dep, path)] = None
    for file in files:
        target = escapes(file)
        if target is not None:
            reader = next((u for u in units if file in model.units[u].reads), file)
            leaves[Leaf(file, 1, LINK, target, reader)] = None
    return ParseClosure(tuple(units), tuple(files), tuple(sorted(leaves)))
