"""Validate the tooling's JSON documents against the published schemas (``tooling/schemas/``).

Used by the ``invoke`` test helper (every ``units``/``affected``/``outdated
--json`` document a test produces), by an autouse fixture (every
``summary.json`` and ``apply.json`` a test leaves in its temporary folder) and
by ``test_schemas.py``.
"""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

SCHEMAS = Path(__file__).resolve().parent.parent / "tooling" / "schemas"
#: the documents with a schema: the name of a report-folder file, or the task of a --json document
KINDS = ("summary", "apply", "affected", "units", "outdated")
FOLDER_FILES = {"summary.json": "summary", "apply.json": "apply"}
JSON_TASKS = {
    "units": "units",
    "affected": "affected",
    "outdated": "outdated",
    "runners": "runners",
}


@cache
def validator(kind: str) -> Draft202012Validator:
    schema = json.loads((SCHEMAS / f"{kind}.schema.json").read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def problems(kind: str, doc: Any) -> list[str]:
    """Every way ``doc`` breaks the ``kind`` schema, as ``path: message`` lines."""
    return [
        f"{'/'.join(map(str, error.absolute_path)) or '(document)'}: {error.message}"
        for error in sorted(validator(kind).iter_errors(doc), key=lambda e: list(e.absolute_path))
    ]


def check(kind: str, doc: Any, where: str) -> None:
    found = problems(kind, doc)
    assert not found, f"{where} does not match tooling/schemas/{kind}.schema.json:\n" + "\n".join(
        found
    )


def check_folder(root: Path) -> int:
    """Validate every summary.json and apply.json under ``root``; return how many."""
    checked = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in (".terraform", ".terragrunt-cache", ".git")]
        for name in filenames:
            kind = FOLDER_FILES.get(name)
            if kind is None:
                continue
            path = Path(dirpath) / name
            try:
                doc = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue  # a test that broke the file on purpose
            if isinstance(doc, dict) and "units" in doc:
                check(kind, doc, str(path))
                checked += 1
    return checked


def summary_unit(path: str, status: str = "changes", **fields: Any) -> dict[str, Any]:
    """One unit of a summary.json as `invoke plan` writes it (every field its schema
    requires), with ``fields`` over it: what a test hands to a reader of plan folders."""
    from tooling.core.plan.results import Result
    from tooling.core.plan.status import Status

    unit = Result(
        path=path, tier="cloud", executor="hosted", change="modified", status=Status(status)
    ).to_json()
    return {**unit, "gate": {"decision": "auto", "reasons": []}, **fields}


def summary_doc(units: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    """A whole summary.json around ``units`` (see :func:`summary_unit`)."""
    doc = {"version": 1, "base": None, "head": None, "executor": None, "tools": {}, "units": units}
    return {**doc, **fields}


def apply_unit(path: str, result: str, **fields: Any) -> dict[str, Any]:
    """One unit of an apply.json as `invoke apply` writes it."""
    unit = {"path": path, "result": result, "reason": "", "cascaded": False, "gate": "auto"}
    return {**unit, "earlier": False, **fields}


def apply_doc(units: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    """A whole apply.json around ``units`` (see :func:`apply_unit`)."""
    doc = {
        "version": 2,
        "head": None,
        "plans_head": None,
        "approve_manual": False,
        "interrupted": False,
        "units": units,
        "runs": [],
    }
    return {**doc, **fields}
