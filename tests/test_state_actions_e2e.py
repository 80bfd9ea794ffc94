"""Everything OpenTofu will do counts: forget, import and move, end to end.

A module repository built with real git, whose tags add ``removed`` (with
``destroy = false``), ``import`` and ``moved`` blocks; units of the example
tree pinning it; the real ``invoke bump-module`` (GitHub's API is the local
test server), ``invoke plan`` (one unit: the per-unit planner; two: the batch
planner), ``invoke apply`` and ``invoke drift`` with the pinned OpenTofu and
Terragrunt on local state.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from infra_fixtures import commit_all, git, invoke, read_summary, units_by_path

pytestmark = pytest.mark.e2e

URL = "https://git.example.com/platform-modules/terraform-records.git"
UNITS = ("live/cloud/records-a", "live/cloud/records-b")
RECORDS = ('terraform_data.record["api"]', 'terraform_data.record["www"]')

V1 = (
    'resource "terraform_data" "record" {\n'
    '  for_each = toset(["api", "www"])\n'
    "  input    = each.key\n"
    "}\n\n"
    'resource "terraform_data" "zone" {\n'
    '  input = "example.org"\n'
    "}\n"
)
#: the records leave the module, and OpenTofu's state, but keep existing
V1_1 = (
    "removed {\n"
    "  from = terraform_data.record\n\n"
    "  lifecycle {\n"
    "    destroy = false\n"
    "  }\n"
    "}\n\n"
    'resource "terraform_data" "zone" {\n'
    '  input = "example.org"\n'
    "}\n"
)


def module_repo(path: Path, releases: list[tuple[str, str]]) -> Path:
    """A module repository with one commit and one annotated tag per release."""
    path.mkdir(parents=True)
    git(path, "init", "--quiet", "--initial-branch=main")
    for tag, main_tf in releases:
        (path / "main.tf").write_text(main_tf, encoding="utf-8")
        commit_all(path, f"release {tag}")
        git(path, "tag", "-a", tag, "-m", f"release {tag}")
    return path


def add_units(repo: Path, units: tuple[str, ...], ref: str) -> None:
    """Units of ``repo`` pinning the records module at ``ref``, committed and pushed."""
    for unit in units:
        (repo / unit).mkdir(parents=True)
        (repo / unit / "terragrunt.hcl").write_text(
            'include "root" {\n  path = find_in_parent_folders("root.hcl")\n}\n\n'
            f'terraform {{\n  source = "git::{URL}?ref={ref}"\n}}\n',
            encoding="utf-8",
        )
    commit_all(repo, "units pinning the records module")
    git(repo, "push", "--quiet", "origin", "main")


def state_addresses(repo: Path, unit: str) -> set[str]:
    """The resource instances the unit's local state holds, by address."""
    state = json.loads((repo / ".iac/state" / unit / "terraform.tfstate").read_text())
    out = set()
    for resource in state["resources"]:
        for instance in resource["instances"]:
            key = instance.get("index_key")
            suffix = "" if key is None else f"[{json.dumps(key)}]"
            module = f"{resource['module']}." if resource.get("module") else ""
            out.add(f"{module}{resource['type']}.{resource['name']}{suffix}")
    return out


def plan(repo: Path, out: Path, *args: str, env: dict[str, str]) -> dict[str, Any]:
    ran = invoke(repo, "plan", "--out", str(out), *args, env=env)
    assert ran.returncode == 0, ran.output
    return read_summary(out)


def applied(repo: Path, plans: Path, *args: str, env: dict[str, str]) -> dict[str, str]:
    """``invoke apply --plans PLANS ARGS``: each unit's result."""
    ran = invoke(repo, "apply", "--plans", str(plans), *args, env=env)
    assert ran.returncode == 0, ran.output
    record = json.loads((plans / "apply.json").read_text())
    return {u["path"]: u["result"] for u in record["units"]}


