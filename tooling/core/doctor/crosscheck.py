"""The model against Terragrunt's own view of each unit (``terragrunt find --dependencies --reading``).

Pure: the caller runs Terragrunt and hands over its JSON and debug log.

A disagreement is **dangerous** when Terragrunt sees something the model does
not (a dependency, a file read, a unit): a change there would plan nothing.
It is **over-inclusion** when the model sees more than Terragrunt: a change
there plans a unit Terragrunt would leave alone, which costs a plan, never
safety. What the model covers by a wider rule is not a disagreement:

- a file under the unit's own folder (any change there affects the unit,
  :func:`tooling.core.plan.affected.folder_affects`);
- a file under a folder the unit reads whole (a local module source);
- anything, for a unit the model cannot fully evaluate: such a unit is
  affected by every change (it is counted apart, as ``blind``).

Units Terragrunt itself cannot parse (its debug log says so) are left out:
Terragrunt's answer for them is not an oracle.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tooling.core.plan.affected import affected, folder_affects
from tooling.errors import ToolingError
from tooling.model.excludes import EXCLUDES_FILE
from tooling.model.stacks import STACK_FILE
from tooling.model.units import UNIT_FILE, Change, Model, Unit


@dataclass(frozen=True)
class Seen:
    """What Terragrunt reports for one unit."""

    dependencies: frozenset[str]
    reading: frozenset[str]


def parse_find(text: str, prefix: str = "") -> dict[str, Seen]:
    """``terragrunt find --json --dependencies --reading`` -> {unit path: what it sees}.

    ``prefix`` is the folder Terragrunt ran in, relative to the repository root:
    its paths are relative to that folder.
    """
    try:
        items = json.loads(text or "[]")
    except json.JSONDecodeError as exc:
        raise ToolingError(f"terragrunt find printed something that is not JSON: {exc}") from None
    if not isinstance(items, list):
        raise ToolingError("terragrunt find printed JSON that is not a list of components")
    out: dict[str, Seen] = {}
    for item in items:
        if (
            not isinstance(item, dict)
            or item.get("type") != "unit"
            or not isinstance(item.get("path"), str)
        ):
            continue
        out[_clean(item["path"], prefix)] = Seen(
            frozenset(_clean(p, prefix) for p in item.get("dependencies") or ()),
            frozenset(_clean(p, prefix) for p in item.get("reading") or ()),
        )
    return out


def _clean(path: str, prefix: str = "") -> str:
    return (
        posixpath.normpath(posixpath.join(prefix, path))
        if prefix not in ("", ".")
        else posixpath.normpath(path)
    )


_SUPPRESSED = re.compile(r"(?:Suppressed parsing errors|Suppressing parse error for) (\S+?):[\d ]")
_MENTIONED = re.compile(r"(/\S+?/" + re.escape(UNIT_FILE) + r")\b")


#: a suppressed error that is no parse failure: locals read ``dependency.*`` in the first pass
ROUTINE_SUPPRESSED = '("dependency" is not defined)'


def unparsed_units(log: str, root: str) -> set[str]:
    """Units whose configuration Terragrunt could not parse, from its ``--log-level debug`` output.

    ``root`` is the absolute repository root; the units are relative to it.
    """
    prefix = root.rstrip("/") + "/"
    found: set[str] = set()
    for line in log.splitlines():
        if "Suppress" not in line and "Error" not in line:
            continue
        if ROUTINE_SUPPRESSED in line:
            # the partial parse of locals that use a dependency's outputs: Terragrunt
            # suppresses it and still reads the unit whole (its find lists it, reads and all)
            continue
        paths = [m.group(1) for m in _SUPPRESSED.finditer(line)]
        paths += [m.group(1) for m in _MENTIONED.finditer(line)]
        for path in paths:
            if path.startswith(prefix) and path.endswith("/" + UNIT_FILE):
                found.add(path[len(prefix) : -len(UNIT_FILE) - 1] or ".")
    return found


@dataclass(frozen=True)
class Disagreement:
    unit: str
    kind: str  # unit | dependency | read | change (a change to path does not select unit)
    path: str
    dangerous: bool  # Terragrunt sees it, the model does not

    def to_json(self) -> dict[str, Any]:
        return {
            "unit": self.unit,
            "kind": self.kind,
            "path": self.path,
            "dangerous": self.dangerous,
        }


@dataclass(frozen=True)
class Report:
    compared: int  # units both sides know, Terragrunt could parse
    exact: int  # ... on which they agree exactly
    blind: tuple[
        tuple[str, str], ...
    ]  # (unit, error): the model cannot evaluate it (affected by any change)
    unparsed: tuple[str, ...]  # units Terragrunt cannot parse (left out)
    disagreements: tuple[Disagreement, ...] = field(default_factory=tuple)
    #: units the repository's .terragrunt-excludes leaves out, which Terragrunt's find does not list
    excluded: tuple[str, ...] = ()
    #: files whose change->units mapping was compared with Terragrunt's readers
    changes_checked: int = 0

    @property
    def dangerous(self) -> tuple[Disagreement, ...]:
        return tuple(d for d in self.disagreements if d.dangerous)

    @property
    def over(self) -> tuple[Disagreement, ...]:
        return tuple(d for d in self.disagreements if not d.dangerous)

    def to_json(self) -> dict[str, Any]:
        return {
            "compared": self.compared,
            "exact": self.exact,
            "dangerous": len(self.dangerous),
            "over_inclusion": len(self.over),
            "blind": [{"unit": unit, "error": error} for unit, error in self.blind],
            "unparsed_by_terragrunt": list(self.unparsed),
            "excluded": list(self.excluded),
            "changes_checked": self.changes_checked,
            "disagreements": [d.to_json() for d in (*self.dangerous, *self.over)],
        }


def _covered(path: str, unit: Unit, dir_reads: Iterable[str], upstream: Iterable[str]) -> bool:
    """Whether a change to ``path`` reaches ``unit`` by a rule wider than a file read."""
    if folder_affects(path, unit.path) or any(path.startswith(d) for d in dir_reads):
        return True
    # a dependency's own files: the unit is re-planned as its dependent
    return any(folder_affects(path, dep) for dep in upstream)


def _same_source_quirk(path: str, unit: Unit, model: Model) -> bool:
    """Terragrunt lists, for a unit with a local ``source``, the module files of *another* unit
    written with the same source string (its read cache is keyed by the string, not the folder).
    Such a file is the other unit's, in that unit's folder; it cannot change this unit's plan."""
    if unit.source is None:
        return False
    for other in model.units.values():
        if (
            other.path != unit.path
            and other.source == unit.source
            and folder_affects(path, other.path)
        ):
            return True
    return False


