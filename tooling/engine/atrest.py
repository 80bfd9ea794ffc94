"""Plans at rest: an apply whose plans are encrypted needs their key before it starts.

OpenTofu cannot read an encrypted plan without the key it was made with; without
it every unit would fail one by one. :func:`require_key` stops the apply first,
with one line naming the variable to set, before anything is written or applied
(the rule: :func:`tooling.core.encryption.missing_key`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

from tooling.core import encryption
from tooling.errors import ToolingError


def _plan_files(plans_dir: Path) -> Iterator[tuple[str, bytes]]:
    """(name, bytes) of each plan file summary.json lists; a summary or a file that cannot
    be read yields nothing here (the apply refuses it by name later)."""
    try:
        summary = json.loads((plans_dir / "summary.json").read_text())
    except (OSError, ValueError):
        return
    units = summary.get("units") if isinstance(summary, dict) else None
    for unit in units if isinstance(units, list) else []:
        name = unit.get("plan_file") if isinstance(unit, dict) else None
        if not isinstance(name, str) or unit.get("status") != "changes":
            continue
        path = plans_dir / name
        try:
            yield str(path), path.read_bytes()
        except OSError:
            continue


def require_key(plans_dir: Path, shown: str) -> None:
    """Refuse (one line) when a plan to apply in ``plans_dir`` is encrypted and its key
    is not in the environment; ``shown``: the folder as the user named it."""
    missing = encryption.missing_key(_plan_files(plans_dir), os.environ)
    if missing:
        raise ToolingError(encryption.refusal(missing[0], missing[1], shown))
