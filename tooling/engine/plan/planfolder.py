"""A plan folder's two documents: the one reader and the one writer of each.

- ``summary.json`` (:class:`~tooling.core.plan.summary.Summary`): written once by the plan
  operation (``invoke plan``, ``invoke app-plan``) or the merge of a split executor's
  legs (:func:`write_summary`); read back by ``invoke apply``, ``invoke app-apply``, the
  merge, ``--reviewed``, ``--timings`` and the workflows' steps (:func:`read_summary`).
- ``apply.json`` (:class:`~tooling.core.apply.record.ApplyRecord`): written after every unit
  an apply settles (:func:`write_record`); read back by the next apply of the folder
  and by the workflows' steps (:func:`read_record`).

A folder read back may come from anywhere (an artifact another job uploaded): each
reader goes through :mod:`tooling.io.artifacts` (a regular file, a size limit, the
JSON schema) before the typed value is built, and refuses in one line naming the file.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from tooling.core.apply.record import ApplyRecord
from tooling.core.plan.results import Result, with_gates
from tooling.core.plan.summary import LegRecord, PlannedAgainst, Summary, Worktree
from tooling.errors import ToolingError
from tooling.io import artifacts, outdir
from tooling.io.config import Settings
from tooling.model.policy import GatePolicy

SUMMARY = "summary.json"
RECORD = "apply.json"


def read_summary(
    path: Path, kind: artifacts.Kind = artifacts.SUMMARY, *, source: str | None = None
) -> Summary:
    """The summary.json at ``path``, checked as ``kind`` (a leg's, or any plan folder's),
    as a :class:`Summary`; one-line :class:`ToolingError` otherwise. ``source`` names the
    file in a message (default: ``path``)."""
    doc = artifacts.read(path, kind, source=source)
    try:
        return Summary.from_json(doc)
    except ValueError as exc:
        raise ToolingError(f"{source or path}: {kind.what} refused: {exc}: {kind.fix}") from None


def write_summary(folder: Path, summary: Summary) -> Path:
    """Write ``summary`` as ``folder``/summary.json (atomically, its values redacted)."""
    return outdir.write_json(folder / SUMMARY, summary.to_json())


def read_record(path: Path) -> ApplyRecord:
    """The apply record at ``path`` as an :class:`ApplyRecord`, checked first (see the
    module's docstring); one-line :class:`ToolingError` otherwise."""
    kind = artifacts.APPLY_RECORD
    doc = artifacts.read(path, kind)
    try:
        return ApplyRecord.from_json(doc)
    except ValueError as exc:
        raise ToolingError(f"{path}: {kind.what} refused: {exc}: {kind.fix}") from None


def write_record(folder: Path, record: ApplyRecord) -> Path:
    """Write ``record`` as ``folder``/apply.json (atomically, its values redacted)."""
    return outdir.write_json(folder / RECORD, record.to_json())


def earlier_record(plans_dir: Path, summary: Summary) -> ApplyRecord | None:
    """The folder's earlier apply record (None when there is none): merged into, never
    overwritten. Refused when it is unreadable or belongs to other plans."""
    path = plans_dir / RECORD
    if not path.is_file():
        return None
    # the record of earlier applies from this folder: restored from an artifact, not deleted
    record = read_record(path)
    if record.plans_head not in (None, summary.head):
        raise ToolingError(
            f"{path}: this record belongs to plans made at {str(record.plans_head)[:12]}, the "
            f"folder's summary.json to {str(summary.head)[:12]}: one folder, one set of plans"
        )
    return record


def summary_of(
    results: Iterable[Result],
    *,
    base: str | None,
    head: str | None,
    executor: str | None,
    root: Path,
    policy: GatePolicy,
    settings: Settings | None = None,
    interrupted: bool = False,
    worktree: Worktree | None = None,
    planned_at: datetime | None = None,
    leg: LegRecord | None = None,
) -> Summary:
    """A plan run's summary: its revisions and the tools pinned in ``root``, whether the
    tree was dirty (``worktree``), and per unit its result with its gate (decided here
    under ``policy`` for a result that has none yet); ``leg``: the leg of a split matrix
    the folder holds."""
    from tooling.io import toolchain

    return Summary(
        head=head,
        units=tuple(with_gates(list(results), policy)),
        base=base,
        executor=executor,
        tools={tool.name: version for tool, version in toolchain.read_pins(root)},
        interrupted=interrupted,
        # when the run started (before the first plan): an apply refuses plans older than
        # [apply] max_plan_age from it (tooling.core.apply.age)
        planned_at=(planned_at or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        worktree=worktree,
        settings=PlannedAgainst.from_json(settings.to_json()) if settings is not None else None,
        leg=leg,
    )
