"""The ``[layout]`` a repository's files suggest, for ``invoke doctor`` to print. Pure.

From the list of a repository's files (paths relative to its root): the live
folders are the top-level folders holding a ``terragrunt.hcl`` below them, the
root file is the first of ``root.hcl``, a root ``terragrunt.hcl`` (the legacy
root, which Terragrunt advises renaming) or another top-level ``.hcl`` file
units include by name. Only the keys policy.toml ``[layout]`` knows today are
written (``live``, ``root_file``); the tiers each unit gets are a comment.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tooling.model.layout import ROOT_FILE
from tooling.model.units import UNIT_FILE


@dataclass(frozen=True)
class Suggestion:
    live: tuple[str, ...]
    #: None: no candidate at the root (the file must be created)
    root_file: str | None
    #: tier -> number of units, as the model assigns them (``tier`` local, else the folder)
    tiers: tuple[tuple[str, int], ...] = ()

    def toml(self) -> str:
        """The ``[layout]`` table, ready to paste into policy.toml."""
        lines = [
            "[layout]",
            f"live = {json.dumps(list(self.live))}",
            f"root_file = {json.dumps(self.root_file or ROOT_FILE)}",
        ]
        if self.root_file is None:
            lines[-1] += "  # create it at the root: units include it"
        if self.tiers:
            found = ", ".join(f"{tier} ({n})" for tier, n in self.tiers)
            lines.append(f"# tiers (units): {found}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, object]:
        return {
            "live": list(self.live),
            "root_file": self.root_file or ROOT_FILE,
            "tiers": dict(self.tiers),
            "toml": self.toml(),
        }


def live_folders(files: Iterable[str]) -> tuple[str, ...]:
    """The top-level folders holding a unit (a ``terragrunt.hcl`` below them), sorted."""
    found = set()
    for path in files:
        parts = path.split("/")
        if len(parts) >= 2 and parts[-1] == UNIT_FILE:
            found.add(parts[0])
    return tuple(sorted(found))


def root_file(files: Iterable[str], included: Iterable[str] = ()) -> str | None:
    """The root file: ``root.hcl``, else a root ``terragrunt.hcl``, else the top-level
    ``.hcl`` file the units include by name (``included``: names passed to
    ``find_in_parent_folders``), else None."""
    top = {p for p in files if "/" not in p}
    if ROOT_FILE in top:
        return ROOT_FILE
    if UNIT_FILE in top:
        return UNIT_FILE
    for name in sorted(set(included)):
        if name in top and name.endswith(".hcl"):
            return name
    return None


def suggest(
    files: Iterable[str], included: Iterable[str] = (), tiers: Mapping[str, int] | None = None
) -> Suggestion:
    listed = list(files)
    return Suggestion(
        live_folders(listed),
        root_file(listed, included),
        tuple(sorted((tiers or {}).items())),
    )
