"""A split executor's legs: plan one leg, merge the legs' reports.

``invoke plan --from-matrix M --leg ID`` plans the affected units the
matrix gave leg ID (:func:`plan_leg`); ``invoke report --merge DIR...`` combines
the legs' folders into one report (:func:`merge`); the workflows' report steps
merge each split executor's legs first (:func:`merge_matrix`). The checks are
:mod:`tooling.core.ci.legs`; the split itself :mod:`tooling.core.ci.split`. Every
document read back goes through :mod:`tooling.io.artifacts` first (a leg's summary.json
by :func:`tooling.engine.plan.planfolder.read_summary`, which types it).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from tooling.core.ci import legs
from tooling.core.plan.results import Result
from tooling.core.plan.summary import Summary
from tooling.core.report.comment import render, table
from tooling.engine.plan import planfolder
from tooling.errors import ToolingError, UsageError
from tooling.io import artifacts, outdir
from tooling.io.ui import say, show
from tooling.model.policy import MAX_LEGS

#: the most files and folders the merge walks in one leg's folder: 20,000 units (the most a
#: summary.json lists), each with its folders and its few files
MAX_PLACES = 200_000
#: the most bytes of one unit's plan text the merged comment reads (the comment shows less)
MAX_TEXT = 8 * 1024 * 1024
#: the most units a summary.json lists (its schema's maxItems), the merged one too
MAX_UNITS = 20_000
#: a leg folder's folders the merge copies into the merged report
COPIED = ("units", "cascade")


def read_matrix(text: str) -> dict[str, Any]:
    """``--from-matrix``: the matrix JSON itself, or a file holding it, checked against the
    matrix's schema (:data:`tooling.io.artifacts.MATRIX`); one entry alone (the workflow's
    ``toJSON(matrix)`` of its own leg) is a matrix of that entry."""
    raw = text.strip()
    if raw.startswith("{"):
        doc = artifacts.parse(raw, artifacts.MATRIX, source="--from-matrix")
    else:
        path = Path(raw)
        if not os.path.lexists(path):
            raise UsageError(
                f"--from-matrix {text}: not JSON and not a readable file (no such file): "
                "pass `invoke matrix`'s output or the file holding it"
            )
        doc = artifacts.read(path, artifacts.MATRIX, source=f"--from-matrix {path}")
    if "include" not in doc:
        doc = {"include": [doc]}
    return dict(doc)


def _load_all(folders: Sequence[Path]) -> list[tuple[str, Summary]]:
    """Each leg's summary.json, read one after the other; refused as soon as they hold more
    together than the merged summary.json may (its size limit, its 20,000 units), so
    256 legs at their limit are never all held in memory."""
    docs: list[tuple[str, Summary]] = []
    size = units = 0
    for folder in folders:
        with contextlib.suppress(OSError):  # a missing file is refused by the reader
            size += (folder / planfolder.SUMMARY).lstat().st_size
        doc = planfolder.read_summary(folder / planfolder.SUMMARY, artifacts.LEG_SUMMARY)
        units += len(doc.units)
        if size > artifacts.SUMMARY.limit or units > MAX_UNITS:
            raise ToolingError(
                f"{folder}: the legs up to this one hold more than one summary.json may "
                f"({artifacts.SUMMARY.limit // artifacts.MiB} MiB, {MAX_UNITS} units): "
                "merge the legs of one matrix"
            )
        docs.append((str(folder), doc))
    return docs


def _owned_files(name: str, folder: Path, doc: Summary) -> list[str]:
    """The files the merge copies from the leg ``folder``: every regular file of its units'
    folders, checked (:func:`tooling.core.ci.legs.files_to_copy`) before anything is written."""
    owned = {u.path for u in doc.units}
    return legs.files_to_copy(name, owned, outdir.listing(folder, COPIED, MAX_PLACES))


def _plan_texts(folder: Path, units: Sequence[Result], files: Collection[str]) -> dict[str, str]:
    """Each unit's plan text from its leg's folder: only a file of the unit's own folder
    that the merge checked and copies (``files``), at most :data:`MAX_TEXT` bytes; a
    damaged or hostile summary.json does not make the merge read any other file."""
    texts = {}
    for unit in units:
        rel, path = unit.text_file, unit.path
        if rel is None or rel not in files or legs.unit_of_file(rel) != path:
            continue
        # unreadable, too large or not UTF-8: the report then points to the artifact
        with contextlib.suppress(OSError, UnicodeDecodeError):
            fd = os.open(folder / rel, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as fh:
                data = fh.read(MAX_TEXT + 1)
            if len(data) <= MAX_TEXT:
                texts[path] = data.decode("utf-8")
    return texts


def _out_refusal(out: Path, sources: Sequence[Path]) -> str | None:
    """Why ``--out`` cannot hold the merge of ``sources`` (resolved): it is one of them,
    inside one, or holds one (the copy would copy itself, or empty a leg's folder)."""
    target = out.resolve()
    for source in sources:
        if target == source:
            return f"it is the leg folder {source}"
        if target.is_relative_to(source):
            return f"it is inside the leg folder {source}"
        if source.is_relative_to(target):
            return f"it holds the leg folder {source}"
    return None


def merge(root: Path, folders: Sequence[Path], out: Path) -> Summary:
    """``invoke report --merge DIR... --out OUT``: the legs' reports as one in OUT
    (summary.json, comment.md, the unit folders), or a one-line refusal. Every leg is
    read and checked before OUT is touched."""
    if not folders:
        raise UsageError("--merge needs the legs' plan folders")
    if len(folders) > MAX_LEGS:
        raise UsageError(
            f"--merge: {len(folders)} folders, more legs than one matrix holds ({MAX_LEGS}): "
            "merge the legs of one matrix"
        )
    resolved = [f.resolve() for f in folders]
    why = _out_refusal(out, resolved)
    if why:
        raise UsageError(f"--out {out}: {why}; name a new folder outside the legs' folders")
    docs = _load_all(folders)
    doc = legs.merged(docs)
    copies: list[tuple[Path, list[str]]] = []
    texts: dict[str, str] = {}
    for (name, leg_doc), source in zip(docs, resolved, strict=True):
        files = _owned_files(name, source, leg_doc)
        copies.append((source, files))
        texts.update(_plan_texts(source, leg_doc.units, frozenset(files)))
    # the report renders each unit with its plan text as the leg wrote it
    results = [replace(u, plan_text=texts.get(u.path)) for u in doc.units]
    comment = render(
        results,
        head=doc.head,
        base=doc.base,
        settings=doc.settings,
        interrupted=doc.interrupted,
        plans_dir=None,
    )
    # every leg checked: only now is OUT claimed and emptied
    with outdir.ReportDir.claim(out.resolve(), outdir.PLAN_LAYOUT, root=root) as folder:
        folder.reset()
        for source, files in copies:
            for rel in files:
                outdir.copy_regular(source / rel, folder.path / rel)
        folder.write_text("comment.md", comment)
        # last: a folder with a summary.json is a whole merge, even after a kill
        planfolder.write_summary(folder.path, doc)
        folder.job_summary(comment)
    show(table(results))
    say(
        f"merged {len(docs)} leg(s) ({', '.join(doc.legs or ())}): {len(doc.units)} unit(s) "
        f"into {out / 'summary.json'} and {out / 'comment.md'}"
    )
    return doc


def merge_matrix(root: Path, plans: Path, matrix: Mapping[str, Any]) -> list[str]:
    """Before the workflows' report steps: each split executor's ``plan-<leg>`` folders
    under ``plans`` merged into ``plan-<executor>``. A leg missing or refused leaves the
    executor without a report (the report says it did not finish), with the reason as
    an error line; the other executors go on. Returns the executors merged."""
    by_executor: dict[str, list[str]] = {}
    for entry in matrix.get("include") or ():
        if isinstance(entry, Mapping) and entry.get("leg"):
            by_executor.setdefault(str(entry.get("executor")), []).append(str(entry["leg"]))
    done = []
    for executor, ids in by_executor.items():
        try:
            folders = [plans / f"plan-{leg}" for leg in ids]
            merge(root, folders, plans / f"plan-{executor}")
            done.append(executor)
        except ToolingError as exc:
            say(f"::error::executor {executor}: its legs cannot be merged: {exc}")
    return done
