"""A split executor's legs: plan one leg, merge the legs' reports.

``invoke plan --from-matrix M --leg ID`` plans the affected units the
matrix gave leg ID (:func:`plan_leg`); ``invoke report --merge DIR...`` combines
the legs' folders into one report (:func:`merge`); the workflows' report steps
merge each split executor's legs first (:func:`merge_matrix`). The checks are
:mod:`tooling.core.legs`; the split itself :mod:`tooling.core.shards`.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tooling.core import legs, report
from tooling.errors import ToolingError, UsageError
from tooling.io import outdir
from tooling.io.ui import say, show


def read_matrix(text: str) -> dict[str, Any]:
    """``--from-matrix``: the matrix JSON itself, or a file holding it."""
    raw = text.strip()
    source = "--from-matrix"
    if not raw.startswith("{"):
        path = Path(raw)
        try:
            raw = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(
                f"--from-matrix {text}: not JSON and not a readable file ({exc.strerror}): "
                "pass `invoke matrix`'s output or the file holding it"
            ) from None
        source = f"--from-matrix {path}"
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        raise UsageError(f"{source}: not JSON ({exc}): pass `invoke matrix`'s output") from None
    if isinstance(doc, dict) and isinstance(doc.get("units"), list) and "include" not in doc:
        doc = {"include": [doc]}  # one entry: the workflow's `toJSON(matrix)` of its own leg
    if not isinstance(doc, dict) or not isinstance(doc.get("include"), list):
        raise UsageError(f'{source}: no "include" list: pass `invoke matrix`\'s output')
    return doc


def _load(folder: Path) -> dict[str, Any]:
    path = folder / "summary.json"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ToolingError(
            f"{path}: not found: pass the folders the legs' `invoke plan --leg` wrote"
        ) from None
    except OSError as exc:
        raise ToolingError(f"{path}: cannot be read ({exc.strerror})") from None
    except ValueError as exc:
        raise ToolingError(f"{path}: not JSON ({exc}): the leg's folder is damaged") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("units"), list):
        raise ToolingError(f"{path}: not a summary.json (no units list)")
    return doc


def _plan_texts(folder: Path, units: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Each unit's plan text from its leg's folder (none for a file outside that folder:
    a damaged or hostile summary.json does not make the merge read other files)."""
    texts = {}
    for unit in units:
        rel = unit.get("text_file")
        if not isinstance(rel, str) or not rel:
            continue
        path = (folder / rel).resolve()
        if not path.is_relative_to(folder.resolve()):
            continue
        with contextlib.suppress(OSError):  # the report then points to the artifact
            texts[str(unit.get("path"))] = path.read_text(encoding="utf-8")
    return texts


def merge(root: Path, folders: Sequence[Path], out: Path) -> dict[str, Any]:
    """``invoke report --merge DIR... --out OUT``: the legs' reports as one in OUT
    (summary.json, comment.md, the unit folders), or a one-line refusal."""
    if not folders:
        raise UsageError("--merge needs the legs' plan folders")
    resolved = [f.resolve() for f in folders]
    if out.resolve() in resolved:
        raise UsageError(f"--out {out}: it is one of the folders to merge; name a new folder")
    docs = [(str(f), _load(f)) for f in folders]
    doc = legs.merged(docs)
    texts: dict[str, str] = {}
    with outdir.ReportDir.claim(out.resolve(), outdir.PLAN_LAYOUT, root=root) as folder:
        folder.reset()
        for (_, leg_doc), source in zip(docs, resolved, strict=True):
            texts.update(_plan_texts(source, leg_doc["units"]))
            for sub in ("units", "cascade"):
                if (source / sub).is_dir():
                    shutil.copytree(
                        source / sub, folder.path / sub, symlinks=True, dirs_exist_ok=True
                    )
        try:
            results = [legs.result_of(u, texts.get(str(u.get("path")))) for u in doc["units"]]
        except ValueError as exc:
            raise ToolingError(
                f"a leg's summary.json holds a unit that is not one: {exc}"
            ) from None
        comment = report.render(
            results,
            head=doc.get("head"),
            base=doc.get("base"),
            settings=doc.get("settings"),
            interrupted=bool(doc.get("interrupted")),
            plans_dir=None,
        )
        folder.write_text("comment.md", comment)
        # last: a folder with a summary.json is a whole merge, even after a kill
        folder.write_json("summary.json", doc)
        folder.job_summary(comment)
    show(report.table(results))
    say(
        f"merged {len(docs)} leg(s) ({', '.join(doc['legs'])}): {len(doc['units'])} unit(s) "
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
