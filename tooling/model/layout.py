"""Where the units live in a repository, and what marks its root: ``policy.toml [layout]``.

Today's layout is the default (``live/`` holds the units, ``root.hcl`` marks
the root). A repository that adopts the tooling with another layout says so
once; ``invoke doctor`` reports what is missing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tooling.errors import ToolingError
from tooling.model.policyfile import POLICY_FILE, refuse_unknown_keys
from tooling.model.units import LIVE_DIR

ROOT_FILE = "root.hcl"


@dataclass(frozen=True)
class Layout:
    #: folders (relative to the root) whose ``terragrunt.hcl`` files are units; "." is all of it
    live: tuple[str, ...] = (LIVE_DIR,)
    #: the file at the repository root that every unit includes
    root_file: str = ROOT_FILE


def layout_from(policy: Mapping[str, Any], where: str = POLICY_FILE) -> Layout:
    """The ``[layout]`` table of a parsed policy.toml (missing keys: today's layout)."""
    table = policy.get("layout", {})
    if not isinstance(table, Mapping):
        raise ToolingError(f"{where}: [layout] must be a table")
    refuse_unknown_keys(table, ("live", "root_file"), "[layout]")
    live = table.get("live", [LIVE_DIR])
    if isinstance(live, str):
        live = [live]
    if not isinstance(live, list) or not live or not all(isinstance(x, str) and x for x in live):
        raise ToolingError(
            f'{where}: [layout] live must be a folder or a list of folders, e.g. ["live"]'
        )
    folders = []
    for folder in live:
        clean = folder.strip("/") or "."
        if clean.startswith("..") or folder.startswith("/"):
            raise ToolingError(
                f"{where}: [layout] live {folder!r} must be a folder inside the repository"
            )
        folders.append(clean)
    root_file = table.get("root_file", ROOT_FILE)
    if not isinstance(root_file, str) or not root_file or "/" in root_file:
        raise ToolingError(f'{where}: [layout] root_file must be a file name, e.g. "root.hcl"')
    return Layout(tuple(folders), root_file)
