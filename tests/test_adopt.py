"""`invoke adopt`: adoption only through a first plan with no difference.

Real terragrunt and tofu; the adopted resources are OpenTofu's built-in
``terraform_data`` (its import ID is any string). The units use a local module
under testmods/, in the throwaway test repository only: under the real live/
a local source breaks `invoke check`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from infra_fixtures import commit_all, git, invoke, plan_one

from tooling.commands import adopt
from tooling.errors import UsageError


def _unit(repo: Path, name: str, module: str) -> str:
    (repo / "testmods" / name).mkdir(parents=True)
    (repo / "testmods" / name / "main.tf").write_text(module)
    unit = repo / "live" / "cloud" / name
    unit.mkdir(parents=True)
    (unit / "terragrunt.hcl").write_text(
        'include "root" {\n  path = find_in_parent_folders("root.hcl")\n}\n\n'
        f'terraform {{\n  source = "${{get_repo_root()}}/testmods/{name}"\n}}\n'
    )
    commit_all(repo, f"unit {name}")
    return f"live/cloud/{name}"


def _state(repo: Path, unit: str) -> dict[str, Any] | None:
    path = repo / ".iac" / "state" / unit / "terraform.tfstate"
    if not path.exists():
        return None
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _nothing_left_behind(repo: Path) -> None:
    assert not list(repo.rglob("iac_adopt_import.tf")), "the temporary import block was left behind"
    assert not (repo / ".iac" / "adopt").exists()
    assert git(repo, "status", "--porcelain") == "", "adopt must not change the repository"


def test_a_clean_import_is_shown_then_applied_and_the_unit_plans_clean(
    example_repo: Path, tmp_path: Path
) -> None:
    unit = _unit(example_repo, "legacy", 'resource "terraform_data" "existing" {}\n')
    shown = invoke(example_repo, "adopt", unit, "terraform_data.existing", "legacy-42")
    assert shown.returncode == 0, shown.output
    assert "= terraform_data.existing: imported from 'legacy-42', no difference" in shown.stderr
    assert "clean adoption: 1 to import, 0 to add, 0 to change, 0 to destroy." in shown.stderr
    assert _state(example_repo, unit) is None, "without --apply nothing is adopted"
    _nothing_left_behind(example_repo)

    applied = invoke(example_repo, "adopt", unit, "terraform_data.existing", "legacy-42", "--apply")
    assert applied.returncode == 0, applied.output
    assert f"{unit} now plans with no changes" in applied.stderr
    state = _state(example_repo, unit)
    assert state is not None
    [resource] = state["resources"]
    assert (resource["type"], resource["name"]) == ("terraform_data", "existing")
    assert resource["instances"][0]["attributes"]["id"] == "legacy-42"
    _nothing_left_behind(example_repo)
    result: Any = plan_one(example_repo, unit, tmp_path / "after")
    assert result.status == "no-changes"

    again = invoke(example_repo, "adopt", unit, "terraform_data.existing", "legacy-42")
    assert again.returncode == 1
    assert "already in the state" in again.stderr


def test_an_import_that_differs_is_refused_with_the_difference_shown(example_repo: Path) -> None:
    unit = _unit(
        example_repo, "configured", 'resource "terraform_data" "db" {\n  input = "wanted"\n}\n'
    )
    for extra in ((), ("--apply",)):
        ran = invoke(example_repo, "adopt", unit, "terraform_data.db", "db-1", *extra)
        assert ran.returncode == 1, ran.output
        assert "Traceback" not in ran.output
        assert "1 to import, 0 to add, 1 to change, 0 to destroy" in ran.stderr
        assert "~ terraform_data.db (update; imported from 'db-1')" in ran.stderr
        assert 'input: null -> "wanted"' in ran.stderr
        assert "fix the code, not reality" in ran.stderr
        assert _state(example_repo, unit) is None, "a refused adoption changes no state"
        _nothing_left_behind(example_repo)


def test_sensitive_values_of_a_difference_are_never_printed(example_repo: Path) -> None:
    unit = _unit(
        example_repo,
        "secretive",
        'resource "terraform_data" "token" {\n  input = sensitive("s3cr3t-value")\n}\n',
    )
    ran = invoke(example_repo, "adopt", unit, "terraform_data.token", "tok-1")
    assert ran.returncode == 1
    assert "input: null -> (sensitive value)" in ran.stderr
    assert "s3cr3t" not in ran.output


def test_other_changes_in_the_unit_make_the_adoption_refused(example_repo: Path) -> None:
    unit = _unit(
        example_repo,
        "mixed",
        'resource "terraform_data" "existing" {}\n\nresource "terraform_data" "new" {}\n',
    )
    ran = invoke(example_repo, "adopt", unit, "terraform_data.existing", "old-1")
    assert ran.returncode == 1
    assert "1 to import, 1 to add, 0 to change, 0 to destroy" in ran.stderr
    assert "+ terraform_data.new (create)" in ran.stderr
    assert _state(example_repo, unit) is None


def test_a_failing_plan_leaves_nothing_behind(example_repo: Path) -> None:
    unit = _unit(example_repo, "typo", 'resource "terraform_data" "existing" {}\n')
    ran = invoke(example_repo, "adopt", unit, "terraform_data.missing", "x")
    assert ran.returncode == 1
    assert "Traceback" not in ran.output
    assert "the plan failed" in ran.stderr and "terraform_data.missing" in ran.stderr
    _nothing_left_behind(example_repo)


def test_bad_usage_exits_2(example_repo: Path) -> None:
    assert invoke(example_repo, "adopt", "live/cloud/dns", "data.x.y", "id").returncode == 2
    assert (
        invoke(example_repo, "adopt", "live/cloud/nope", "terraform_data.x", "id").returncode == 2
    )
    assert invoke(example_repo, "adopt", "live/cloud/dns", "not an address", "id").returncode == 2


# --------------------------------------------------------------------------- pure parts


def test_the_import_block_quotes_the_id_and_never_interpolates() -> None:
    block = adopt.import_block('terraform_data.vm["node-1"]', 'a"b${x}%{y}')
    assert '  to = terraform_data.vm["node-1"]\n' in block
    assert '  id = "a\\"b$${x}%%{y}"\n' in block


@pytest.mark.parametrize(
    ("changes", "clean", "counts"),
    [
        ([("terraform_data.a", ["no-op"], "id-a", {})], True, (1, 0, 0, 0)),
        (
            [
                (
                    "terraform_data.a",
                    ["update"],
                    "id-a",
                    {"before": {"input": None}, "after": {"input": 1}},
                )
            ],
            False,
            (1, 0, 1, 0),
        ),
        (
            [
                ("terraform_data.a", ["no-op"], "id-a", {}),
                ("terraform_data.b", ["delete", "create"], None, {}),
            ],
            False,
            (1, 1, 0, 1),
        ),
        ([("terraform_data.a", ["no-op"], None, {})], False, (0, 0, 0, 0)),
        # a moved block or a forget beside the import changes the state too: refused
        (
            [
                ("terraform_data.a", ["no-op"], "id-a", {}),
                ("terraform_data.b", ["no-op"], None, {"previous_address": "terraform_data.old"}),
            ],
            False,
            (1, 0, 0, 0),
        ),
        (
            [
                ("terraform_data.a", ["no-op"], "id-a", {}),
                ("terraform_data.b", ["forget"], None, {}),
            ],
            False,
            (1, 0, 0, 0),
        ),
    ],
)
def test_judge_accepts_only_imports(
    changes: list[Any], clean: bool, counts: tuple[int, ...]
) -> None:
    plan = {
        "resource_changes": [
            {
                "address": a,
                "mode": "managed",
                "change": {
                    "actions": acts,
                    **({"importing": {"id": i}} if i else {}),
                    **{k: v for k, v in extra.items() if k != "previous_address"},
                },
                **{k: v for k, v in extra.items() if k == "previous_address"},
            }
            for a, acts, i, extra in changes
        ]
    }
    verdict = adopt.judge(plan, "terraform_data.a")
    assert verdict.clean is clean
    c = verdict.counts()
    assert (c["import"], c["add"], c["change"], c["destroy"]) == counts


def test_data_sources_and_malformed_addresses_are_usage_errors() -> None:
    for bad in ("data.aws_ami.x", "module.m.data.x.y", "x", "terraform_data.a b"):
        with pytest.raises(UsageError):
            adopt.check_address(bad)
    assert (
        adopt.check_address(' module.net[0].terraform_data.bridge["a"] ')
        == 'module.net[0].terraform_data.bridge["a"]'
    )


def test_a_move_or_a_forget_beside_the_import_is_named_in_the_refusal() -> None:
    plan = {
        "resource_changes": [
            {
                "address": "terraform_data.a",
                "mode": "managed",
                "change": {"actions": ["no-op"], "importing": {"id": "id-a"}},
            },
            {
                "address": "terraform_data.b",
                "mode": "managed",
                "previous_address": "terraform_data.old",
                "change": {"actions": ["no-op"]},
            },
            {"address": "terraform_data.c", "mode": "managed", "change": {"actions": ["forget"]}},
        ]
    }
    text = adopt.refusal(
        "live/cloud/dns", "terraform_data.a", adopt.judge(plan, "terraform_data.a")
    )
    assert text.splitlines()[0].endswith(
        "1 to import, 0 to add, 0 to change, 0 to destroy, 1 to forget, 1 to move."
    )
    assert "  ! terraform_data.b (no-op; moved from terraform_data.old)" in text
    assert "  . terraform_data.c (forget)" in text
