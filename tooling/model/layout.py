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
then be left out).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from tooling.errors import ToolingError
from tooling.model.policydata import interpreted
from tooling.model.policyfile import POLICY_FILE, refuse_unknown_keys
from tooling.model.units import LIVE_DIR, UNRESOLVED_EXECUTOR, Model

ROOT_FILE = "root.hcl"


_ROOT_KEYS = ("state_prefix", "executor", "may_depend_on", "tier")


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


@interpreted
def layout_from(policy: Mapping[str, Any], where: str = POLICY_FILE) -> Layout:
    """The ``[layout]`` table of a parsed policy.toml (missing keys: today's layout)."""
    table = policy.get("layout", {})
    if not isinstance(table, Mapping):
        raise ToolingError(f"{where}: [layout] must be a table")
    refuse_unknown_keys(table, ("live", "root_file", "roots"), "[layout]")
    roots = _roots(table.get("roots", {}), where)
    live = table.get("live", [r.path for r in roots] or [LIVE_DIR])
    if isinstance(live, str):
        live = [live]
    if not isinstance(live, list) or not live or not all(isinstance(x, str) and x for x in live):
        raise ToolingError(
            f'{where}: [layout] live must be a folder or a list of folders, e.g. ["live"]'
        )
    folders = [_folder(folder, where, "[layout] live") for folder in live]
    # a declared root is a live folder, whether or not `live` names it
    folders += [r.path for r in roots if r.path not in folders]
    root_file = table.get("root_file", ROOT_FILE)
    if not isinstance(root_file, str) or not root_file or "/" in root_file:
        raise ToolingError(f'{where}: [layout] root_file must be a file name, e.g. "root.hcl"')
    return Layout(tuple(folders), root_file, roots)


def _folder(folder: str, where: str, what: str) -> str:
    clean = folder.strip("/") or "."
    if clean.startswith("..") or folder.startswith("/") or "/../" in f"/{clean}/":
        raise ToolingError(f"{where}: {what} {folder!r} must be a folder inside the repository")
    return clean


def _roots(raw: Any, where: str) -> tuple[LiveRoot, ...]:
    """``[layout.roots."FOLDER"]`` tables -> live roots (checked: known keys, kinds, no twins)."""
    if not isinstance(raw, Mapping):
        raise ToolingError(
            f'{where}: [layout] roots must be tables, e.g. [layout.roots."prod"] state_prefix = "prod/"'
        )
    out: list[LiveRoot] = []
    for name, table in raw.items():
        here = f'[layout.roots."{name}"]'
        if not isinstance(table, Mapping):
            raise ToolingError(f'{where}: {here} must be a table, e.g. state_prefix = "{name}/"')
        refuse_unknown_keys(table, _ROOT_KEYS, here)
        path = _folder(name, where, f"{here}: the folder")
        prefix = table.get("state_prefix")
        if prefix is not None and (not isinstance(prefix, str) or not prefix.strip("/")):
            raise ToolingError(
                f'{where}: {here} state_prefix must be a key prefix, e.g. "{path.strip(".") or "prod"}/"'
            )
        executor = table.get("executor")
        if executor is not None and (not isinstance(executor, str) or not executor):
            raise ToolingError(
                f'{where}: {here} executor must be an executor\'s name, e.g. "hosted"'
            )
        may = table.get("may_depend_on", [])
        if isinstance(may, str):
            may = [may]
        if not isinstance(may, list) or not all(isinstance(x, str) and x for x in may):
            raise ToolingError(f"{where}: {here} may_depend_on must be a list of layer names")
        if may and executor is None:
            raise ToolingError(
                f"{where}: {here} may_depend_on needs executor: a root is a layer once it "
                'names where its units run (e.g. executor = "hosted")'
            )
        tier = table.get("tier")
        if tier is not None and (not isinstance(tier, str) or not tier.strip()):
            raise ToolingError(
                f'{where}: {here} tier must be a tier\'s name, e.g. "{path.split("/")[-1]}"'
            )
        if any(r.path == path for r in out):
            raise ToolingError(f"{where}: {here} names the folder {path!r} twice; keep one")
        out.append(
            LiveRoot(
                path,
                None if prefix is None else prefix.strip("/") + "/",
                executor,
                tuple(may),
                tier,
            )
        )
    return tuple(out)