@pytest.fixture
def records_repo(
    example_repo: Path, tmp_path: Path, github_api: Any
) -> tuple[Path, dict[str, str]]:
    """The example tree with two units pinning the records module at v1.0.0, applied;
    the environment that maps the module's URL to its local repository."""
    modules = module_repo(tmp_path / "terraform-records.git", [("v1.0.0", V1), ("v1.1.0", V1_1)])
    env = {**github_api.env(), "IAC_MODULE_REWRITE": f"{URL}={modules}"}
    add_units(example_repo, UNITS, "v1.0.0")
    first = tmp_path / "first"
    plan(example_repo, first, *(a for u in UNITS for a in ("--unit", u)), env=env)
    assert applied(example_repo, first, env=env) == dict.fromkeys(UNITS, "applied")
    for unit in UNITS:
        assert set(RECORDS) <= state_addresses(example_repo, unit)
    return example_repo, env


def test_a_bump_whose_tag_forgets_resources_is_counted_warned_manual_and_applied_only_approved(
    records_repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    repo, env = records_repo
    bumped = invoke(repo, "bump-module", "terraform-records", "v1.1.0", env=env)
    assert bumped.returncode == 0, bumped.output
    # the pull request's branch, as the plan job checks it out
    git(repo, "checkout", "--quiet", "bump/terraform-records-v1.1.0")
    assert "?ref=v1.1.0" in (repo / UNITS[0] / "terragrunt.hcl").read_text()

    # the batch planner (the bump's two units) and the per-unit planner (one of them)
    batch = tmp_path / "batch"
    single = tmp_path / "single"
    summaries = {
        "batch": plan(repo, batch, "--base", "main", env=env),
        "single": plan(repo, single, "--unit", UNITS[0], env=env),
    }
    assert sorted(units_by_path(summaries["batch"])) == sorted(UNITS)
    for name, summary in summaries.items():
        for path, unit in units_by_path(summary).items():
            assert unit["status"] == "changes", (name, path, unit)
            assert unit["counts"]["forget"] == 2, (name, path)
            assert {k: v for k, v in unit["counts"].items() if k != "forget"} == dict.fromkeys(
                ("create", "update", "delete", "replace", "import", "move"), 0
            )
            assert sorted((c["address"], c["action"]) for c in unit["changes"]) == [
                (a, "forget") for a in RECORDS
            ]
            assert unit["gate"]["decision"] == "manual", (name, path)
            assert any("forgets 2 resources" in r for r in unit["gate"]["reasons"]), unit["gate"]

    # the reviewer's page: not "no resource changes"; the totals say it; the warning
    # block names every forgotten address, unit by unit
    for folder, units in ((batch, UNITS), (single, UNITS[:1])):
        comment = (folder / "comment.md").read_text()
        first = comment.splitlines()[1]
        assert "no resource changes" not in first and first.startswith("⚠️"), first
        assert f"{2 * len(units)} to forget" in first, first
        warning = comment[comment.index("> [!WARNING]") : comment.index("| unit |")]
        for unit in units:
            line = next(x for x in warning.splitlines() if f"`{unit}`" in x)
            assert "forget" in line and all(f"`{a}`" in line for a in RECORDS), line
        assert "left in place, no longer managed" in warning

    # apply: nothing forgotten without approval; with it, OpenTofu forgets them
    assert applied(repo, batch, env=env) == dict.fromkeys(UNITS, "waiting-approval")
    for unit in UNITS:
        assert set(RECORDS) <= state_addresses(repo, unit)
    assert applied(repo, batch, "--approve-manual", env=env) == dict.fromkeys(UNITS, "applied")
    for unit in UNITS:
        assert state_addresses(repo, unit) == {"terraform_data.zone"}


def test_drift_reports_a_forget_the_default_branch_has_not_applied(
    records_repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    repo, env = records_repo
    # the bump merged without being applied: the scheduled drift check sees the forget
    for unit in UNITS:
        path = repo / unit / "terragrunt.hcl"
        path.write_text(path.read_text().replace("?ref=v1.0.0", "?ref=v1.1.0"))
    commit_all(repo, "bump the records module to v1.1.0")
    out = tmp_path / "drift"
    ran = invoke(repo, "drift", "--out", str(out), env=env)
    assert ran.returncode == 0, ran.output
    doc = json.loads((out / "drift.json").read_text())
    units = {u["path"]: u for u in doc["units"]}
    assert set(UNITS) <= set(doc["drifted"])
    for unit in UNITS:
        assert units[unit]["status"] == "drifted"
        assert units[unit]["counts"]["forget"] == 2
        assert sorted(units[unit]["changes"], key=lambda c: c["address"]) == [
            {"address": a, "action": "forget"} for a in RECORDS
        ]
    md = (out / "drift.md").read_text()
    row = next(line for line in md.splitlines() if f"`{UNITS[0]}`" in line)
    assert "2 to forget" in row, row


# --------------------------------------------------------------------------- siblings
#
# One module repository, a folder per case, two tags: v1.0.0 (applied first) and
# v1.1.0 (what a bump pins). Each test pins its folders at v1.0.0, applies them
# with approval, changes the pins to v1.1.0 and plans: one unit through the per-unit
# planner, two through the batch planner.

EDGE_URL = "https://git.example.com/platform-modules/terraform-edge.git"
DNS_CHILD = (
    'resource "terraform_data" "record" {\n'
    '  for_each = toset(["api", "www"])\n'
    "  input    = each.key\n"
    "}\n"
)
ZONE = 'resource "terraform_data" "zone" {\n  input = "example.org"\n}\n'
CASES: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    # removed of a whole module call, destroy = false
    "module-call": (
        {"main.tf": 'module "dns" {\n  source = "./dns"\n}\n', "dns/main.tf": DNS_CHILD},
        {
            "main.tf": "removed {\n  from = module.dns\n\n  lifecycle {\n    destroy = false\n  }\n}\n",
            "dns/main.tf": DNS_CHILD,
        },
    ),
    # an import block arrives with the tag
    "import": (
        {"main.tf": ZONE},
        {
            "main.tf": ZONE
            + '\nimport {\n  to = terraform_data.adopted\n  id = "legacy-record"\n}\n\n'
            'resource "terraform_data" "adopted" {}\n'
        },
    ),
    # a moved block and a forget in one plan
    "moved-forget": (
        {"main.tf": ZONE + "\n" + DNS_CHILD},
        {
            "main.tf": ZONE.replace('"zone"', '"apex"')
            + "\nmoved {\n  from = terraform_data.zone\n  to   = terraform_data.apex\n}\n\n"
            "removed {\n  from = terraform_data.record\n\n  lifecycle {\n    destroy = false\n  }\n}\n"
        },
    ),
    # a move alone
    "moved": (
        {"main.tf": ZONE},
        {
            "main.tf": ZONE.replace('"zone"', '"apex"')
            + "\nmoved {\n  from = terraform_data.zone\n  to   = terraform_data.apex\n}\n"
        },
    ),
    # the sandbox's VM stand-in (policy.toml's node_addresses), forgotten
    "vm": (
        {
            "main.tf": 'resource "terraform_data" "vm" {\n  for_each = toset(["node-1"])\n'
            "  input    = each.key\n}\n"
        },
        {
            "main.tf": "removed {\n  from = terraform_data.vm\n\n  lifecycle {\n    destroy = false\n  }\n}\n"
        },
    ),
    # a plain forget, beside the VM's
    "records": ({"main.tf": DNS_CHILD}, {"main.tf": V1_1.replace(ZONE, "")}),
    # lifecycle destroy = false and a replacement: the old instance is forgotten
    "keep-old": (
        {
            "main.tf": 'resource "terraform_data" "cert" {\n  triggers_replace = "2026"\n\n'
            "  lifecycle {\n    destroy = false\n  }\n}\n"
        },
        {
            "main.tf": 'resource "terraform_data" "cert" {\n  triggers_replace = "2027"\n\n'
            "  lifecycle {\n    destroy = false\n  }\n}\n"
        },
    ),
}


def edge_modules(path: Path) -> Path:
    """The module repository: every case's folder, at v1.0.0 and v1.1.0."""
    path.mkdir(parents=True)
    git(path, "init", "--quiet", "--initial-branch=main")
    for tag, which in (("v1.0.0", 0), ("v1.1.0", 1)):
        for case, releases in CASES.items():
            for name, text in releases[which].items():
                (path / case / name).parent.mkdir(parents=True, exist_ok=True)
                (path / case / name).write_text(text, encoding="utf-8")
        commit_all(path, f"release {tag}")
        git(path, "tag", "-a", tag, "-m", f"release {tag}")
    return path


def edge_units(repo: Path, tmp_path: Path, *cases: str) -> tuple[dict[str, str], list[str]]:
    """Units ``live/cloud/edge-CASE`` pinning ``cases`` at v1.0.0, applied (with approval),
    then pinned at v1.1.0 and committed; the environment and the units."""
    modules = edge_modules(tmp_path / "terraform-edge.git")
    env = {"IAC_MODULE_REWRITE": f"{EDGE_URL}={modules}"}
    units = [f"live/cloud/edge-{case}" for case in cases]
    for unit, case in zip(units, cases, strict=True):
        (repo / unit).mkdir(parents=True)
        (repo / unit / "terragrunt.hcl").write_text(
            'include "root" {\n  path = find_in_parent_folders("root.hcl")\n}\n\n'
            f'terraform {{\n  source = "git::{EDGE_URL}//{case}?ref=v1.0.0"\n}}\n',
            encoding="utf-8",
        )
    commit_all(repo, "edge units at v1.0.0")
    first = tmp_path / "first"
    plan(repo, first, *(a for u in units for a in ("--unit", u)), env=env)
    assert applied(repo, first, "--approve-manual", env=env) == dict.fromkeys(units, "applied")
    for unit in units:
        path = repo / unit / "terragrunt.hcl"
        path.write_text(path.read_text().replace("?ref=v1.0.0", "?ref=v1.1.0"))
    commit_all(repo, "edge units at v1.1.0")
    return env, units


def planned(repo: Path, out: Path, units: list[str], env: dict[str, str]) -> dict[str, Any]:
    """``invoke plan --unit ...`` of ``units``: each unit's summary.json entry."""
    return units_by_path(plan(repo, out, *(a for u in units for a in ("--unit", u)), env=env))


def test_removed_module_call_with_destroy_false_forgets_every_resource_of_the_module(
    example_repo: Path, tmp_path: Path
) -> None:
    env, (unit,) = edge_units(example_repo, tmp_path, "module-call")
    out = tmp_path / "plan"
    entry = planned(example_repo, out, [unit], env)[unit]  # the per-unit planner
    forgotten = [
        'module.dns.terraform_data.record["api"]',
        'module.dns.terraform_data.record["www"]',
    ]
    assert entry["status"] == "changes"
    assert entry["counts"]["forget"] == 2 and entry["counts"]["delete"] == 0
    assert sorted((c["address"], c["action"]) for c in entry["changes"]) == [
        (a, "forget") for a in forgotten
    ]
    assert entry["gate"]["decision"] == "manual"
    comment = (out / "comment.md").read_text()
    assert "0 to destroy, 2 to forget**" in comment.splitlines()[1]
    warned = next(line for line in comment.splitlines() if "📤 **forget**" in line)
    assert all(f"`{a}`" in warned for a in forgotten), warned
    # apply without approval leaves the module's resources managed
    assert applied(example_repo, out, env=env) == {unit: "waiting-approval"}
    assert set(forgotten) <= state_addresses(example_repo, unit)


def test_an_import_block_in_a_new_tag_is_counted_listed_and_manual_by_default(
    example_repo: Path, tmp_path: Path
) -> None:
    env, (unit,) = edge_units(example_repo, tmp_path, "import")
    out = tmp_path / "plan"
    entry = planned(example_repo, out, [unit], env)[unit]
    assert entry["status"] == "changes"
    assert entry["counts"]["import"] == 1 and entry["counts"]["create"] == 0
    assert entry["changes"] == [
        {
            "address": "terraform_data.adopted",
            "action": "no-op",
            "importing": True,
            "previous_address": None,
        }
    ]
    assert entry["gate"]["decision"] == "manual"
    assert entry["gate"]["reasons"] == [
        "imports terraform_data.adopted (brought under this unit's management)"
    ]
    comment = (out / "comment.md").read_text()
    assert "0 to destroy, 1 to import**" in comment.splitlines()[1]
    assert (
        "📥 **import** (brought under this unit's management) in `live/cloud/edge-import` (1): `terraform_data.adopted`"
        in comment
    )
    assert applied(example_repo, out, env=env) == {unit: "waiting-approval"}
    assert "terraform_data.adopted" not in state_addresses(example_repo, unit)
    assert applied(example_repo, out, "--approve-manual", env=env) == {unit: "applied"}
    assert "terraform_data.adopted" in state_addresses(example_repo, unit)


def test_moved_and_forget_in_one_plan_are_both_counted_and_listed_and_a_move_alone_is_auto(
    example_repo: Path, tmp_path: Path
) -> None:
    env, units = edge_units(example_repo, tmp_path, "moved-forget", "moved")
    both, alone = units
    out = tmp_path / "plan"
    entries = planned(example_repo, out, units, env)  # the batch planner
    assert entries[both]["counts"]["move"] == 1 and entries[both]["counts"]["forget"] == 2
    assert {
        "address": "terraform_data.apex",
        "action": "no-op",
        "importing": False,
        "previous_address": "terraform_data.zone",
    } in entries[both]["changes"]
    assert entries[both]["gate"]["decision"] == "manual"
    assert entries[alone]["counts"]["move"] == 1 and entries[alone]["status"] == "changes"
    assert entries[alone]["gate"] == {
        "decision": "auto",
        "reasons": [
            "no delete, no replace, no node/VM change; moves terraform_data.zone -> "
            "terraform_data.apex ([gates] auto_state_actions); the unit's gate class is auto"
        ],
    }
    comment = (out / "comment.md").read_text()
    assert "0 to destroy, 2 to forget, 2 to move**" in comment.splitlines()[1]
    block = comment[comment.index("> [!WARNING]") : comment.index("| unit |")]
    for unit in units:
        line = next(x for x in block.splitlines() if "🚚 **move**" in x and f"`{unit}`" in x)
        assert "`terraform_data.zone` → `terraform_data.apex`" in line
    assert f"📤 **forget** (left in place, no longer managed by OpenTofu) in `{both}` (2)" in block
    # apply: the move alone applies, the forget waits
    assert applied(example_repo, out, env=env) == {both: "waiting-approval", alone: "applied"}
    assert state_addresses(example_repo, alone) == {"terraform_data.apex"}
    assert "terraform_data.zone" in state_addresses(example_repo, both)


def test_forgetting_a_vm_is_manual_even_when_policy_lets_forgets_apply_alone(
    example_repo: Path, tmp_path: Path
) -> None:
    policy = example_repo / "policy.toml"
    text = policy.read_text()
    assert 'auto_state_actions = ["move"]' in text
    policy.write_text(
        text.replace(
            'auto_state_actions = ["move"]', 'auto_state_actions = ["forget", "import", "move"]'
        )
    )
    commit_all(example_repo, "policy: forgets and imports need no human on their own")
    env, units = edge_units(example_repo, tmp_path, "vm", "records")
    vm, records = units
    out = tmp_path / "plan"
    entries = planned(example_repo, out, units, env)
    assert entries[vm]["counts"]["forget"] == 1
    assert entries[vm]["gate"]["decision"] == "manual"
    assert 'touches a node/VM: terraform_data.vm["node-1"]' in entries[vm]["gate"]["reasons"]
    assert entries[records]["counts"]["forget"] == 2
    assert entries[records]["gate"]["decision"] == "auto"
    assert "([gates] auto_state_actions)" in entries[records]["gate"]["reasons"][0]
    assert applied(example_repo, out, env=env) == {vm: "waiting-approval", records: "applied"}
    assert 'terraform_data.vm["node-1"]' in state_addresses(example_repo, vm)
    assert not (state_addresses(example_repo, records) & set(RECORDS))


def test_a_replacement_that_keeps_the_old_instance_counts_a_create_and_a_forget(
    example_repo: Path, tmp_path: Path
) -> None:
    env, (unit,) = edge_units(example_repo, tmp_path, "keep-old")
    out = tmp_path / "plan"
    entry = planned(example_repo, out, [unit], env)[unit]
    assert entry["changes"] == [
        {
            "address": "terraform_data.cert",
            "action": "forget+create",
            "importing": False,
            "previous_address": None,
        }
    ]
    assert {k: v for k, v in entry["counts"].items() if v} == {"create": 1, "forget": 1}
    assert entry["gate"]["decision"] == "manual"
    comment = (out / "comment.md").read_text()
    assert "1 to add, 0 to change, 0 to replace, 0 to destroy, 1 to forget**" in comment
    assert "♻️ **replace, the old one forgotten**" in comment
