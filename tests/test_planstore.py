"""The plan-file store (:mod:`tooling.engine.plan.store`): the one owner of stored plans.

A scan of the package (ast) shows no other module builds a plan file's path: no
``.tfplan`` name, no store constant, no path joined from a summary's ``plan_file``.
The store's own functions run on real files in a temporary folder.
"""

from __future__ import annotations

import ast
import hashlib
import json
from pathlib import Path

import pytest
from infra_fixtures import encrypted_envelope
from schema_check import summary_doc, summary_unit

from tooling.engine.plan import store
from tooling.errors import ToolingError

PACKAGE = Path(__file__).resolve().parent.parent / "tooling"
#: the store, and the thin wrapper of Terragrunt, which names the file it writes
OWNERS = {"tooling/engine/plan/store.py", "tooling/io/terragrunt.py"}
#: the plan folder's layout names the files a folder may hold (the report folder's own
#: module, io/outdir.py, which planstore sits above); it builds no plan path
LAYOUT = "tooling/io/outdir.py"
_NAMES = {"PLAN_NAME", "WRITTEN_NAME"}


def _is_plan_file_field(node: ast.AST) -> bool:
    """``x.plan_file``, ``x["plan_file"]``, ``x.get("plan_file")``, or ``str()`` of one."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str":
        return any(_is_plan_file_field(a) for a in node.args)
    if isinstance(node, ast.Attribute):
        return node.attr == "plan_file"
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "plan_file"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr == "get" and any(
            isinstance(a, ast.Constant) and a.value == "plan_file" for a in node.args
        )
    return False


def plan_paths_built(name: str, source: str) -> list[str]:
    """``file:line: what`` for each place ``source`` builds a plan file's path."""
    found: list[str] = []
    in_layout = set()
    tree = ast.parse(source)
    if name == LAYOUT:
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "frozenset"
            ):
                in_layout |= {id(n) for n in ast.walk(node)}
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and ".tfplan" in node.value
            and id(node) not in in_layout
        ):
            found.append(f"{name}:{line}: a plan file name {node.value!r}")
        elif isinstance(node, ast.Name | ast.Attribute) and (
            (node.id if isinstance(node, ast.Name) else node.attr) in _NAMES
        ):
            found.append(f"{name}:{line}: the store's file name")
        elif (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Div)
            and _is_plan_file_field(node.right)
        ):
            found.append(f"{name}:{line}: a path joined from a summary's plan_file")
    return found


def test_no_module_but_the_store_builds_a_plan_file_path() -> None:
    found: list[str] = []
    scanned = 0
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE.parent).as_posix()
        if name in OWNERS:
            continue
        scanned += 1
        found += plan_paths_built(name, path.read_text(encoding="utf-8"))
    assert scanned > 100
    assert found == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('p = out / "units" / path / "plan.tfplan"\n', ["x.py:1: a plan file name 'plan.tfplan'"]),
        ('p = f"{name}.tfplan"\n', ["x.py:1: a plan file name '.tfplan'"]),
        ("\np = udir / PLAN_NAME\n", ["x.py:2: the store's file name"]),
        ("p = udir / planstore.WRITTEN_NAME\n", ["x.py:1: the store's file name"]),
        (
            "p = self.dir / str(unit.plan_file)\n",
            ["x.py:1: a path joined from a summary's plan_file"],
        ),
        (
            'p = d / unit.get("plan_file")\n',
            ["x.py:1: a path joined from a summary's plan_file"],
        ),
        ('p = d / unit["plan_file"]\n', ["x.py:1: a path joined from a summary's plan_file"]),
        ("p = planstore.stored(d, unit.plan_file)\n", []),
        ('LAYOUT = frozenset({"plan.tfplan"})\n', ["x.py:1: a plan file name 'plan.tfplan'"]),
    ],
)
def test_the_scan_names_each_way_of_building_a_plan_path(source: str, expected: list[str]) -> None:
    assert plan_paths_built("x.py", source) == expected


def test_the_layouts_names_are_not_paths_but_a_path_beside_them_is() -> None:
    source = 'LAYOUT = frozenset({"plan.tfplan"})\np = d / "plan.tfplan"\n'
    assert plan_paths_built(LAYOUT, source) == [f"{LAYOUT}:2: a plan file name 'plan.tfplan'"]


def test_a_units_plan_lives_in_its_folder_of_the_plan_folder(tmp_path: Path) -> None:
    assert store.unit_dir(tmp_path, "live/cloud/dns") == tmp_path / "units/live/cloud/dns"
    assert store.plan_path(tmp_path, "live/cloud/dns") == (
        tmp_path / "units/live/cloud/dns/plan.tfplan"
    )
    assert store.stored(tmp_path, "units/live/cloud/dns/plan.tfplan") == (
        store.plan_path(tmp_path, "live/cloud/dns")
    )
    assert store.private_plan(tmp_path, "adopt") == tmp_path / "adopt.tfplan"


