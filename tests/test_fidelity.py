"""The model against Terragrunt 1.1.3 on small trees built here: one test per way it used to miss.

Each tree is written by the test; wherever Terragrunt has an opinion, the pinned
binary's ``find --json --dependencies --reading`` is the oracle (through the
same comparison ``invoke crosscheck`` makes), and the test also asserts the
specific fact, so that agreement cannot come from both sides seeing nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from infra_fixtures import REPO, commit_all, edit, git, invoke

from tooling.commands import crosscheck
from tooling.core.doctor.crosscheck import Report
from tooling.core.plan.affected import NO_PLAN_FILES, affected
from tooling.io import git as gitw
from tooling.model.excludes import excludes
from tooling.model.repo import load
from tooling.model.trees import WorkTree
from tooling.model.units import Change, Model

pytestmark = pytest.mark.e2e


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def model(root: Path) -> Model:
    return load(WorkTree(root, "."), None)


def agree(root: Path) -> Report:
    """Terragrunt and the model agree exactly on every unit of ``root``."""
    report = crosscheck.check(root)
    assert report.disagreements == (), crosscheck.render(report)
    assert report.blind == (), report.blind
    assert report.compared == report.exact
    return report


def select(model_: Model, *paths: str) -> list[str]:
    result = affected(
        [Change("M", p) for p in paths], model_, lambda: model_, base_sha="b", head_sha="h"
    )
    return [u.path for u in result.units]


UNIT = 'terraform {\n  source = "git::https://example.com/m.git?ref=v1"\n}\n'


# --------------------------------------------------------------------------- 1. unit folder


def test_any_file_under_a_unit_folder_affects_it_except_documentation(
    tmp_path: Path, tools: None
) -> None:
    root = write(
        tmp_path,
        {
            "app/terragrunt.hcl": UNIT,
            "app/.terraform.lock.hcl": "# lock\n",
            "app/extra.tfvars": "a = 1\n",
            "app/sub/policy.json": "{}\n",
            "app/README.md": "# docs\n",
            "other/terragrunt.hcl": UNIT,
        },
    )
    agree(root)
    m = model(root)
    assert select(m, "app/.terraform.lock.hcl") == ["app"]
    assert select(m, "app/extra.tfvars") == ["app"]
    assert select(m, "app/sub/policy.json") == ["app"]
    assert select(m, "app/README.md") == []
    assert "*.md" in NO_PLAN_FILES


def test_lock_files_are_committed_not_ignored() -> None:
    repo = Path(__file__).resolve().parent.parent
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", "live/cloud/dns/.terraform.lock.hcl"], cwd=repo, check=False
    )
    assert ignored.returncode == 1  # 1: not ignored


# --------------------------------------------------------------------------- 2. mark_as_read


def test_mark_as_read_and_mark_glob_as_read_are_reads(tmp_path: Path, tools: None) -> None:
    root = write(
        tmp_path,
        {
            "shared/one.yaml": "a: 1\n",
            "shared/two.yaml": "b: 2\n",
            "shared/skip.txt": "x\n",
            "data/extra.json": "{}\n",
            "app/terragrunt.hcl": UNIT
            + 'locals {\n  a = mark_as_read("${get_terragrunt_dir()}/../data/extra.json")\n'
            '  b = mark_glob_as_read("${get_terragrunt_dir()}/../shared/*.yaml")\n}\n',
        },
    )
    agree(root)
    reads = set(model(root).units["app"].reads)
    assert {"data/extra.json", "shared/one.yaml", "shared/two.yaml"} <= reads
    assert "shared/skip.txt" not in reads


# --------------------------------------------------------------------------- 3. read_terragrunt_config


def test_a_read_file_resolves_its_own_paths_and_follows_its_includes(
    tmp_path: Path, tools: None
) -> None:
    root = write(
        tmp_path,
        {
            # the same names beside the unit: reading those would be the wrong file
            "env/app/common.hcl": "locals {\n  wrong = true\n}\n",
            "env/app/region.hcl": "locals {\n  wrong = true\n}\n",
            "env/app/terragrunt.hcl": UNIT
            + 'locals {\n  cfg = read_terragrunt_config("${get_terragrunt_dir()}/../conf/env.hcl")\n}\n',
            "env/conf/env.hcl": 'include "common" {\n  path = "${get_terragrunt_dir()}/common.hcl"\n}\n'
            'locals {\n  region = read_terragrunt_config("region.hcl")\n'
            '  parent = read_terragrunt_config(find_in_parent_folders("top.hcl"))\n}\n',
            "env/conf/common.hcl": "locals {\n  right = true\n}\n",
            "env/conf/region.hcl": "locals {\n  right = true\n}\n",
            "top.hcl": "locals {\n  x = 1\n}\n",
        },
    )
    agree(root)
    reads = set(model(root).units["env/app"].reads)
    assert {"env/conf/env.hcl", "env/conf/common.hcl", "env/conf/region.hcl", "top.hcl"} <= reads
    assert "env/app/common.hcl" not in reads and "env/app/region.hcl" not in reads


def test_reads_inside_a_for_expression_are_seen(tmp_path: Path, tools: None) -> None:
    root = write(
        tmp_path,
        {
            "conf/a.hcl": "locals {\n  v = 1\n}\n",
            "conf/b.hcl": "locals {\n  v = 2\n}\n",
            "app/terragrunt.hcl": UNIT + 'locals {\n  names = ["a", "b"]\n'
            '  all = [for n in local.names : read_terragrunt_config("${get_terragrunt_dir()}/../conf/${n}.hcl")]\n}\n',
        },
    )
    agree(root)
    assert {"conf/a.hcl", "conf/b.hcl"} <= set(model(root).units["app"].reads)


# --------------------------------------------------------------------------- 4. symlinks


def test_a_dependency_through_a_symlinked_folder_is_the_real_unit(
    tmp_path: Path, tools: None
) -> None:
    root = write(
        tmp_path,
        {
            "real/db/terragrunt.hcl": UNIT,
            "app/terragrunt.hcl": UNIT + 'dependency "db" {\n  config_path = "../links/db"\n}\n',
        },
    )
    (root / "links").mkdir()
    os.symlink("../real/db", root / "links" / "db")
    agree(root)
    m = model(root)
    assert m.units["app"].dependencies == ("real/db",)
    assert m.dependents()["real/db"] == ["app"]
    # the git revision gives the same model (the link is a blob whose text is the target)
    git(root, "init", "--quiet", "--initial-branch=main")
    commit_all(root, "tree")
    at_head = load(gitw.tree_at(root, "HEAD", live="."), None)
    assert at_head.units["app"].dependencies == ("real/db",)


# --------------------------------------------------------------------------- 5. local sources


def test_a_local_source_without_dot_slash_is_local(tmp_path: Path, tools: None) -> None:
    root = write(
        tmp_path,
        {
            "app/modules/a/main.tf": 'output "x" {\n  value = 1\n}\n',
            "app/terragrunt.hcl": 'terraform {\n  source = "modules/a"\n}\n',
            "mods/b/main.tf": 'output "x" {\n  value = 1\n}\n',
            "other/terragrunt.hcl": 'terraform {\n  source = "../mods/b"\n}\n',
        },
    )
    agree(root)
    m = model(root)
    assert "app/modules/a/" in m.units["app"].reads
    assert select(m, "mods/b/main.tf") == ["other"]


# --------------------------------------------------------------------------- 6. one bad unit


def test_one_unit_that_cannot_be_evaluated_does_not_blind_the_rest(
    tmp_path: Path, tools: None
) -> None:
    root = write(
        tmp_path,
        {
            "good/terragrunt.hcl": UNIT,
            "bad/terragrunt.hcl": "locals {\n  x = \n",
            "guarded/terragrunt.hcl": UNIT
            + 'locals {\n  c = try(read_terragrunt_config(find_in_parent_folders("nope.hcl")), {})\n}\n',
            "off/terragrunt.hcl": UNIT
            + 'dependency "d" {\n  config_path = "../good"\n  enabled = false\n}\n',
            "flagged/terragrunt.hcl": UNIT + 'feature "dep" {\n  default = "good"\n}\n'
            'dependency "d" {\n  config_path = "../${feature.dep.value}"\n}\n',
            "parent/marker/README.txt": "a folder\n",
            "parent/child/terragrunt.hcl": UNIT
            + 'locals {\n  dir = find_in_parent_folders("marker")\n}\n',
        },
    )
    m = model(root)
    assert m.units["bad"].error and "bad/terragrunt.hcl:" in m.units["bad"].error
    assert m.units["guarded"].error is None
    assert m.units["off"].dependencies == ()
    assert m.units["flagged"].dependencies == ("good",)
    assert m.units["parent/child"].error is None
    assert {"good", "bad"} <= set(select(m, "good/terragrunt.hcl"))
    assert "bad" in select(m, "parent/marker/README.txt")  # affected by any change
    (root / "bad/terragrunt.hcl").unlink()  # Terragrunt cannot parse it either: compare the rest
    agree(root)


def terragrunt_queue(root: Path, *extra: str) -> list[str]:
    """The units Terragrunt's ``find`` lists in ``root`` (``extra``: more flags)."""
    ran = subprocess.run(
        ["terragrunt", "find", "--json", "--no-color", *extra],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "TG_NON_INTERACTIVE": "true"},
    )
    return sorted(item["path"] for item in json.loads(ran.stdout) if item["type"] == "unit")


