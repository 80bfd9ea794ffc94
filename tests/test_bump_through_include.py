"""Module pins written through an included file's locals (Gruntwork's ``_envcommon`` layout).

``source = "${include.envcommon.locals.base_source_url}?ref=v0.8.0"`` is not a
literal of the unit's file: the inventory takes the module from the model's
evaluated ``terraform.source`` (the real model, on real files) and the ref from
the literal that holds it, in the unit's file or in the included file; the
bump edits that literal byte-exact.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tooling.core.bump import pins, plans
from tooling.core.bump.pins import UnitText
from tooling.errors import ToolingError
from tooling.model.repo import load
from tooling.model.sources import RepoTags, Tag
from tooling.model.trees import WorkTree

URL = "git::git@github.com:acme/modules.git"

ROOT = 'locals {\n  region = "us-east-1"\n}\n'
UNIT_HEAD = (
    'include "root" {\n  path = find_in_parent_folders("root.hcl")\n}\n\n'
    'include "envcommon" {\n'
    '  path   = "${dirname(find_in_parent_folders("root.hcl"))}/_envcommon/mysql.hcl"\n'
    "  expose = true\n}\n\n"
)


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(text.encode())


def _unit_texts(root: Path, live: tuple[str, ...]) -> list[UnitText]:
    """What ``outdated`` and the bumps read: each unit's file, the .hcl files it reads,
    and its evaluated source (as tooling.engine.bump.pull_requests.unit_texts builds them)."""
    model = load(WorkTree(root, live), None)
    out = []
    for path in model.order:
        unit = model.units[path]
        own = f"{path}/terragrunt.hcl"
        names = [own, *(r for r in unit.reads if r.endswith(".hcl") and r != own)]
        files = tuple((n, (root / n).read_bytes().decode()) for n in names)
        out.append(UnitText(path, unit.tier, files, unit.source))
    return out


def _tags(*names: str) -> RepoTags:
    return RepoTags("u", {n: Tag(n, f"{i:040x}", True) for i, n in enumerate(names, 1)})


def test_a_ref_after_an_included_base_url_is_pinned_and_bumped_in_the_units_file(
    tmp_path: Path,
) -> None:
    unit = UNIT_HEAD + (
        "terraform {\n"
        '  source = "${include.envcommon.locals.base_source_url}?ref=v0.8.0" # pinned\r\n'
        "}\n"
    )
    _write(
        tmp_path,
        {
            "root.hcl": ROOT,
            "_envcommon/mysql.hcl": f'locals {{\n  base_source_url = "{URL}//modules/mysql"\n}}\n',
            "prod/db/terragrunt.hcl": unit,
        },
    )
    found = pins.inventory(_unit_texts(tmp_path, ("prod",)))
    assert found.skipped == ()
    (pin,) = found.pins
    assert (pin.unit, pin.file, pin.line, pin.ref) == (
        "prod/db",
        "prod/db/terragrunt.hcl",
        11,
        "v0.8.0",
    )
    assert (pin.module, pin.identity) == ("modules", "github.com/acme/modules")

    plan = plans.plan_bump([pin], _tags("v0.8.0", "v0.9.0"), "v0.9.0")
    out = plans.apply_changes({pin.file: unit}, plan.changes)
    assert out == {pin.file: unit.replace("?ref=v0.8.0", "?ref=v0.9.0")}


def test_a_ref_inside_an_included_files_local_is_edited_there_once_for_every_unit(
    tmp_path: Path,
) -> None:
    envcommon = (
        "locals {\n"
        "  # the module every environment deploys\n"
        f'  source_url = "{URL}//modules/mysql?ref=v1.2.0"\n'
        "}\n"
    )
    unit = UNIT_HEAD + "terraform {\n  source = include.envcommon.locals.source_url\n}\n"
    _write(
        tmp_path,
        {
            "root.hcl": ROOT,
            "_envcommon/mysql.hcl": envcommon,
            "non-prod/db/terragrunt.hcl": unit,
            "prod/db/terragrunt.hcl": unit.replace("source_url", "${source_url}").replace(
                "= include.envcommon.locals.${source_url}",
                '= "${include.envcommon.locals.source_url}"',
            ),
        },
    )
    found = pins.inventory(_unit_texts(tmp_path, ("non-prod", "prod")))
    assert found.skipped == ()
    assert [(p.unit, p.file, p.line, p.ref) for p in found.pins] == [
        ("non-prod/db", "_envcommon/mysql.hcl", 3, "v1.2.0"),
        ("prod/db", "_envcommon/mysql.hcl", 3, "v1.2.0"),
    ]
    # selecting one unit selects every unit that shares the literal
    assert len(pins.select_pins(found.pins, ["prod/db"])) == 2

    plan = plans.plan_bump(list(found.pins), _tags("v1.2.0", "v1.3.0"), "v1.3.0")
    out = plans.apply_changes({"_envcommon/mysql.hcl": envcommon}, plan.changes)
    assert out == {"_envcommon/mysql.hcl": envcommon.replace("ref=v1.2.0", "ref=v1.3.0")}


def test_an_included_files_literal_that_changed_since_it_was_read_is_refused(
    tmp_path: Path,
) -> None:
    envcommon = f'locals {{\n  source_url = "{URL}?ref=v1.2.0"\n}}\n'
    unit = UNIT_HEAD + "terraform {\n  source = include.envcommon.locals.source_url\n}\n"
    _write(
        tmp_path,
        {"root.hcl": ROOT, "_envcommon/mysql.hcl": envcommon, "prod/db/terragrunt.hcl": unit},
    )
    (pin,) = pins.inventory(_unit_texts(tmp_path, ("prod",))).pins
    plan = plans.plan_bump([pin], _tags("v1.2.0", "v1.3.0"), "v1.3.0")
    moved_on = "# a new first line\n" + envcommon
    with pytest.raises(ToolingError, match=r"_envcommon/mysql.hcl:2: expected the ref 'v1.2.0'"):
        plans.apply_changes({"_envcommon/mysql.hcl": moved_on}, plan.changes)


def test_a_commit_sha_written_through_an_included_file_is_skipped_with_why(
    tmp_path: Path,
) -> None:
    sha = "a" * 40
    unit = UNIT_HEAD + (
        f'terraform {{\n  source = "${{include.envcommon.locals.base_source_url}}?ref={sha}"\n}}\n'
    )
    _write(
        tmp_path,
        {
            "root.hcl": ROOT,
            "_envcommon/mysql.hcl": f'locals {{\n  base_source_url = "{URL}"\n}}\n',
            "prod/db/terragrunt.hcl": unit,
        },
    )
    found = pins.inventory(_unit_texts(tmp_path, ("prod",)))
    assert found.pins == ()
    (skipped,) = found.skipped
    assert "bumped by hand" in skipped.reason and skipped.file == "prod/db/terragrunt.hcl"


def test_without_the_evaluated_source_the_include_is_still_skipped_with_why() -> None:
    unit = UNIT_HEAD + (
        'terraform {\n  source = "${include.envcommon.locals.base_source_url}?ref=v0.8.0"\n}\n'
    )
    found = pins.inventory([UnitText("prod/db", "prod", (("prod/db/terragrunt.hcl", unit),))])
    (skipped,) = found.skipped
    assert "is not a literal" in skipped.reason


def test_an_included_local_built_from_get_env_is_not_taken_for_a_literal(tmp_path: Path) -> None:
    unit = UNIT_HEAD + (
        'terraform {\n  source = "${include.envcommon.locals.base_source_url}?ref=v0.8.0"\n}\n'
    )
    _write(
        tmp_path,
        {
            "root.hcl": ROOT,
            "_envcommon/mysql.hcl": (
                f'locals {{\n  base_source_url = get_env("MODULES", "{URL}")\n}}\n'
            ),
            "prod/db/terragrunt.hcl": unit,
        },
    )
    found = pins.inventory(_unit_texts(tmp_path, ("prod",)))
    assert found.pins == ()
    (skipped,) = found.skipped
    assert "is not a literal" in skipped.reason