def readers(theirs: Mapping[str, Seen]) -> dict[str, set[str]]:
    """file -> the units Terragrunt says read it: what ``terragrunt find --filter
    reading=FILE`` selects (the inverse of ``--reading``)."""
    out: dict[str, set[str]] = {}
    for unit, seen in theirs.items():
        for read in seen.reading:
            out.setdefault(read, set()).add(unit)
    return out


def change_misses(model: Model, theirs: Mapping[str, Seen]) -> list[Disagreement]:
    """The change->units mapping of ``plan``/``matrix`` against Terragrunt's: for each file
    Terragrunt says units read, a change to it alone must select each of them (or one of
    their upstream units, which re-plans them as dependents). A unit the model already
    lists the read for, and still does not select, is a mapping bug: dangerous."""
    found = []
    for path, wanted in sorted(readers(theirs).items()):
        if path.startswith("../"):
            continue  # outside the folder compared: no change there is seen
        result = affected([Change("M", path)], model, lambda: model, base_sha="", head_sha="")
        selected = {u.path for u in result.units} | {d.path for d in result.dependents}
        for unit in sorted(wanted - selected):
            known = model.units.get(unit)
            if known is not None and not known.error and path in known.reads:
                found.append(Disagreement(unit, "change", path, dangerous=True))
    return found


def compare(model: Model, theirs: Mapping[str, Seen], unparsed: Iterable[str] = ()) -> Report:
    """Every unit's disagreements, dangerous ones first (then by unit and path)."""
    skip = set(unparsed)
    found: list[Disagreement] = []
    blind: list[tuple[str, str]] = []
    excluded: list[str] = []
    compared = exact = 0
    for path in sorted(set(theirs) | set(model.units)):
        if path in skip:
            continue
        unit = model.units.get(path)
        seen = theirs.get(path)
        if unit is None:
            found.append(Disagreement(path, "unit", path, dangerous=True))
            continue
        if seen is None:
            if unit.exclude and unit.exclude["where"].startswith(f"{EXCLUDES_FILE}:"):
                excluded.append(path)  # left out of find by the same file: they agree
            else:
                found.append(Disagreement(path, "unit", path, dangerous=False))
            continue
        compared += 1
        if unit.error:
            blind.append((path, unit.error))
            continue
        own = f"{path}/{UNIT_FILE}" if path != "." else UNIT_FILE
        reads = set(unit.reads) - {own}
        dir_reads = [r for r in reads if r.endswith("/")]
        mine: list[Disagreement] = []
        for dep in sorted(seen.dependencies - set(unit.dependencies)):
            mine.append(Disagreement(path, "dependency", dep, dangerous=True))
        for dep in sorted(set(unit.dependencies) - seen.dependencies):
            mine.append(Disagreement(path, "dependency", dep, dangerous=False))
        upstream = model.upstream(path)
        for read in sorted(seen.reading - reads):
            if not _covered(read, unit, dir_reads, upstream) and not _same_source_quirk(
                read, unit, model
            ):
                mine.append(Disagreement(path, "read", read, dangerous=True))
        # a generated unit is made of its stack file; Terragrunt reads that when generating, not running
        made_of = {
            r
            for r in reads
            if posixpath.basename(r) == STACK_FILE and "/.terragrunt-stack/" in f"/{path}/"
        }
        for read in sorted(reads - seen.reading - set(dir_reads) - made_of):
            mine.append(Disagreement(path, "read", read, dangerous=False))
        if not mine:
            exact += 1
        found.extend(mine)
    parsed = {p: s for p, s in theirs.items() if p not in skip}
    found += change_misses(model, parsed)
    found.sort(key=lambda d: (not d.dangerous, d.unit, d.kind, d.path))
    return Report(
        compared,
        exact,
        tuple(blind),
        tuple(sorted(skip)),
        tuple(found),
        tuple(excluded),
        changes_checked=len([f for f in readers(parsed) if not f.startswith("../")]),
    )
