"""The legs' plan reports merged into one. Pure.

Each leg of a split executor (:mod:`tooling.core.ci.split`) plans its units into
its own folder (``invoke plan --from-matrix M --leg ID``), whose
summary.json records the leg (``leg``: its ``id``, ``index``, ``count`` and
``units``). ``invoke report --merge DIR...`` combines them into one summary.json
of the same schema and one comment. It refuses, one line each: legs of
different commits, bases, tools or working trees; a unit in two legs; a leg of
a split missing; more legs than a matrix holds; a unit its leg does not own (not
in ``leg.units``) or of another executor than the leg's; a file under a leg's
``units/`` or ``cascade/`` that is not a regular file of one of its own units
(:func:`files_to_copy`). Each leg's summary.json is read (its schema checked) and
typed before it gets here (:func:`tooling.engine.plan.planfolder.read_summary`).

``invoke plan --from-matrix M --leg ID`` plans only what its leg owns
(:func:`leg_of`, :func:`select`): the leg's units must be of its executor, and
the executor's legs, when the matrix holds them all, must cover its affected
units.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from tooling.core.apply.record import ApplyRecord
from tooling.core.ci import split
from tooling.core.plan.affected import Affected
from tooling.core.plan.summary import Summary
from tooling.core.text.terminal import escape_line
from tooling.errors import ToolingError
from tooling.model.policy import MAX_LEGS

_LEG_ID = re.compile(r"(.+)-([0-9]{1,3})-of-([0-9]{1,3})")


@dataclass(frozen=True)
class Leg:
    """One leg of a matrix, as ``invoke plan --from-matrix M --leg ID`` plans it."""

    #: its ``leg`` id (``hosted-2-of-4``), or the executor's name when it was not split
    id: str
    executor: str
    #: its 1-based index among its executor's legs, and how many legs that executor has
    index: int
    count: int
    #: the units the matrix gives it, in plan order
    units: tuple[str, ...]
    #: the units of all its executor's legs together when the matrix holds every one of
    #: them (the whole matrix, or an executor that was not split); None when it holds
    #: only some (the workflow passes a leg its own entry)
    together: frozenset[str] | None


def leg_of(doc: Mapping[str, Any], leg: str) -> Leg:
    """Leg ``leg`` of the matrix ``doc`` (checked against the matrix's schema). Refused: a
    leg the matrix does not hold, a leg id `invoke matrix` does not write, and a leg
    without units (`invoke matrix` leaves an executor without affected units out)."""
    executor, units = split.leg_units(doc, leg)
    if not units:
        raise ToolingError(
            f"--leg {escape_line(leg)}: the matrix gives the leg no units, and `invoke matrix` never writes "
            "such a leg: pass the matrix as `invoke matrix` wrote it"
        )
    include: Sequence[Mapping[str, Any]] = doc["include"]
    index, count = position(include, leg)
    mine = [e for e in include if e.get("executor") == executor]
    together: frozenset[str] | None = frozenset(units) if count == 1 else None
    if count > 1:
        ids = {str(e.get("leg")) for e in mine}
        if all(split.leg_id(executor, n, count) in ids for n in range(1, count + 1)):
            together = frozenset(u for e in mine for u in e.get("units") or ())
    return Leg(leg, executor, index, count, tuple(units), together)


def select(change: Affected, leg: Leg) -> Affected:
    """``change`` narrowed to ``leg``'s units. Refused, one line each: a unit the change
    does not affect (:func:`tooling.core.ci.split.within`); a unit of another executor than
    the leg's (its plan would be dropped without a word); an affected unit of the leg's
    executor that none of its legs lists, when the matrix holds them all (no leg would
    plan it, and the merged report would not show it)."""
    narrowed = split.within(change, leg.units, leg.id)
    for unit in narrowed.units:
        if unit.executor != leg.executor:
            raise ToolingError(
                f"leg {leg.id} lists {unit.path}, a unit of executor {unit.executor}, in a leg "
                f"of executor {leg.executor}: its plan would be dropped; run `invoke matrix` "
                "again on this commit and pass its output as written"
            )
    if leg.together is not None:
        left = [
            u.path
            for u in change.units
            if u.executor == leg.executor and u.path not in leg.together
        ]
        if left:
            more = f" and {len(left) - 1} more" if len(left) > 1 else ""
            raise ToolingError(
                f"leg {leg.id}: the matrix's {leg.executor} legs leave out {left[0]}{more}, "
                "which this change affects: no leg would plan it; the matrix was made at "
                "another commit or base: run `invoke matrix` again on this one"
            )
    return narrowed


def position(include: Sequence[Mapping[str, Any]], leg: str) -> tuple[int, int]:
    """Leg ``leg``'s 1-based index among its executor's legs, and how many legs that
    executor has: from its id (``hosted-2-of-4``, :func:`tooling.core.ci.split.leg_id`), so
    one entry alone (the workflow's own leg) says it; (1, 1) for an executor that was
    not split."""
    entry = next(e for e in include if (e.get("leg") or e.get("executor")) == leg)
    if not entry.get("leg"):
        return 1, 1
    found = _LEG_ID.fullmatch(str(entry["leg"]))
    if not found or found.group(1) != entry.get("executor"):
        raise ToolingError(
            f"leg {escape_line(leg)}: not a leg id `invoke matrix` writes (EXECUTOR-N-of-COUNT): "
            "pass the matrix as `invoke matrix` wrote it"
        )
    index, count = int(found.group(2)), int(found.group(3))
    if not 1 <= index <= count:
        raise ToolingError(f"leg {escape_line(leg)}: leg {index} of {count} does not exist")
    return index, count


def _leg_name(name: str, doc: Summary) -> str:
    return f"{name} (leg {escape_line(doc.leg.id)})" if doc.leg is not None else name


#: what to do when a leg's folder is not as its `invoke plan --leg` wrote it
_AS_WRITTEN = "merge the folders the legs' `invoke plan --leg` wrote, as they wrote them"


def _owned(name: str, doc: Summary) -> None:
    """Refuse a leg whose units are not its own: a unit outside its ``leg.units``, or of
    another executor than the leg's (a hosted leg cannot report a lan unit)."""
    executor = doc.executor
    if doc.leg is not None and executor is None:
        raise ToolingError(
            f"{_leg_name(name, doc)}: a leg without an executor in its summary.json: {_AS_WRITTEN}"
        )
    listed = frozenset(doc.leg.units) if doc.leg is not None else None
    for unit in doc.units:
        if listed is not None and unit.path not in listed:
            raise ToolingError(
                f"{_leg_name(name, doc)} reports unit {unit.path}, which its leg does not own "
                f"(not in leg.units): {_AS_WRITTEN}"
            )
        if executor is not None and unit.executor != executor:
            raise ToolingError(
                f"{_leg_name(name, doc)} reports unit {unit.path} of executor {unit.executor}, "
                f"in a leg of executor {executor}: {_AS_WRITTEN}"
            )


def _same(doc: Summary) -> dict[str, object]:
    """The fields every leg must agree on (what the plans were made from), as written."""
    return {
        "version": doc.version,
        "head": doc.head,
        "base": doc.base,
        "tools": dict(doc.tools),
        "settings": doc.settings.to_json() if doc.settings is not None else None,
    }


def check(docs: Sequence[tuple[str, Summary]]) -> None:
    """Refuse ``docs`` (``(folder name, summary.json)``) that are not the legs of one plan."""
    if not docs:
        raise ToolingError("--merge needs at least one plan folder")
    if len(docs) > MAX_LEGS:
        raise ToolingError(
            f"--merge: {len(docs)} folders, more legs than one matrix holds ({MAX_LEGS}): "
            "merge the legs of one matrix"
        )
    for name, doc in docs:
        _owned(name, doc)
    first_name, first = docs[0]
    for name, doc in docs[1:]:
        mine, theirs = _same(doc), _same(first)
        for key, value in mine.items():
            if value != theirs[key]:
                raise ToolingError(
                    f"{_leg_name(name, doc)} has {key} {value!r}, {_leg_name(first_name, first)} "
                    f"{theirs[key]!r}: the legs planned different {key}s; merge the legs of one run"
                )
        if _digest(doc) != _digest(first):
            raise ToolingError(
                f"{_leg_name(name, doc)} planned another working tree than {_leg_name(first_name, first)} "
                "(worktree digests differ): merge the legs of one run"
            )
    owner: dict[str, str] = {}
    for name, doc in docs:
        for unit in doc.units:
            if unit.path in owner:
                raise ToolingError(
                    f"unit {unit.path} is in {owner[unit.path]} and {_leg_name(name, doc)}: "
                    "a unit must be planned by one leg; merge the legs of one matrix"
                )
            owner[unit.path] = _leg_name(name, doc)
    seen: dict[str, set[int]] = {}
    counts: dict[str, int] = {}
    for name, doc in docs:
        leg = doc.leg
        if leg is None:
            continue
        executor = str(doc.executor)
        index, count = leg.index, leg.count
        if not 1 <= index <= count:
            raise ToolingError(
                f"{_leg_name(name, doc)}: its leg record says leg {index!r} of {count!r}: "
                "the summary.json is damaged; plan the leg again"
            )
        if counts.setdefault(executor, count) != count:
            raise ToolingError(
                f"{_leg_name(name, doc)} is one of {count} legs, another {executor} leg one of "
                f"{counts[executor]}: the legs come from different matrices"
            )
        if index in seen.setdefault(executor, set()):
            raise ToolingError(f"{_leg_name(name, doc)}: leg {index} of {executor} given twice")
        seen[executor].add(index)
    for executor, count in counts.items():
        missing = sorted(set(range(1, count + 1)) - seen[executor])
        if missing:
            names = ", ".join(f"{executor}-{i}-of-{count}" for i in missing)
            raise ToolingError(
                f"leg(s) {names} missing: pass every leg's folder (a leg that did not "
                "finish has no report to merge; the merged report would hide its units)"
            )


def _digest(doc: Summary) -> str | None:
    return doc.worktree.digest if doc.worktree is not None else None


def merged(docs: Sequence[tuple[str, Summary]]) -> Summary:
    """One summary for the legs ``docs`` (checked by :func:`check`): their units in
    leg order; interrupted when one leg was; ``legs``: the leg ids merged."""
    check(docs)
    ordered = sorted(
        docs, key=lambda d: (str(d[1].executor), d[1].leg.index if d[1].leg is not None else 0)
    )
    first = ordered[0][1]
    executors = {d.executor for _, d in ordered}
    return replace(
        first,
        executor=executors.pop() if len(executors) == 1 else None,
        interrupted=any(d.interrupted for _, d in ordered),
        legs=tuple(d.leg.id if d.leg is not None else d.executor or name for name, d in ordered),
        units=tuple(u for _, d in ordered for u in d.units),
        leg=None,
    )


def unit_of_file(rel: str) -> str | None:
    """The unit whose folder holds the file ``rel`` (a leg folder's relative POSIX path):
    ``units/<unit>/<file>`` or ``cascade/units/<unit>/<file>``; None for any other place."""
    parts = rel.split("/")
    if parts[:2] == ["cascade", "units"]:
        parts = parts[1:]
    if len(parts) < 3 or parts[0] != "units":
        return None
    return "/".join(parts[1:-1])


def files_to_copy(
    name: str, owned: Collection[str], entries: Iterable[tuple[str, str]]
) -> list[str]:
    """The files of a leg's folder the merge copies, from ``entries`` (each place under its
    ``units/`` and ``cascade/`` folders: relative POSIX path and kind, ``file``, ``dir``,
    ``link`` or ``other``). Refused, naming the leg folder ``name``: a symbolic link or
    anything but a regular file or folder (the merged folder would point elsewhere), and
    a file that is not in the folder of one of ``owned`` (the leg's units: another leg's
    reviewed plan would be overwritten)."""
    files = []
    for rel, kind in entries:
        if kind == "link":
            raise ToolingError(
                f"{name}: {rel} is a symbolic link; a leg's folder holds regular files only: "
                f"{_AS_WRITTEN}"
            )
        if kind == "other":
            raise ToolingError(
                f"{name}: {rel} is not a regular file; a leg's folder holds regular files only: "
                f"{_AS_WRITTEN}"
            )
        if kind != "file":
            continue
        unit = unit_of_file(rel)
        if unit is None or unit not in owned:
            whose = f"unit {unit}" if unit else "no unit"
            raise ToolingError(
                f"{name}: {rel} is a file of {whose}, not of a unit this leg planned "
                f"(another leg's plan would be overwritten): {_AS_WRITTEN}"
            )
        files.append(rel)
    return files


def leg_names(include: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Each executor's legs in a matrix's ``include``: the ``leg`` ids of a split executor,
    the executor's own name otherwise (the suffix of its artifacts)."""
    out: dict[str, list[str]] = {}
    for entry in include:
        executor = str(entry.get("executor"))
        out.setdefault(executor, []).append(str(entry.get("leg") or executor))
    return out


def per_executor(
    include: Sequence[Mapping[str, Any]], docs: Mapping[str, ApplyRecord | None]
) -> dict[str, ApplyRecord | None]:
    """The legs' records (``docs`` by leg name, None when a leg left none) combined per
    executor: None when one of its legs left none (the executor did not finish),
    else their units together, interrupted when one leg was."""
    out: dict[str, ApplyRecord | None] = {}
    for executor, names in leg_names(include).items():
        found = [docs.get(name) for name in names]
        present = [doc for doc in found if doc is not None]
        if len(present) < len(found):
            out[executor] = None
            continue
        out[executor] = replace(
            present[0],
            units=tuple(u for doc in present for u in doc.units),
            interrupted=any(doc.interrupted for doc in present),
        )
    return out