def terragrunt_plans(root: Path, *extra: str, env: dict[str, str] | None = None) -> dict[str, str]:
    """{unit: result} of Terragrunt's own ``run --all plan`` in ``root`` (its JSON run report).

    A unit the excludes file leaves out is not in the report at all; an ``exclude``
    block shows as ``excluded``.
    """
    report = root.parent / f"{root.name}-report.json"
    subprocess.run(
        [
            "terragrunt",
            "run",
            "--all",
            "--no-color",
            *extra,
            "--report-file",
            str(report),
            "--report-format",
            "json",
            "--",
            "plan",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
        env={
            **os.environ,
            "TG_NON_INTERACTIVE": "true",
            "TF_CLI_CONFIG_FILE": os.devnull,
            **(env or {}),
        },
    )
    return {entry["Name"]: entry["Result"] for entry in json.loads(report.read_text())}


LOCAL_UNIT = 'terraform {\n  source = "."\n}\n'
LOCAL_MODULE = 'resource "terraform_data" "x" {}\n'


def test_exclude_blocks_and_the_excludes_file_leave_out_what_terragrunt_leaves_out(
    tmp_path: Path, tools: None
) -> None:
    units = {
        "plan-off": 'exclude {\n  if      = true\n  actions = ["plan"]\n}\n',
        "apply-off": 'exclude {\n  if      = true\n  actions = ["apply"]\n}\n',
        "all-but-output": 'exclude {\n  if      = true\n  actions = ["all_except_output"]\n}\n',
        "never": 'exclude {\n  if      = false\n  actions = ["all"]\n}\n',
        "flagged": 'feature "off" {\n  default = true\n}\n'
        'exclude {\n  if      = feature.off.value\n  actions = ["all"]\n}\n',
        # a negation and a comparison of a traversal (`local.a.b == ...`)
        "negated": 'feature "on" {\n  default = false\n}\n'
        'exclude {\n  if      = !feature.on.value\n  actions = ["plan"]\n}\n',
        "compared": 'locals {\n  env = { name = "prod" }\n}\n'
        'exclude {\n  if      = local.env.name == "prod"\n  actions = ["plan"]\n}\n',
        "listed": "",
        "deep": "",
        "deep/one": "",
        "kept": "",
    }
    files = {f"{u}/terragrunt.hcl": LOCAL_UNIT + extra for u, extra in units.items()}
    files.update({f"{u}/main.tf": LOCAL_MODULE for u in units})
    # one path per line, trimmed; a folder's line does not reach the units below it
    files[".terragrunt-excludes"] = "# comment\n  listed  \n\n# kept\ndeep/**/one\n"
    root = write(tmp_path / "tree", files)
    m = model(root)
    planned = sorted(p for p, u in m.units.items() if not excludes(u.exclude, "plan"))
    ran = terragrunt_plans(root)
    assert planned == sorted(p for p, result in ran.items() if result != "excluded")
    assert planned == ["apply-off", "deep", "kept", "never"]
    assert sorted(p for p, u in m.units.items() if u.exclude) == sorted(
        set(m.units) - set(planned) | {"apply-off"}
    )
    assert m.units["listed"].exclude == {
        "actions": ["all"],
        "exclude_dependencies": False,
        "where": ".terragrunt-excludes:2",
    }
    assert m.units["plan-off"].exclude["where"] == "plan-off/terragrunt.hcl:4"
    # the excludes file holds even when --filter names the unit
    assert terragrunt_plans(root, "--filter", "{./listed}") == {}
    # find leaves out what the file lists, and nothing else: crosscheck agrees on the rest
    assert "listed" not in terragrunt_queue(root) and "plan-off" in terragrunt_queue(root)
    report = agree(root)
    assert report.excluded == ("deep/one", "listed")


def test_plan_reports_excluded_units_and_plans_the_rest(example_repo: Path) -> None:
    repo = example_repo
    edit(
        repo,
        "live/cloud/registry/terragrunt.hcl",
        "inputs = {",
        'exclude {\n  if                   = true\n  actions              = ["plan", "apply"]\n'
        "  exclude_dependencies = true\n}\n\ninputs = {",
    )
    write(repo, {".terragrunt-excludes": "live/cluster/network\n"})
    commit_all(repo, "exclusions")
    git(repo, "checkout", "--quiet", "-b", "change")
    for unit in ("cloud/registry", "cloud/iam", "cloud/dns", "cluster/network"):
        path = repo / "live" / unit / "terragrunt.hcl"
        path.write_text(path.read_text() + "# changed\n")
    commit_all(repo, "touch four units")
    out = repo.parent / "plans"
    ran = invoke(repo, "plan", "--base", "main", "--out", str(out))
    assert ran.returncode == 0, ran.output
    units = {u["path"]: u for u in json.loads((out / "summary.json").read_text())["units"]}
    assert {p: u["status"] for p, u in units.items()} == {
        "live/cloud/iam": "excluded",
        "live/cloud/dns": "changes",
        "live/cluster/network": "excluded",
        "live/cloud/registry": "excluded",
    }
    assert "live/cloud/registry/terragrunt.hcl:" in units["live/cloud/registry"]["error"]
    assert "exclude_dependencies" in units["live/cloud/iam"]["error"]
    assert ".terragrunt-excludes:1" in units["live/cluster/network"]["error"]
    # Terragrunt itself, asked for the same four units, plans only dns
    from tooling.io.workspace import Workspace

    filters = [
        f"--filter={{./live/{u}}}"
        for u in ("cloud/registry", "cloud/iam", "cloud/dns", "cluster/network")
    ]
    ran = terragrunt_plans(repo, *filters, env=Workspace(repo).tool_env)
    assert ran == {
        "live/cloud/dns": "succeeded",
        "live/cloud/iam": "excluded",
        "live/cloud/registry": "excluded",
    }


# --------------------------------------------------------------------------- 7. layout, root file


def test_find_in_parent_folders_without_argument_looks_for_terragrunt_hcl(
    tmp_path: Path, tools: None
) -> None:
    root = write(
        tmp_path,
        {
            "terragrunt.hcl": "locals {\n  legacy = true\n}\n",
            "root.hcl": "locals {\n  marker = true\n}\n",
            "live/app/terragrunt.hcl": UNIT
            + 'include "root" {\n  path = find_in_parent_folders()\n}\n',
        },
    )
    report = crosscheck.check(root)
    assert report.dangerous == ()
    assert "terragrunt.hcl" in model(root).units["live/app"].reads
    assert "root.hcl" not in model(root).units["live/app"].reads


def test_layout_settings_name_other_live_folders_and_root_file(tmp_path: Path, tools: None) -> None:
    from tooling.io.workspace import Workspace, find_root

    root = write(
        tmp_path,
        {
            "policy.toml": '[layout]\nlive = ["prod", "stage"]\nroot_file = "common.hcl"\n',
            "common.hcl": "locals {\n  x = 1\n}\n",
            "prod/app/terragrunt.hcl": UNIT
            + 'include "root" {\n  path = find_in_parent_folders("common.hcl")\n}\n',
            "stage/app/terragrunt.hcl": UNIT,
            "scratch/terragrunt.hcl": UNIT,  # outside the live folders: not a unit
        },
    )
    assert find_root(root / "prod" / "app") == root.resolve()
    ws = Workspace(root)
    assert sorted(ws.model().units) == ["prod/app", "stage/app"]


def test_doctor_lists_what_an_existing_repository_needs_then_says_ready(tmp_path: Path) -> None:
    # an existing Terragrunt repository: a root terragrunt.hcl (the old style), units under
    # infrastructure/ (not live/), no .tool-versions, lock files ignored, one unit the model
    # cannot evaluate
    repo = write(
        tmp_path / "existing",
        {
            "terragrunt.hcl": 'locals {\n  org = "acme"\n}\n',
            ".gitignore": ".terragrunt-cache/\n.terraform.lock.hcl\n",
            "infrastructure/prod/app/terragrunt.hcl": UNIT
            + 'include "root" {\n  path = find_in_parent_folders()\n}\n',
            "infrastructure/prod/db/terragrunt.hcl": UNIT
            + 'locals {\n  x = read_terragrunt_config("missing.hcl")\n}\n',
        },
    )

    def doctor() -> tuple[int, dict[str, object]]:
        ran = invoke(REPO, "doctor", "--path", str(repo), "--json")
        assert "Traceback" not in ran.output
        return ran.returncode, json.loads(ran.stdout)

    code, report = doctor()
    assert code == 1
    needs = {f["where"]: f["what"] for f in report["findings"] if f["level"] == "needs"}
    assert set(needs) == {"live", "root.hcl", ".tool-versions", ".gitignore"}
    assert "rename it to root.hcl" in needs["root.hcl"]  # the old root terragrunt.hcl is seen
    assert report["units"] == 0  # live/ does not exist: nothing is read yet

    # the adopter names the layout in policy.toml, as doctor says
    write(
        repo, {"policy.toml": '[layout]\nlive = ["infrastructure"]\nroot_file = "terragrunt.hcl"\n'}
    )
    code, report = doctor()
    assert code == 1
    assert (report["live"], report["root_file"], report["units"]) == (
        ["infrastructure"],
        "terragrunt.hcl",
        2,
    )
    findings = {(f["level"], f["where"]): f["what"] for f in report["findings"]}
    assert {w for lv, w in findings if lv == "needs"} == {".tool-versions", ".gitignore"}
    # what the model cannot read, and the include of a file named terragrunt.hcl, are notes
    assert "missing.hcl does not exist" in findings[("note", "infrastructure/prod/db")]
    assert "is a unit of its own" in findings[("note", "infrastructure/prod/app")]

    # pin the tools and commit lock files: nothing blocks adoption, the notes stay
    write(
        repo,
        {
            ".tool-versions": (REPO / ".tool-versions").read_text(),
            ".gitignore": ".terragrunt-cache/\n",
        },
    )
    code, report = doctor()
    assert code == 0
    assert [f["level"] for f in report["findings"]] == ["note", "note"]
    ran = invoke(REPO, "doctor", "--path", str(repo))
    assert ran.returncode == 0 and "ready to adopt" in ran.stderr
    assert "2 units under infrastructure; root file terragrunt.hcl" in ran.stdout


# --------------------------------------------------------------------------- 8. one model


def test_working_tree_and_git_revision_give_the_same_model(tmp_path: Path, tools: None) -> None:
    root = write(
        tmp_path,
        {
            "live/app/terragrunt.hcl": UNIT
            + 'locals {\n  d = find_in_parent_folders("marker")\n}\n',
            "live/marker/README.txt": "x\n",
            "live/app/.terraform/modules/x/terragrunt.hcl": UNIT,
            "live/app/.terragrunt-cache/abc/terragrunt.hcl": UNIT,
        },
    )
    git(root, "init", "--quiet", "--initial-branch=main")
    git(root, "add", "-f", ".")
    git(root, "commit", "--quiet", "-m", "tree")
    on_disk = load(WorkTree(root), None)
    at_head = load(gitw.tree_at(root, "HEAD"), None)
    assert list(on_disk.units) == ["live/app"]
    assert on_disk.units == at_head.units


# --------------------------------------------------------------------------- 9. stacks

CATALOG_UNIT = """# catalog/units/zone: a DNS zone, written into a stack by `terragrunt stack generate`.
include "root" {
  path = find_in_parent_folders("root.hcl")
}

include "tier" {
  path   = find_in_parent_folders("tier.hcl")
  expose = true
}

terraform {
  source = "git::https://git.example.com/platform-modules/terraform-cloudflare-dns.git?ref=${values.version}"
}

inputs = {
  zone_name = values.zone
  records = {
    www = { type = "CNAME", value = "edge.example.net", ttl = 300 }
  }
}
"""

STACK = """# live/cloud/apps: two zones from one catalog unit.
unit "public" {
  source = "../../../catalog/units/zone"
  path   = "public"
  values = {
    version = "v1.1.0"
    zone    = "apps.example.net"
  }
}

unit "internal" {
  source = "../../../catalog/units/zone"
  path   = "internal"
  values = {
    version = "v1.1.0"
    zone    = "internal.example.net"
  }
}
"""

PUBLIC = "live/cloud/apps/.terragrunt-stack/public"
INTERNAL = "live/cloud/apps/.terragrunt-stack/internal"


def affected_paths(repo: Path) -> list[str]:
    ran = invoke(repo, "affected", "--base", "main", "--uncommitted", "--json")
    assert ran.returncode == 0, ran.output
    return [u["path"] for u in json.loads(ran.stdout)["units"]]


def test_a_stack_is_generated_in_a_scratch_copy_read_and_planned(example_repo: Path) -> None:
    from tooling.engine.rules import stackscreen
    from tooling.io.workspace import Workspace

    repo = example_repo
    write(repo, {"catalog/units/zone/terragrunt.hcl": CATALOG_UNIT})
    write(repo, {"live/cloud/apps/terragrunt.stack.hcl": STACK})
    commit_all(repo, "a stack of two zones")

    # the generated units are read like any unit (Terragrunt agrees on the copy)
    ws = Workspace(repo, stack_screen=stackscreen.screen)
    model_ = ws.current_model
    for path in (PUBLIC, INTERNAL):
        unit = model_.units[path]
        assert unit.error is None, unit.error
        assert (unit.tier, unit.ref) == ("cloud", "v1.1.0")
        assert {"live/cloud/apps/terragrunt.stack.hcl", "catalog/units/zone/", "root.hcl"} <= set(
            unit.reads
        )
    generated = ws.generated_stacks
    assert generated is not None and generated.failures == {}
    assert ws.run_dir(PUBLIC) == generated.root / PUBLIC
    agree_live = crosscheck.check(generated.root, ("live",))
    assert agree_live.dangerous == () and agree_live.blind == (), crosscheck.render(agree_live)
    assert not (repo / "live/cloud/apps/.terragrunt-stack").exists()  # the tree is not written

    # a stale generation in place is never what is read or planned
    ran = subprocess.run(
        ["terragrunt", "stack", "generate", "--no-color"],
        cwd=repo / "live/cloud/apps",
        capture_output=True,
        text=True,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    (repo / ".gitignore").write_text((repo / ".gitignore").read_text() + ".terragrunt-stack/\n")
    commit_all(repo, "generated stacks are not committed")
    git(repo, "checkout", "--quiet", "-b", "change")

    # a change to another unit does not select the stack's units
    edit(repo, "live/cloud/dns/terragrunt.hcl", "ttl = 300 }", "ttl = 600 }")
    assert affected_paths(repo) == ["live/cloud/dns"]
    git(repo, "checkout", "--quiet", "--", ".")

    # the values a stack passes select its units, and the plan shows the new value
    edit(repo, "live/cloud/apps/terragrunt.stack.hcl", "internal.example.net", "corp.example.net")
    assert sorted(affected_paths(repo)) == [INTERNAL, PUBLIC]
    out = repo.parent / "plans"
    ran = invoke(repo, "plan", "--base", "main", "--out", str(out))
    assert ran.returncode == 0, ran.output
    summary = json.loads((out / "summary.json").read_text())
    statuses = {u["path"]: u["status"] for u in summary["units"]}
    assert statuses == {PUBLIC: "changes", INTERNAL: "changes"}
    plan_text = (out / "units" / INTERNAL / "plan.txt").read_text()
    assert "corp.example.net" in plan_text and "internal.example.net" not in plan_text
    # the stale folder generated in place still holds the old value: it was not planned
    assert "internal.example.net" in (repo / INTERNAL / "terragrunt.values.hcl").read_text()
    git(repo, "checkout", "--quiet", "--", ".")

    # a change to the catalog unit they are made of selects both
    edit(repo, "catalog/units/zone/terragrunt.hcl", "ttl = 300", "ttl = 900")
    assert sorted(affected_paths(repo)) == [INTERNAL, PUBLIC]


def test_a_stack_that_does_not_generate_keeps_the_error_and_blinds_no_other(
    example_repo: Path,
) -> None:
    from tooling.engine.rules import stackscreen
    from tooling.io.workspace import Workspace

    repo = example_repo
    write(repo, {"catalog/units/zone/terragrunt.hcl": CATALOG_UNIT})
    write(repo, {"live/cloud/apps/terragrunt.stack.hcl": STACK})
    write(
        repo,
        {
            "live/cloud/broken/terragrunt.stack.hcl": 'unit "gone" {\n'
            '  source = "../../../catalog/units/missing"\n  path   = "gone"\n}\n'
        },
    )
    commit_all(repo, "one good stack, one whose catalog unit does not exist")
    ws = Workspace(repo, stack_screen=stackscreen.screen)
    m = ws.current_model
    gone = "live/cloud/broken/.terragrunt-stack/gone"
    assert m.units[PUBLIC].error is None and m.units[INTERNAL].error is None
    assert m.units[gone].error is not None
    assert "`terragrunt stack generate` failed for live/cloud/broken/terragrunt.stack.hcl" in (
        m.units[gone].error
    )
    assert not ws.run_dir(gone).exists()  # its plan fails visibly ("folder not found")
    # any change selects it, with the error as its reason
    edit(repo, "live/cloud/dns/terragrunt.hcl", "ttl = 300 }", "ttl = 600 }")
    assert sorted(affected_paths(repo)) == [gone, "live/cloud/dns"]


STALE_LOCK = """provider "registry.opentofu.org/hashicorp/null" {
  version     = "3.2.3"
  constraints = "3.2.3"
  hashes = [
    "h1:I0Um8UkrMUb81Fxq/dxbr3HLP2cecTH2WMJiwKSrwQY=",
  ]
}
"""


def test_a_plan_never_rewrites_a_committed_lock_file(example_repo: Path, tmp_path: Path) -> None:
    # a lock file whose selections differ from what the configuration needs: `tofu init`
    # would rewrite it; the plan must fail instead, naming the change, and leave it as committed
    lock = example_repo / "live/cloud/dns/.terraform.lock.hcl"
    lock.write_text(STALE_LOCK)
    commit_all(example_repo, "lock file")
    ran = invoke(example_repo, "plan", "--unit", "live/cloud/dns", "--out", str(tmp_path / "out"))
    assert ran.returncode == 1, ran.output
    assert "Traceback" not in ran.output
    assert lock.read_text() == STALE_LOCK
    assert git(example_repo, "status", "--porcelain") == ""
    summary = (tmp_path / "out" / "summary.json").read_text()
    assert "dependency" in summary.lower() or "lock" in summary.lower()