def test_a_written_plan_is_kept_under_the_units_name_and_a_missing_one_refused(
    tmp_path: Path,
) -> None:
    udir = store.unit_dir(tmp_path, "live/a")
    udir.mkdir(parents=True)
    with pytest.raises(ToolingError, match="wrote no plan file"):
        store.keep_written(udir)
    (udir / store.WRITTEN_NAME).write_bytes(b"PK\x03\x04plan")
    kept = store.keep_written(udir)
    assert kept == store.plan_path(tmp_path, "live/a")
    assert kept.read_bytes() == b"PK\x03\x04plan"
    assert not (udir / store.WRITTEN_NAME).exists()


def test_the_digest_binds_the_file_and_a_missing_file_has_none(tmp_path: Path) -> None:
    plan = tmp_path / "p.tfplan"
    assert store.digest(plan) is None
    body = b"x" * (3 << 20)  # more than one read
    plan.write_bytes(body)
    assert store.digest(plan) == hashlib.sha256(body).hexdigest()
    assert store.sha256_file(plan) == hashlib.sha256(body).hexdigest()
    store.discard(plan)
    assert not plan.exists()
    store.discard(plan)  # already gone: nothing to do


def test_an_encrypted_plan_without_its_key_stops_the_apply_naming_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tooling.model import encryption as contract

    plan = store.plan_path(tmp_path, "live/a")
    plan.parent.mkdir(parents=True)
    plan.write_bytes(encrypted_envelope("pbkdf2"))
    unit = summary_unit("live/a", "changes", plan_file="units/live/a/plan.tfplan")
    (tmp_path / "summary.json").write_text(json.dumps(summary_doc([unit])))
    monkeypatch.delenv(contract.PASSPHRASE_ENV, raising=False)
    with pytest.raises(ToolingError, match=contract.PASSPHRASE_ENV) as refused:
        store.require_key(tmp_path, "plans")
    assert "\n" not in str(refused.value)
    monkeypatch.setenv(contract.PASSPHRASE_ENV, "a passphrase long enough")
    store.require_key(tmp_path, "plans")  # the key is set: the apply may start
    monkeypatch.delenv(contract.PASSPHRASE_ENV)
    unit["status"] = "no-changes"  # nothing to apply: its key is not needed
    (tmp_path / "summary.json").write_text(json.dumps(summary_doc([unit])))
    store.require_key(tmp_path, "plans")


# --------------------------------------------------------------------------- show, rewritten copy


@pytest.fixture
def planned(tmp_path: Path, tools: None) -> tuple[Path, Path]:
    """A real OpenTofu working copy and its saved plan."""
    from tooling.io import proc

    work = tmp_path / "work"
    work.mkdir()
    (work / "main.tf").write_text('resource "terraform_data" "a" {}\n')
    proc.run(["tofu", "init", "-input=false"], cwd=work)
    plan = tmp_path / "p.tfplan"
    proc.run(["tofu", "plan", "-input=false", f"-out={plan}"], cwd=work)
    return work, plan


def _rewritten(work: Path) -> None:
    """main.tf gone while OpenTofu reads the copy (a link to nothing), as a rewrite does."""
    (work / "main.tf").rename(work / "main.tf.kept")
    (work / "main.tf").symlink_to(work / "nowhere")


@pytest.mark.e2e
def test_a_show_of_a_copy_rewritten_meanwhile_is_asked_again_and_reads_the_plan(
    planned: tuple[Path, Path],
) -> None:
    import threading

    work, plan = planned
    _rewritten(work)

    def restore() -> None:
        (work / "main.tf").unlink()
        (work / "main.tf.kept").rename(work / "main.tf")

    timer = threading.Timer(0.15, restore)  # the rewrite ends while the first show fails
    timer.start()
    try:
        shown = store.show_in(work, plan, {})
    finally:
        timer.join()
    assert shown["resource_changes"][0]["address"] == "terraform_data.a"


@pytest.mark.e2e
def test_a_copy_that_stays_unreadable_fails_after_the_last_attempt(
    planned: tuple[Path, Path], capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    work, plan = planned
    _rewritten(work)
    monkeypatch.setenv("IAC_ECHO_COMMANDS", "1")
    with pytest.raises(ToolingError, match=store.REWRITTEN_WHILE_READ):
        store.show_in(work, plan, {})
    echoed = [
        line for line in capfd.readouterr().err.splitlines() if line.startswith("+ tofu show")
    ]
    assert len(echoed) == store.SHOW_ATTEMPTS


@pytest.mark.e2e
def test_any_other_show_failure_is_not_asked_again(
    planned: tuple[Path, Path], capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    work, plan = planned
    plan.write_bytes(b"not a plan")
    monkeypatch.setenv("IAC_ECHO_COMMANDS", "1")
    with pytest.raises(ToolingError) as failed:
        store.show_in(work, plan, {})
    assert store.REWRITTEN_WHILE_READ not in str(failed.value)
    echoed = [
        line for line in capfd.readouterr().err.splitlines() if line.startswith("+ tofu show")
    ]
    assert len(echoed) == 1
