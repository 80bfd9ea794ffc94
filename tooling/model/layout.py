"""Where the units live in a repository, and what marks its root: ``policy.toml [layout]``.

Today's layout is the default (``live/`` holds the units, ``root.hcl`` marks
the root). A repository that adopts the tooling with another layout says so
once; ``invoke doctor`` reports what is missing.

A repository with several live roots, each its own environment (``non-prod/``
and ``prod/``), declares each under ``[layout.roots."FOLDER"]`` with its own
facts: ``state_prefix`` (its units' state keys start with it, instead of
``[check] foundation_state_prefix``), and optionally ``executor`` and
``may_depend_on``, which make the folder a layer of ``invoke check`` (as a
``[check.layers.NAME]`` table would, named after the folder), and ``tier``:
the tier of its units that declare none (else a unit's tier is the folder
below its live folder). Each such root is a live folder too (``live`` may
then be left out). The table is read and checked with the rest of policy.toml
(:func:`tooling.model.policy.policy_from`): ``policy.layout``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from tooling.model.units import LIVE_DIR, UNRESOLVED_EXECUTOR, Model

ROOT_FILE = "root.hcl"


@dataclass(frozen=True)
class LiveRoot:
    """One live root of ``[layout.roots."FOLDER"]``: a folder of units and its own facts."""

    path: str
    #: the prefix its units' state keys start with (None: [check] foundation_state_prefix)
    state_prefix: str | None = None
    #: where its units run; set, the folder is a layer of ``invoke check``
    executor: str | None = None
    #: the layers (folders or [check.layers] names) its units may depend on; default: itself
    may_depend_on: tuple[str, ...] = ()
    #: the tier of its units that declare none (None: the folder below the live folder)
    tier: str | None = None


@dataclass(frozen=True)
class Layout:
    """Where the units live and what marks the root (``[layout]``; today's by default)."""

    #: folders (relative to the root) whose ``terragrunt.hcl`` files are units; "." is all of it
    live: tuple[str, ...] = (LIVE_DIR,)
    #: the file at the repository root that every unit includes
    root_file: str = ROOT_FILE
    #: the live roots declared with their own facts (``[layout.roots."FOLDER"]``)
    roots: tuple[LiveRoot, ...] = ()

    @property
    def default_tiers(self) -> tuple[tuple[str, str], ...]:
        """(folder, tier) of the roots that name their units' default tier; with several
        live folders, each other one is the tier of its units (an environment: ``prod``),
        else the folder below the live folder is."""
        named = tuple((r.path, r.tier) for r in self.roots if r.tier is not None)
        if len(self.live) < 2:
            return named
        taken = {path for path, _ in named}
        return named + tuple(
            (f, f.rsplit("/", 1)[-1]) for f in self.live if f != "." and f not in taken
        )

    def root_of(self, path: str) -> LiveRoot | None:
        """The declared live root that holds the unit folder ``path`` (the longest match)."""
        best: LiveRoot | None = None
        for root in self.roots:
            inside = root.path == "." or path == root.path or path.startswith(root.path + "/")
            if inside and (best is None or len(root.path) > len(best.path)):
                best = root
        return best


def route_blind(model: Model, layout: Layout, executors: Sequence[str] = ()) -> Model:
    """``model`` with each unit it cannot evaluate routed by its folder: the executor of its
    live root (``[layout.roots."FOLDER"] executor``), else the one executor policy.toml
    declares (``executors``: their names). Such a unit keeps its error and its unresolved
    gate: it is planned, waits for a human (gate manual) and is never applied."""
    routed = dict(model.units)
    for path, unit in model.units.items():
        if unit.executor != UNRESOLVED_EXECUTOR or not unit.error:
            continue
        root = layout.root_of(path)
        executor = root.executor if root and root.executor else None
        if executor is None and len(executors) == 1:
            executor = executors[0]
        if executor is not None:
            routed[path] = replace(unit, executor=executor)
    if routed == model.units:
        return model
    return replace(model, units=routed)
