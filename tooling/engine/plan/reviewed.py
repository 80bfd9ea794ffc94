"""The pull request's reviewed plans (``--reviewed PR_DIR``), compared with a new plan.

``PR_DIR`` is an artifact of another run (the pull request's plan, or the merge
group's): untrusted. It is one plan folder (``summary.json`` and ``units/``) or a
folder of plan folders, one per leg, as ``download-artifact`` writes them
(``PR_DIR/plan-hosted/summary.json``, ...). Each unit is looked up by its path:

- every ``summary.json`` is read by :func:`tooling.engine.plan.planfolder.read_summary` (a regular
  file, within its size limit and schema);
- a unit's reviewed plan must be at its own place (:func:`planstore.plan_path`),
  every folder on the way a real folder, never a symlink; its bytes are read once
  (``O_NOFOLLOW``), their SHA-256 checked against the summary's ``plan_sha256``,
  and that very copy, in a private temporary folder, is what OpenTofu reads;
- ``tofu show -json`` of it runs in the unit's initialised working copy (the one
  the new plan was read in): OpenTofu reads the configuration the plan file
  carries, and the providers of the working copy; it is summarised with
  :func:`tooling.core.plan.planjson.summarize` and compared by
  :func:`tooling.core.apply.approval.reviewed_differences` (addresses, actions, import,
  move, value digests, outputs).

A unit the pull request did not plan, planned twice (two legs), or whose reviewed
plan cannot be found, verified or read, counts as different, and the reason says
which. Nothing here raises for one unit: the answer is a list of differences.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from tooling.core.apply.approval import reviewed_differences
from tooling.core.plan.planjson import COUNT_KEYS, PlanSummary, summarize
from tooling.core.plan.results import Result
from tooling.core.plan.status import Status
from tooling.engine.plan import planfolder, store
from tooling.errors import ToolingError

#: the most bytes a reviewed plan file may hold (a plan of thousands of resources is far less)
PLAN_LIMIT = 1024 * 1024 * 1024


@dataclass(frozen=True)
class _Entry:
    folder: Path  # the plan folder (PR_DIR or one of its legs)
    unit: Result  # the unit as its summary.json records it


def _is_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


class ReviewedPlans:
    """The reviewed plans of ``folder`` (read once, see the module's docstring)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder.resolve()
        if not self.folder.is_dir():
            raise ToolingError(
                f"--reviewed {folder}: not a folder; pass the pull request's plan folder "
                "(its downloaded plan artifact, or a folder of them)"
            )
        self.entries: dict[str, list[_Entry]] = {}
        #: plan folders whose summary.json was refused: (folder, why)
        self.refused: list[str] = []
        for plan_folder in self._plan_folders():
            try:
                summary = planfolder.read_summary(plan_folder / planfolder.SUMMARY)
            except ToolingError as exc:
                self.refused.append(str(exc))
                continue
            for unit in summary.units:
                self.entries.setdefault(unit.path, []).append(_Entry(plan_folder, unit))

    def _plan_folders(self) -> list[Path]:
        if (self.folder / "summary.json").exists() or (self.folder / "summary.json").is_symlink():
            return [self.folder]
        return sorted(
            p for p in self.folder.iterdir() if _is_dir(p) and os.path.lexists(p / "summary.json")
        )

    def differences(
        self, path: str, fresh: PlanSummary, run_dir: Path, env: Mapping[str, str]
    ) -> list[str]:
        """What the new plan of unit ``path`` (``fresh``) does otherwise than the pull
        request's reviewed plan; empty when it is the same plan. ``run_dir``: the unit's
        initialised working copy, where the reviewed plan is read."""
        found = self.entries.get(path, [])
        if not found:
            why = "the pull request did not plan this unit"
            if self.refused:
                why += f" (a plan folder was refused: {self.refused[0]})"
            return [why]
        if len(found) > 1:
            return [
                f"the reviewed plans hold this unit {len(found)} times (legs {self._legs(found)})"
            ]
        entry = found[0]
        if entry.unit.status == Status.NO_CHANGES:
            reviewed = PlanSummary(dict.fromkeys(COUNT_KEYS, 0))
        elif entry.unit.status != Status.CHANGES:
            return [f"the pull request's plan of this unit did not succeed ({entry.unit.status})"]
        else:
            try:
                reviewed = self._summary(path, entry, run_dir, env)
            except ToolingError as exc:
                return [f"its reviewed plan cannot be used: {exc}"]
            except ValueError as exc:
                return [f"its reviewed plan cannot be used: unreadable plan JSON ({exc})"]
        return reviewed_differences(reviewed, fresh)

    def _legs(self, found: list[_Entry]) -> str:
        return ", ".join(e.folder.name for e in found)

    def _summary(
        self, path: str, entry: _Entry, run_dir: Path, env: Mapping[str, str]
    ) -> PlanSummary:
        expected = store.plan_path(Path(), path).as_posix()
        parts = PurePosixPath(path).parts
        plan_file, plan_sha256 = entry.unit.plan_file, entry.unit.plan_sha256
        if PurePosixPath(path).is_absolute() or ".." in parts or plan_file != expected:
            raise ToolingError(f"summary.json names {plan_file!r}, not the unit's own {expected}")
        if not plan_sha256:
            raise ToolingError("summary.json records no SHA-256 of the plan")
        data = _read_within(entry.folder, PurePosixPath(expected))
        if hashlib.sha256(data).hexdigest() != plan_sha256:
            raise ToolingError(
                f"{expected}: its SHA-256 is not the one summary.json records (altered or swapped)"
            )
        with tempfile.TemporaryDirectory(prefix="iac-reviewed-") as scratch:
            copy = store.private_plan(Path(scratch), "reviewed")
            copy.write_bytes(data)
            shown: dict[str, Any] = store.show(run_dir, copy, env)
        return summarize(shown)


def _read_within(folder: Path, rel: PurePosixPath) -> bytes:
    """The bytes of ``folder/rel``, every folder on the way a real folder and the file a
    regular file (no symlink anywhere), at most :data:`PLAN_LIMIT` bytes."""
    here = folder
    for name in rel.parts[:-1]:
        here = here / name
        if not _is_dir(here):
            raise ToolingError(f"{rel}: {here.name} is not a folder (a symlink, or missing)")
    target = here / rel.parts[-1]
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise ToolingError(f"{rel}: cannot be read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ToolingError(f"{rel}: not a regular file")
        if info.st_size > PLAN_LIMIT:
            raise ToolingError(f"{rel}: larger than {PLAN_LIMIT // (1024 * 1024)} MiB")
        return fh.read(PLAN_LIMIT + 1)
