"""The published JSON Schemas (``tooling/schemas/``) and the documents the tasks write.

Every document the other tests produce is validated too: the ``invoke`` helper
checks each ``units``/``affected``/``outdated --json`` output, and an autouse
fixture each ``summary.json``/``apply.json`` a test leaves in its temporary
folder (``tests/schema_check.py``). Here: the schemas are valid, a real plan,
apply and listing match them, and wrong documents fail.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import schema_check
from infra_fixtures import commit_all, edit, invoke

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("kind", schema_check.KINDS)
def test_each_schema_is_a_valid_draft_2020_12_schema_and_is_packaged(kind: str) -> None:
    schema_check.validator(kind)  # check_schema raises on an invalid schema
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert '"schemas/*.json"' in pyproject  # shipped with the package


def test_commands_md_names_every_schema() -> None:
    text = (REPO / "docs" / "commands.md").read_text(encoding="utf-8")
    for kind in schema_check.KINDS:
        assert f"tooling/schemas/{kind}.schema.json" in text


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory, tools: None) -> dict[str, Any]:
    """One of each document, written by the real tasks on the example repository."""
    from infra_fixtures import make_example_repo

    root = tmp_path_factory.mktemp("schemas")
    repo = make_example_repo(root / "infra")
    out = root / "plans"
    planned = invoke(repo, "plan", "--all", "--out", str(out))
    assert planned.returncode == 0, planned.output
    applied = invoke(repo, "apply", "--plans", str(out))
    assert applied.returncode == 0, applied.output
    edit(repo, "live/cloud/iam/terragrunt.hcl", "inputs = {", "inputs = {\n  # a change\n")
    commit_all(repo, "change iam")
    docs: dict[str, Any] = {
        "summary": json.loads((out / "summary.json").read_text()),
        "apply": json.loads((out / "apply.json").read_text()),
    }
    for task, extra in (("units", ()), ("affected", ("--base", "HEAD~1")), ("outdated", ())):
        ran = invoke(repo, task, *extra, "--json")
        assert ran.returncode == 0, ran.output
        docs[task] = json.loads(ran.stdout)
    return docs


@pytest.mark.parametrize("kind", schema_check.KINDS)
def test_the_documents_the_tasks_write_match_their_schemas(
    kind: str, documents: dict[str, Any]
) -> None:
    doc = documents[kind]
    assert doc["units"] if kind != "outdated" else doc["modules"]  # not an empty document
    assert schema_check.problems(kind, doc) == []


def _first_unit(doc: dict[str, Any]) -> dict[str, Any]:
    unit: dict[str, Any] = doc["units"][0]
    return unit


@pytest.mark.parametrize(
    ("kind", "break_it", "where"),
    [
        ("summary", lambda d: d.pop("tools"), "(document)"),
        ("summary", lambda d: _first_unit(d).update(status="fine"), "units/0/status"),
        ("summary", lambda d: _first_unit(d)["gate"].update(decision="maybe"), "units/0/gate"),
        ("summary", lambda d: _first_unit(d).update(mocked_dependencies="x"), "units/0"),
        ("summary", lambda d: _first_unit(d)["counts"].update(create=-1), "units/0/counts"),
        ("apply", lambda d: _first_unit(d).update(result="done"), "units/0/result"),
        ("apply", lambda d: d.update(version=1), "version"),
        ("affected", lambda d: d.update(base="main"), "base"),
        ("affected", lambda d: _first_unit(d).pop("reasons"), "units/0"),
        ("units", lambda d: _first_unit(d).update(dependencies="live/a"), "units/0"),
        ("outdated", lambda d: d["modules"][0].update(outdated="yes"), "modules/0/outdated"),
    ],
)
def test_a_wrong_document_fails_validation(
    kind: str, break_it: Any, where: str, documents: dict[str, Any]
) -> None:
    doc = copy.deepcopy(documents[kind])
    break_it(doc)
    found = schema_check.problems(kind, doc)
    assert found, f"the broken {kind} document passed validation"
    assert any(line.startswith(where) for line in found), found
    with pytest.raises(AssertionError, match=f"does not match tooling/schemas/{kind}"):
        schema_check.check(kind, doc, "the broken document")


def test_every_unit_of_a_real_summary_reads_back_to_the_same_document(
    documents: dict[str, Any],
) -> None:
    """:meth:`Result.from_json` is the inverse of ``to_json`` on what ``invoke plan`` wrote."""
    from tooling.core.plan.results import Result

    units = documents["summary"]["units"]
    assert units
    for unit in units:
        assert Result.from_json(unit).to_json() == unit, unit["path"]
