"""Report folders (`--out DIR`) are emptied before a run: never one that holds anything else."""

from __future__ import annotations

import shutil
from collections.abc import Collection
from pathlib import Path

from tooling.errors import UsageError


def reset(out_dir: Path, root: Path, expected: Collection[str], what: str) -> None:
    """Empty ``out_dir`` (or create it) for a new ``what`` report.

    Refuses, before deleting anything, a path that is not a folder, the
    repository or one of its parents, or a folder holding entries a ``what``
    report never writes: a mistyped ``--out`` must not delete someone's files.
    """
    if out_dir.exists():
        if not out_dir.is_dir() or out_dir == root or root.is_relative_to(out_dir):
            raise UsageError(f"--out {out_dir}: not a folder for the {what}; name a new or empty folder")
        foreign = sorted(p.name for p in out_dir.iterdir() if p.name not in expected)
        if foreign:
            raise UsageError(
                f"--out {out_dir} holds {', '.join(foreign[:3])}{' …' if len(foreign) > 3 else ''}, "
                f"which a {what} does not: it would be deleted. Name a new or empty folder."
            )
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
