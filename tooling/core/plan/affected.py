"""Changed paths -> affected units, with reasons. Pure: no git, no files.

The rules (each has its own test):

- a changed file that units read selects exactly those units (``modified``),
  wherever it sits: a file beside one unit but read by others selects all its
  readers; a file nothing reads (a README) selects nothing;
- any change under a unit's folder (its ``.terraform.lock.hcl``, a
  ``.tfvars`` beside it, a sub-folder) selects the unit (``modified``), as
  Terragrunt copies the folder into every run; only the files that cannot
  change a plan are exempt (:data:`NO_PLAN_FILES`: documentation);
- symbolic links are followed to their targets inside the repository: a file or
  folder linked into a unit's folder, or a link on the way of a file the
  configuration reads, makes the unit a reader of the target (the model records
  it, :mod:`tooling.model.loader`), so the read rule selects it;
- a unit the model cannot fully evaluate (``Unit.error``) is selected by any
  change at all, with the error as its reason: its plan then fails or shows
  the truth, and nothing is skipped silently;
- a new ``terragrunt.hcl`` -> ``added``; a removed one -> ``deleted`` (to be
  destroyed from the base revision); a renamed one -> ``moved`` with
  ``moved_from``: its state key changes, so it must be migrated, never
  destroyed and recreated;
- dependents of changed units are listed apart, with the upstream they are
  reached ``via``: they are re-planned after the upstream applies;
- order: head DAG order (dependencies first); deletions last, in reverse
  dependency order of the base revision.
"""

from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tooling.model.units import UNIT_FILE, Change, Model, Unit


@dataclass(frozen=True)
class AffectedUnit:
    """One unit a change selects: how it changed, and the changed paths that select it."""

    path: str
    change: str  # added | modified | deleted | moved
    reasons: tuple[str, ...]
    tier: str
    executor: str
    moved_from: str | None = None
    #: the model cannot fully evaluate this unit (it is then affected by any change)
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "change": self.change,
            "moved_from": self.moved_from,
            "reasons": list(self.reasons),
            "tier": self.tier,
            "executor": self.executor,
            "error": self.error,
        }


@dataclass(frozen=True)
class Dependent:
    """A unit not changed itself whose upstream ``via`` is: re-planned after the upstream applies."""

    path: str
    via: str
    tier: str
    executor: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "via": self.via, "tier": self.tier, "executor": self.executor}


@dataclass(frozen=True)
class Affected:
    """What a change affects (``invoke affected --json``): the units in order, their dependents apart."""

    base: str
    head: str
    units: tuple[AffectedUnit, ...]
    dependents: tuple[Dependent, ...] = field(default_factory=tuple)
    uncommitted: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "head": self.head,
            "uncommitted": self.uncommitted,
            "units": [u.to_json() for u in self.units],
            "dependents": [d.to_json() for d in self.dependents],
        }


#: files under a unit's folder that cannot change a plan (fnmatch on the file name):
#: documentation. A unit that reads one (``file("README.md")``) is still selected by
#: the read rule. Documented in docs/commands.md ("What a change affects").
NO_PLAN_FILES = ("*.md", "*.markdown", "*.rst", "*.adoc", "LICENSE", "LICENSE.*", "CODEOWNERS")


def folder_affects(path: str, unit_dir: str) -> bool:
    """Whether a change to ``path`` affects the unit in ``unit_dir`` by the folder rule."""
    prefix = "" if unit_dir in ("", ".") else unit_dir + "/"
    if not path.startswith(prefix):
        return False
    name = posixpath.basename(path)
    return not any(name_matches(name, pattern) for pattern in NO_PLAN_FILES)


def name_matches(name: str, pattern: str) -> bool:
    """``fnmatch.fnmatchcase(name, pattern)``, without compiling a regular expression for a
    pattern whose only wildcard is one ``*`` first or last (each of :data:`NO_PLAN_FILES`:
    about 0.3 ms of a detection run, once per pattern)."""
    head, star, tail = pattern.partition("*")
    if not any(c in pattern for c in "?[") and "*" not in tail:
        if not star:
            return name == pattern
        if not head:
            return name.endswith(tail)
        if not tail:
            return name.startswith(head)
    return fnmatch.fnmatchcase(name, pattern)


def _folder_units(path: str, units: Mapping[str, Unit]) -> list[str]:
    """The units whose folder holds ``path`` (nearest first), by the folder rule."""
    found = []
    folder = posixpath.dirname(path)
    while True:
        if (folder or ".") in units and folder_affects(path, folder or "."):
            found.append(folder or ".")
        if not folder:
            return found
        folder = posixpath.dirname(folder)


