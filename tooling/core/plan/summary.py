"""summary.json as a typed value: what a plan folder holds and what it was made from. Pure.

A :class:`Summary` is made by the plan operation (``invoke plan``, ``invoke app-plan``)
or by the merge of a split executor's legs, and written once; read back, it is built
from a document already checked against ``tooling/schemas/summary.schema.json``. Both
ends are :mod:`tooling.engine.plan.planfolder`'s (the one reader and the one writer); the
rest of the tooling reads the fields of this value, never the document's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tooling.core.plan import fields
from tooling.core.plan.results import Result

SUMMARY_VERSION = 1
T = TypeVar("T")


@dataclass(frozen=True)
class Worktree:
    """``worktree``: the working tree the plans were made from, read before any tool ran:
    ``dirty`` when it differed from ``head``, with the changed files and a digest of the
    difference (:func:`tooling.core.apply.binding.worktree_record`)."""

    dirty: bool
    files: tuple[str, ...] = ()
    digest: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"dirty": self.dirty, "files": list(self.files), "digest": self.digest}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Worktree:
        return cls(
            fields.flag(doc, "dirty"), fields.strings(doc, "files"), fields.optional(doc, "digest")
        )


@dataclass(frozen=True)
class LegRecord:
    """``leg``: the leg of a split executor this folder planned (``invoke plan --leg``):
    its id, its 1-based index among the executor's legs, how many legs it has, and the
    units the matrix gave it."""

    id: str
    index: int
    count: int
    units: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "index": self.index, "count": self.count, "units": list(self.units)}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> LegRecord:
        return cls(
            fields.text(doc, "id"),
            fields.whole(doc, "index"),
            fields.whole(doc, "count"),
            fields.strings(doc, "units"),
        )


@dataclass(frozen=True)
class PlannedAgainst:
    """``settings``: what the run planned against (module sources, state), in a line."""

    module_sources: str
    state: str
    embedded_default: bool
    description: str

    def to_json(self) -> dict[str, Any]:
        return {
            "module_sources": self.module_sources,
            "state": self.state,
            "embedded_default": self.embedded_default,
            "description": self.description,
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> PlannedAgainst:
        return cls(
            fields.text(doc, "module_sources"),
            fields.text(doc, "state"),
            fields.flag(doc, "embedded_default"),
            fields.text(doc, "description"),
        )


@dataclass(frozen=True)
class AppRecord:
    """``app`` (``invoke app-plan``): the application, its folder's name, and the state
    the plan was made against (:meth:`tooling.core.apps.tier.AppState.to_json`)."""

    name: str
    dir: str
    state: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "dir": self.dir, "state": dict(self.state)}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> AppRecord:
        state = doc.get("state")
        if not isinstance(state, Mapping):
            raise ValueError("app/state: expected an object")
        return cls(fields.text(doc, "name"), fields.text(doc, "dir"), dict(state))


@dataclass(frozen=True)
class Summary:
    """One plan folder's summary.json: the revisions and tools the plans were made with,
    each unit's result with its gate, and where the folder came from (a leg, a merge of
    legs, an application)."""

    #: the commit planned (an app's: its repository's; None outside git)
    head: str | None
    #: per unit, in plan (DAG) order, each with its gate
    units: tuple[Result, ...] = ()
    #: the change's base revision (None when the units were named or all planned)
    base: str | None = None
    #: the executor planned (None: every executor)
    executor: str | None = None
    #: tool name -> version pinned in .tool-versions
    tools: Mapping[str, str] = field(default_factory=dict)
    #: stopped (Ctrl-C, SIGTERM) before every unit finished: never applied
    interrupted: bool = False
    #: when the run started (``YYYY-MM-DDTHH:MM:SSZ``); absent in older folders
    planned_at: str | None = None
    worktree: Worktree | None = None
    settings: PlannedAgainst | None = None
    #: the leg of a split executor this folder planned
    leg: LegRecord | None = None
    #: a merged report: the ids of the legs it combines
    legs: tuple[str, ...] | None = None
    app: AppRecord | None = None
    version: int = SUMMARY_VERSION

    def unit(self, path: str) -> Result | None:
        """The unit ``path`` (None when the folder holds no such unit)."""
        return next((u for u in self.units if u.path == path), None)

    def plan_digests(self) -> dict[str, str | None]:
        """Each unit's plan SHA-256 (the binary plan the reviewers saw), by path."""
        return {u.path: u.plan_sha256 for u in self.units}

    def to_json(self) -> dict[str, Any]:
        """The document as ``invoke plan`` writes it (an absent field stays absent)."""
        doc: dict[str, Any] = {
            "version": self.version,
            "base": self.base,
            "head": self.head,
            "executor": self.executor,
            "tools": dict(self.tools),
            "interrupted": self.interrupted,
        }
        if self.planned_at is not None:
            doc["planned_at"] = self.planned_at
        if self.worktree is not None:
            doc["worktree"] = self.worktree.to_json()
        if self.settings is not None:
            doc["settings"] = self.settings.to_json()
        if self.legs is not None:
            doc["legs"] = list(self.legs)
        doc["units"] = [u.to_json() for u in self.units]
        if self.leg is not None:
            doc["leg"] = self.leg.to_json()
        if self.app is not None:
            doc["app"] = self.app.to_json()
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Summary:
        """The summary ``doc`` describes (checked against its schema first: this
        raises ``ValueError`` naming the first field that is missing or of the wrong
        type, for a document that was not)."""
        tools = doc.get("tools")
        if not isinstance(tools, Mapping) or not all(isinstance(v, str) for v in tools.values()):
            raise ValueError("tools: expected an object of versions")
        return cls(
            head=fields.optional(doc, "head"),
            units=_units(doc.get("units")),
            base=fields.optional(doc, "base"),
            executor=fields.optional(doc, "executor"),
            tools={str(k): str(v) for k, v in tools.items()},
            interrupted=fields.flag(doc, "interrupted") if "interrupted" in doc else False,
            planned_at=fields.optional(doc, "planned_at"),
            worktree=_part(doc, "worktree", Worktree.from_json),
            settings=_part(doc, "settings", PlannedAgainst.from_json),
            leg=_part(doc, "leg", LegRecord.from_json),
            legs=fields.strings(doc, "legs") if "legs" in doc else None,
            app=_part(doc, "app", AppRecord.from_json),
            version=fields.whole(doc, "version"),
        )


def _units(value: object) -> tuple[Result, ...]:
    if not isinstance(value, list):
        raise ValueError("units: expected a list")
    out = []
    for i, unit in enumerate(value):
        if not isinstance(unit, Mapping):
            raise ValueError(f"units[{i}] is not a planned unit (expected an object)")
        try:
            out.append(Result.from_json(unit))
        except ValueError as exc:
            raise ValueError(f"units[{i}] is not a planned unit ({exc})") from None
    return tuple(out)


def _part(doc: Mapping[str, Any], key: str, build: Callable[[Mapping[str, Any]], T]) -> T | None:
    """The sub-document ``key`` built by ``build`` (None when absent)."""
    if key not in doc:
        return None
    value = doc[key]
    if not isinstance(value, Mapping):
        raise ValueError(f"{key}: expected an object")
    try:
        return build(value)
    except ValueError as exc:
        raise ValueError(f"{key}/{exc}") from None
