"""No task generates a stack from files that were not scanned first, and a stack fetches
only from the repository or from a pinned, allowed module repository: with the real
pinned tools (``terragrunt stack generate``, plans).

The findings behind these tests: ``run_cmd`` in a ``terragrunt.stack.hcl`` ran when
``invoke units`` (and the plan's generation) generated the stack, before the scan that
says "before any Terragrunt process starts"; and a stack ``unit "w" { source =
"/tmp/catalog/evil" }`` whose ``terragrunt.hcl`` calls ``run_cmd`` passed ``check``, was
generated and planned with gate auto, and its command ran.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from infra_fixtures import commit_all, invoke, read_summary, units_by_path

pytestmark = pytest.mark.e2e

STACK_FILE = "live/cloud/apps/terragrunt.stack.hcl"
PUBLIC = "live/cloud/apps/.terragrunt-stack/public"
CATALOG = "catalog/units/zone"

CATALOG_UNIT = """include "root" {
  path = find_in_parent_folders("root.hcl")
}

include "tier" {
  path   = find_in_parent_folders("tier.hcl")
  expose = true
}

terraform {
  source = "git::https://git.example.com/platform-modules/terraform-cloudflare-dns.git?ref=v1.1.0"
}

inputs = {
  zone_name = values.zone
  records   = {}
}
"""


def _stack(source: str, before: str = "", block: str = "unit", name: str = "public") -> str:
    return (
        f'{before}{block} "{name}" {{\n  source = "{source}"\n  path   = "{name}"\n'
        '  values = {\n    zone = "apps.example.net"\n  }\n}\n'
    )


def _calling(marker: Path) -> str:
    return f'locals {{\n  who = run_cmd("sh", "-c", "echo ran >> {marker}; echo x")\n}}\n'


def _write(repo: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)


@pytest.fixture
def repo(example_repo: Path) -> Path:
    _write(example_repo, {f"{CATALOG}/terragrunt.hcl": CATALOG_UNIT})
    return example_repo


READERS = {
    "units": ("units", "--json"),
    "graph": ("graph",),
    "affected": ("affected", "--uncommitted", "--json"),
    "matrix": ("matrix",),
}


# --------------------------------------------------------------------------- finding 2


@pytest.mark.parametrize("args", list(READERS.values()), ids=list(READERS))
def test_a_command_in_a_stack_file_never_runs_when_a_task_reads_the_units(
    repo: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    marker = tmp_path / "ran.txt"
    _write(repo, {STACK_FILE: _stack(f"../../../{CATALOG}", before=_calling(marker))})
    commit_all(repo, "a stack file that runs a command")
    ran = invoke(repo, *args)
    assert "Traceback" not in ran.output
    assert not marker.exists(), "terragrunt stack generate parsed the stack file"
    if args[0] == "units":
        assert ran.returncode == 1
        unit = next(u for u in json.loads(ran.stdout)["units"] if u["path"] == PUBLIC)
        assert f"not generated: {STACK_FILE} breaks a rule" in unit["error"]
        assert f"{STACK_FILE}:2: run-at-parse: run_cmd()" in unit["error"]


def test_check_and_the_plan_refuse_a_command_in_a_stack_file(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    _write(repo, {STACK_FILE: _stack(f"../../../{CATALOG}", before=_calling(marker))})
    commit_all(repo, "a stack file that runs a command")
    checked = invoke(repo, "check")
    assert checked.returncode == 1 and f"{STACK_FILE}:2: run-at-parse: run_cmd()" in checked.output
    for args in (("plan", "--all"), ("plan", "--unit", PUBLIC), ("drift",)):
        ran = invoke(repo, *args, "--out", str(tmp_path / "out"))
        assert ran.returncode == 1, ran.output
        assert f"{STACK_FILE}:2: run-at-parse: run_cmd()" in ran.stderr
        assert not (tmp_path / "out" / "summary.json").exists()
    assert not marker.exists()


# --------------------------------------------------------------------------- finding 3


def test_a_stack_unit_from_outside_the_repository_is_neither_generated_nor_planned(
    repo: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "ran.txt"
    evil = tmp_path / "catalog" / "evil"
    evil.mkdir(parents=True)
    (evil / "terragrunt.hcl").write_text(_calling(marker) + CATALOG_UNIT)
    _write(repo, {STACK_FILE: _stack(str(evil))})
    commit_all(repo, "a stack unit from a folder outside")
    checked = invoke(repo, "check")
    assert checked.returncode == 1
    assert f"{STACK_FILE}:1: stack-source: unit 'public': its source {evil} is a folder " in (
        checked.output
    )
    listed = invoke(repo, "units", "--json")
    unit = next(u for u in json.loads(listed.stdout)["units"] if u["path"] == PUBLIC)
    assert "stack-source" in unit["error"]
    for args in (("plan", "--all"), ("plan", "--unit", PUBLIC)):
        ran = invoke(repo, *args, "--out", str(tmp_path / "out"))
        assert ran.returncode == 1, ran.output
        assert f"{STACK_FILE}:1: stack-source:" in ran.stderr
        assert not (tmp_path / "out" / "summary.json").exists()
    assert not marker.exists(), "the unit from outside was parsed"


# --------------------------------------------------------------------------- siblings


def test_a_command_in_a_nested_stack_file_never_runs(repo: Path, tmp_path: Path) -> None:
    """A stack of stacks: the nested stack file (from the repository's catalog) is parsed
    by the parent's generation; it is scanned first."""
    marker = tmp_path / "ran.txt"
    _write(
        repo,
        {
            "catalog/stacks/zones/terragrunt.stack.hcl": _calling(marker)
            + _stack("${get_repo_root()}/" + CATALOG),
            STACK_FILE: _stack("../../../catalog/stacks/zones", block="stack", name="zones"),
        },
    )
    commit_all(repo, "a stack of stacks")
    for args in (("units", "--json"), ("matrix",)):
        ran = invoke(repo, *args)
        assert "Traceback" not in ran.output
        assert not marker.exists(), "the nested stack file was parsed"
    checked = invoke(repo, "check")
    assert "catalog/stacks/zones/terragrunt.stack.hcl:2: run-at-parse" in checked.output


@pytest.mark.parametrize(
    ("source", "why"),
    [
        (
            "git::https://git.evil.example/x/units.git//zone?ref=v1.0.0",
            "its source's repository git.evil.example/x/units is not in [check] "
            "allowed_module_sources",
        ),
        (
            "git::https://git.example.com/platform-modules/units.git//zone?ref=main",
            "is not pinned by tag",
        ),
        ("s3::https://s3.amazonaws.com/bucket/zone.zip", "is not a git module repository"),
    ],
    ids=["not-allowed", "branch", "not-git"],
)
def test_a_remote_stack_source_must_be_pinned_and_allowed(
    repo: Path, source: str, why: str
) -> None:
    _write(repo, {STACK_FILE: _stack(source)})
    commit_all(repo, "a stack unit from a remote source")
    checked = invoke(repo, "check", "--json")
    found = [v for v in json.loads(checked.stdout)["violations"] if v["rule"] == "stack-source"]
    assert [(v["file"], v["line"]) for v in found] == [(STACK_FILE, 1)], checked.output
    assert why in found[0]["message"]
    listed = invoke(repo, "units", "--json")
    unit = next(u for u in json.loads(listed.stdout)["units"] if u["path"] == PUBLIC)
    assert "not generated" in unit["error"] and "stack-source" in unit["error"]


def test_a_stack_reading_a_configuration_outside_the_repository_is_not_generated(
    repo: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "ran.txt"
    outside = tmp_path / "values.hcl"
    outside.write_text(_calling(marker))
    before = f'locals {{\n  shared = read_terragrunt_config("{outside}")\n}}\n\n'
    _write(repo, {STACK_FILE: _stack(f"../../../{CATALOG}", before=before)})
    commit_all(repo, "a stack reading a file outside")
    listed = invoke(repo, "units", "--json")
    unit = next(u for u in json.loads(listed.stdout)["units"] if u["path"] == PUBLIC)
    assert "read-outside" in unit["error"], unit["error"]
    assert not marker.exists()


def test_a_command_in_a_catalog_unit_is_refused_before_its_generated_copy_is_planned(
    repo: Path, tmp_path: Path
) -> None:
    """Generation copies the catalog unit (it does not parse it); the plan would. The scan
    reads the generated copy, in the scratch tree the plan runs in."""
    marker = tmp_path / "ran.txt"
    _write(
        repo,
        {
            f"{CATALOG}/terragrunt.hcl": CATALOG_UNIT.replace(
                "  records   = {}",
                f'  records   = {{}}\n  note = run_cmd("sh", "-c", "echo ran >> {marker}")',
            ),
            STACK_FILE: _stack(f"../../../{CATALOG}"),
        },
    )
    commit_all(repo, "a catalog unit that runs a command")
    ran = invoke(repo, "plan", "--unit", PUBLIC, "--out", str(tmp_path / "out"))
    assert ran.returncode == 1, ran.output
    assert f"{PUBLIC}/terragrunt.hcl:17: run-at-parse: run_cmd()" in ran.stderr
    assert not marker.exists()


def test_a_clean_stack_from_the_repository_is_generated_and_planned(
    repo: Path, tmp_path: Path
) -> None:
    _write(repo, {STACK_FILE: _stack(f"../../../{CATALOG}")})
    commit_all(repo, "a stack from the catalog")
    out = tmp_path / "out"
    ran = invoke(repo, "plan", "--unit", PUBLIC, "--out", str(out))
    assert ran.returncode == 0, ran.output
    assert units_by_path(read_summary(out))[PUBLIC]["status"] == "changes"