def _unit_dir(path: str) -> str | None:
    if posixpath.basename(path) == UNIT_FILE:
        return posixpath.dirname(path)
    return None


def _readers_of(
    path: str, exact: dict[str, list[str]], dirs: Sequence[tuple[str, list[str]]]
) -> list[str]:
    found = list(exact.get(path, ()))
    for prefix, readers in dirs:
        if path.startswith(prefix):
            found.extend(readers)
    return found


def affected(
    changes: Iterable[Change],
    head: Model,
    load_base: Callable[[], Model],
    *,
    base_sha: str,
    head_sha: str,
    uncommitted: bool = False,
) -> Affected:
    """Map ``changes`` (paths between the merge base and head) to units.

    ``load_base`` builds the base revision's model; it is called only when a
    unit was deleted or renamed away (git's own status says which unit files
    were added, so the base is not needed for that).
    """
    index = head.readers()
    exact = {k: v for k, v in index.items() if not k.endswith("/")}
    dirs = [(k, v) for k, v in index.items() if k.endswith("/")]

    kind: dict[str, str] = {}
    reasons: dict[str, dict[str, None]] = {}
    moved_from: dict[str, str] = {}
    deleted: dict[str, list[str]] = {}

    rank = {"modified": 0, "added": 1, "moved": 2}
    blind = [p for p in head.order if head.units[p].error]

    def select(unit: str, how: str, why: str) -> None:
        # the strongest kind wins: a moved unit whose files also changed is still `moved`
        if rank[how] >= rank[kind.get(unit, "modified")]:
            kind[unit] = how
        reasons.setdefault(unit, {})[why] = None

    for change in changes:
        new_dir = _unit_dir(change.path)
        old_dir = _unit_dir(change.old) if change.old else None
        if (
            change.status == "R"
            and old_dir is not None
            and new_dir is not None
            and new_dir != old_dir
            and new_dir in head.units
            and old_dir not in head.units
        ):
            moved_from[new_dir] = old_dir
            select(new_dir, "moved", change.path)
            continue
        if change.status == "D" and new_dir is not None and new_dir not in head.units:
            deleted.setdefault(new_dir, []).append(change.path)
            continue
        if change.status == "R" and old_dir is not None and old_dir not in head.units:
            deleted.setdefault(old_dir, []).append(change.old or change.path)
        if new_dir is not None and new_dir in head.units and change.status in ("A", "R"):
            select(new_dir, "added", change.path)
            continue
        for path in {change.path, change.old} - {None}:
            assert path is not None
            for unit in _readers_of(path, exact, dirs):
                select(unit, "modified", path)
            for unit in _folder_units(path, head.units):
                select(unit, "modified", path)
            for unit in blind:
                if unit not in reasons:  # any change may matter to it: the first one says so
                    select(unit, "modified", path)

    # A unit moved to a folder that existed before is still a move, not an add.
    for unit, old in moved_from.items():
        kind[unit] = "moved"
        deleted.pop(old, None)

    chosen = [p for p in head.order if p in kind]
    units = [
        AffectedUnit(
            path=p,
            change=kind[p],
            reasons=tuple(reasons[p]),
            tier=head.units[p].tier,
            executor=head.units[p].executor,
            moved_from=moved_from.get(p),
            error=head.units[p].error,
        )
        for p in chosen
    ]

    dependents = _dependents(head, chosen)

    if deleted:
        base = load_base()
        for path in reversed(base.order):
            if path in deleted:  # a unit added and removed again on the branch is not in base
                gone: Unit = base.units[path]
                units.append(
                    AffectedUnit(
                        path, "deleted", tuple(sorted(set(deleted[path]))), gone.tier, gone.executor
                    )
                )
    return Affected(base_sha, head_sha, tuple(units), tuple(dependents), uncommitted)


def _dependents(model: Model, changed: Sequence[str]) -> list[Dependent]:
    """Transitive dependents of ``changed`` not themselves changed, in DAG order."""
    children = model.dependents()
    via: dict[str, str] = {}
    frontier = list(changed)
    changed_set = set(changed)
    while frontier:
        nxt: list[str] = []
        for parent in frontier:
            for child in children.get(parent, ()):
                if child not in changed_set and child not in via:
                    via[child] = parent
                    nxt.append(child)
        frontier = nxt
    return [
        Dependent(p, via[p], model.units[p].tier, model.units[p].executor)
        for p in model.order
        if p in via
    ]
