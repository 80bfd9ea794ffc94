"""Adopting the tooling in a repository laid out otherwise (docs/adopt.md).

Real git repositories built in temporary folders, the real pinned Terragrunt
and OpenTofu, the tasks run as ``iac`` runs them (``python -m tooling``, the
same entry as the console script; one test installs the package's wheel and
runs the installed ``iac``):

- a project root in a git sub-folder (``infra/``): every command names the
  same units with the same (project-relative) names, and a change to a file a
  unit reads through ``get_repo_root()`` outside the project root selects it;
- several live roots (``non-prod/``, ``prod/``), each with its own state
  prefix and layer (``[layout.roots."FOLDER"]``);
- ``get_repo_root()`` and its kin evaluated as Terragrunt 1.1.3 does;
- every task that reads the layout honours ``[layout]``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from infra_fixtures import GIT_ENV, REPO, Invoked, commit_all, edit, git

from tooling.errors import ToolingError
from tooling.io import config
from tooling.model.policy import policy_from
from tooling.model.repo import load
from tooling.model.trees import WorkTree
from tooling.model.units import Change

pytestmark = pytest.mark.e2e

DNS_SOURCE = "git::https://git.example.com/platform-modules/terraform-cloudflare-dns.git?ref=v1.1.0"
NET_SOURCE = "git::https://git.example.com/platform-modules/terraform-proxmox.git//modules/network?ref=v1.1.0"


def iac(cwd: Path, *args: str, timeout: float = 600) -> Invoked:
    """``iac ARGS`` in ``cwd``: the console script's entry (``python -m tooling``)."""
    env = {**os.environ, **GIT_ENV}
    env.pop("GITHUB_ACTIONS", None)
    ran = subprocess.run(
        [sys.executable, "-m", "tooling", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return Invoked(ran.returncode, ran.stdout, ran.stderr)


def _unit(path: Path, source: str, inputs: str, before: str = "") -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / "terragrunt.hcl").write_text(
        'include "root" {\n  path = find_in_parent_folders("root.hcl")\n}\n\n'
        'include "tier" {\n  path   = find_in_parent_folders("tier.hcl")\n  expose = true\n}\n\n'
        f"{before}"
        f'terraform {{\n  source = "{source}"\n}}\n\ninputs = {{\n{textwrap.indent(inputs, "  ")}\n}}\n'
    )


DNS_INPUTS = 'zone_name = "example.net"\nrecords = {}'
NET_INPUTS = 'node_name = "pve-1"\nbridge = "vmbr1"\nvlan_id = 40\ncidr = "10.40.0.0/24"'
#: a unit that reads a file outside the project root through get_repo_root()
SHARED_READ = (
    'locals {\n  shared = read_terragrunt_config("${get_repo_root()}/shared/dns.hcl")\n}\n\n'
)


def subfolder_repo(top: Path) -> Path:
    """A git repository whose project root is ``infra/`` (the example's root.hcl,
    policy.toml, tiers and two units); ``shared/dns.hcl`` at git's top level is read by
    ``live/cloud/dns`` through ``get_repo_root()``. Returns the project root."""
    infra = top / "infra"
    infra.mkdir(parents=True)
    for name in ("root.hcl", "policy.toml", ".tool-versions", ".gitignore"):
        shutil.copy2(REPO / name, infra / name)
    for tier in ("cloud", "cluster"):
        (infra / "live" / tier).mkdir(parents=True)
        shutil.copy2(REPO / "live" / tier / "tier.hcl", infra / "live" / tier / "tier.hcl")
    _unit(infra / "live/cloud/dns", DNS_SOURCE, DNS_INPUTS, SHARED_READ)
    _unit(infra / "live/cluster/network", NET_SOURCE, NET_INPUTS)
    (top / "shared").mkdir()
    (top / "shared" / "dns.hcl").write_text("locals {\n  ttl = 300\n}\n")
    (top / "README.md").write_text("the company's monorepo\n")
    git(top, "init", "--quiet", "--initial-branch=main")
    commit_all(top, "infrastructure in infra/")
    git(top, "checkout", "--quiet", "-b", "change")
    return infra


def _affected_units(ran: Invoked) -> list[str]:
    assert ran.returncode == 0, ran.output
    return [u["path"] for u in json.loads(ran.stdout)["units"]]


def _matrix_units(ran: Invoked) -> list[str]:
    assert ran.returncode == 0, ran.output
    doc = json.loads(ran.stdout)
    return sorted(u for entry in doc["include"] for u in entry["units"])


def _plan_units(infra: Path, ran: Invoked, out: Path) -> list[str]:
    assert ran.returncode == 0, ran.output
    summary = json.loads((out / "summary.json").read_text())
    return sorted(u["path"] for u in summary["units"])


def test_a_project_root_in_a_git_sub_folder_names_the_same_units_in_every_command(
    tmp_path: Path, tools: None
) -> None:
    infra = subfolder_repo(tmp_path / "mono")
    edit(infra, "live/cluster/network/terragrunt.hcl", "vlan_id = 40", "vlan_id = 41")
    commit_all(infra, "network: another VLAN")
    # from a folder below the project root, as git works from any folder below its top
    below = infra / "live" / "cluster"

    doctor = iac(below, "doctor", "--json")
    assert doctor.returncode == 0, doctor.output
    assert json.loads(doctor.stdout)["units"] == 2

    units = iac(below, "units", "--json")
    assert units.returncode == 0, units.output
    listed = {u["path"]: u for u in json.loads(units.stdout)["units"]}
    assert sorted(listed) == ["live/cloud/dns", "live/cluster/network"]
    assert all(u["error"] is None for u in listed.values()), listed
    assert "../shared/dns.hcl" in listed["live/cloud/dns"]["reads"]

    check = iac(below, "check", "--json")
    assert check.returncode == 0, check.output
    assert json.loads(check.stdout)["violations"] == []

    expected = ["live/cluster/network"]
    assert (
        _affected_units(iac(below, "affected", "--base", "main", "--committed", "--json"))
        == expected
    )
    assert _matrix_units(iac(below, "matrix", "--base", "main")) == expected
    out = tmp_path / "plans"
    assert (
        _plan_units(infra, iac(below, "plan", "--base", "main", "--out", str(out)), out) == expected
    )


def test_a_change_outside_the_project_root_read_through_get_repo_root_selects_its_readers(
    tmp_path: Path, tools: None
) -> None:
    infra = subfolder_repo(tmp_path / "mono")
    top = infra.parent
    edit(top, "shared/dns.hcl", "ttl = 300", "ttl = 60")
    edit(top, "README.md", "monorepo", "monorepo, with a README change nothing reads")
    commit_all(top, "shared: shorter TTL")

    affected = iac(infra, "affected", "--base", "main", "--committed", "--json")
    assert _affected_units(affected) == ["live/cloud/dns"]
    (unit,) = json.loads(affected.stdout)["units"]
    assert unit["reasons"] == ["../shared/dns.hcl"] and unit["error"] is None
    assert _matrix_units(iac(infra, "matrix", "--base", "main")) == ["live/cloud/dns"]
    out = tmp_path / "plans"
    ran = iac(infra, "plan", "--base", "main", "--out", str(out))
    assert _plan_units(infra, ran, out) == ["live/cloud/dns"]

    # the working tree's changes too (`affected --uncommitted`, what `plan` plans)
    edit(top, "shared/dns.hcl", "ttl = 60", "ttl = 30")
    git(top, "checkout", "--quiet", "-b", "again")
    now = iac(infra, "affected", "--base", "HEAD", "--json")
    assert _affected_units(now) == ["live/cloud/dns"]


def two_roots_repo(top: Path) -> Path:
    """``non-prod/`` and ``prod/``, each a live root with its own state prefix and layer;
    ``common/prod.hcl`` read by ``prod/dns`` through ``get_repo_root()``."""
    top.mkdir(parents=True)
    for name in ("root.hcl", ".tool-versions", ".gitignore"):
        shutil.copy2(REPO / name, top / name)
    policy = (REPO / "policy.toml").read_text()
    policy += textwrap.dedent(
        """
        [layout]
        root_file = "root.hcl"

        [layout.roots."non-prod"]
        state_prefix = "non-prod/"
        executor = "hosted"

        [layout.roots."prod"]
        state_prefix = "prod/"
        executor = "hosted"
        may_depend_on = ["prod", "non-prod"]
        """
    )
    (top / "policy.toml").write_text(policy)
    for env in ("non-prod", "prod"):
        (top / env).mkdir()
        (top / env / "tier.hcl").write_text(
            f'locals {{\n  tier = "{env}"\n  executor = "hosted"\n  gate = "auto"\n  plan_on_pr = true\n}}\n'
        )
    read = 'locals {\n  env = read_terragrunt_config("${get_repo_root()}/common/prod.hcl")\n}\n\n'
    _unit(top / "non-prod/dns", DNS_SOURCE, DNS_INPUTS)
    _unit(top / "prod/dns", DNS_SOURCE, DNS_INPUTS, read)
    (top / "common").mkdir()
    (top / "common" / "prod.hcl").write_text('locals {\n  zone = "example.net"\n}\n')
    git(top, "init", "--quiet", "--initial-branch=main")
    commit_all(top, "two environments")
    git(top, "checkout", "--quiet", "-b", "change")
    return top


def test_two_live_roots_each_with_its_own_state_prefix_pass_check_and_agree(
    tmp_path: Path, tools: None
) -> None:
    root = two_roots_repo(tmp_path / "envs")
    check = iac(root, "check", "--json")
    assert check.returncode == 0, check.output
    assert json.loads(check.stdout)["violations"] == []

    units = iac(root / "prod", "units", "--json")
    assert units.returncode == 0, units.output
    keys = {u["path"]: u["state_key"] for u in json.loads(units.stdout)["units"]}
    assert keys == {
        "non-prod/dns": "non-prod/dns/terraform.tfstate",
        "prod/dns": "prod/dns/terraform.tfstate",
    }

    edit(root, "common/prod.hcl", "example.net", "example.org")
    commit_all(root, "prod: another zone")
    assert _affected_units(iac(root, "affected", "--base", "main", "--committed", "--json")) == [
        "prod/dns"
    ]
    assert _matrix_units(iac(root, "matrix", "--base", "main")) == ["prod/dns"]
    out = tmp_path / "plans"
    assert _plan_units(root, iac(root, "plan", "--base", "main", "--out", str(out)), out) == [
        "prod/dns"
    ]


def test_a_state_key_is_checked_against_its_own_roots_prefix(tmp_path: Path, tools: None) -> None:
    root = two_roots_repo(tmp_path / "envs")
    # prod's units keep their state under non-prod's prefix: the wrong root's prefix
    edit(
        root,
        "policy.toml",
        '[layout.roots."prod"]\nstate_prefix = "prod/"',
        '[layout.roots."prod"]\nstate_prefix = "production/"',
    )
    check = iac(root, "check", "--json")
    assert check.returncode == 1, check.output
    found = [(v["file"], v["rule"]) for v in json.loads(check.stdout)["violations"]]
    assert found == [("prod/dns/terragrunt.hcl", "state-key-prefix")]
    assert "'production/'" in json.loads(check.stdout)["violations"][0]["message"]


def test_opentofu_code_in_a_live_root_other_than_live_is_refused_by_check(
    tmp_path: Path, tools: None
) -> None:
    root = two_roots_repo(tmp_path / "envs")
    (root / "prod" / "dns" / "extra.tf").write_text('resource "terraform_data" "x" {}\n')
    check = iac(root, "check", "--json")
    assert check.returncode == 1, check.output
    found = {(v["file"], v["rule"]) for v in json.loads(check.stdout)["violations"]}
    assert ("prod/dns/extra.tf", "config-only-file") in found


@pytest.mark.parametrize(
    ("roots", "error"),
    [
        ('[layout.roots."prod"]\nstate_prefx = "prod/"\n', "has unknown key(s) state_prefx"),
        ('[layout.roots."prod"]\nstate_prefix = 3\n', "state_prefix must be a key prefix"),
        ('[layout.roots."prod"]\ntier = 3\n', 'tier must be a tier\'s name, e.g. "prod"'),
        ('[layout.roots."../up"]\nstate_prefix = "up/"\n', "must be a folder inside"),
        (
            '[layout.roots."prod"]\nmay_depend_on = ["prod"]\n',
            "may_depend_on needs executor",
        ),
        (
            '[layout.roots."prod"]\nexecutor = "hosted"\nmay_depend_on = ["qa"]\n',
            "may_depend_on names 'qa'",
        ),
    ],
)
def test_a_broken_live_root_table_is_refused_with_its_line(
    tmp_path: Path, roots: str, error: str
) -> None:
    (tmp_path / "root.hcl").write_text("locals {}\n")
    (tmp_path / "prod").mkdir()
    (tmp_path / "policy.toml").write_text(f'[layout]\nroot_file = "root.hcl"\n\n{roots}')
    ran = iac(tmp_path, "units")
    assert ran.returncode == 1, ran.output
    line = ran.stderr.strip().splitlines()[-1]
    assert line.startswith("error: ") and "policy.toml:4: [layout.roots." in line, line
    assert error in line


def test_today_s_policy_without_live_roots_reads_as_before() -> None:
    assert policy_from({}).layout.roots == ()
    layout = policy_from({"layout": {"live": ["a"], "roots": {"b": {"state_prefix": "b"}}}}).layout
    assert layout.live == ("a", "b")
    assert layout.root_of("b/x") is not None and layout.root_of("a/x") is None


# --------------------------------------------------------------------------- the translation


def test_git_paths_are_translated_to_the_project_root_once() -> None:
    from tooling.model.gitpaths import changes_to_project, in_repository, to_project

    assert to_project("infra/live/a/terragrunt.hcl", "infra") == "live/a/terragrunt.hcl"
    assert to_project("shared/dns.hcl", "infra/") == "../shared/dns.hcl"
    assert to_project("infra2/x", "infra") == "../infra2/x"
    assert to_project("a/b/c", "") == "a/b/c"
    moved = changes_to_project([Change("R", "infra/new/x", "old/x")], "infra")
    assert moved == [Change("R", "new/x", "../old/x")]
    assert in_repository("../shared/x", "infra") and not in_repository("../../x", "infra")


def test_get_repo_root_and_its_kin_evaluate_as_terragrunt_does(tmp_path: Path, tools: None) -> None:
    """The model reads what Terragrunt reads: ``terragrunt render`` of the same unit
    succeeds (each file exists where Terragrunt looked), and the model records the same
    files, relative to the project root."""
    top = tmp_path / "mono"
    app = top / "infra" / "app"
    app.mkdir(parents=True)
    (top / "infra" / "root.hcl").write_text("locals {}\n")
    (top / "shared").mkdir()
    (top / "shared" / "a.hcl").write_text("locals {\n  a = 1\n}\n")
    (top / "shared" / "b.txt").write_text("b\n")
    (app / "c.txt").write_text("c\n")
    (app / "terragrunt.hcl").write_text(
        textwrap.dedent(
            """\
            include "root" {
              path = find_in_parent_folders("root.hcl")
            }
            locals {
              a = read_terragrunt_config("${get_repo_root()}/shared/a.hcl")
              b = file("${get_path_to_repo_root()}/shared/b.txt")
              c = file("${get_repo_root()}/${get_path_from_repo_root()}/c.txt")
            }
            inputs = {
              root = get_repo_root()
              from = get_path_from_repo_root()
              to   = get_path_to_repo_root()
            }
            """
        )
    )
    git(top, "init", "--quiet", "--initial-branch=main")
    commit_all(top, "probe")
    rendered = subprocess.run(
        ["terragrunt", "render", "--format", "json", "--non-interactive"],
        cwd=app,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **GIT_ENV},
    )
    inputs = json.loads(rendered.stdout)["inputs"]
    assert inputs == {"root": str(top.resolve()), "from": "infra/app", "to": "../.."}

    from tooling.io import git as gitio

    model = load(WorkTree(top / "infra", ".", gitio.prefix(top / "infra")))
    unit = model.units["app"]
    assert unit.error is None, unit.error
    assert {"../shared/a.hcl", "../shared/b.txt", "app/c.txt"} <= set(unit.reads)


# --------------------------------------------------------------------------- [layout] everywhere


def relaid_example(dest: Path) -> Path:
    """The example tree with its units under ``terragrunt/`` instead of ``live/``."""
    dest.mkdir(parents=True)
    for name in ("root.hcl", ".tool-versions", ".gitignore"):
        shutil.copy2(REPO / name, dest / name)
    shutil.copytree(
        REPO / "live", dest / "terragrunt", ignore=shutil.ignore_patterns(".terragrunt-cache")
    )
    policy = (REPO / "policy.toml").read_text().replace('"live/', '"terragrunt/')
    policy = policy.replace(
        'foundation_state_prefix = "live/"', 'foundation_state_prefix = "terragrunt/"'
    )
    (dest / "policy.toml").write_text(policy + '\n[layout]\nlive = ["terragrunt"]\n')
    git(dest, "init", "--quiet", "--initial-branch=main")
    commit_all(dest, "the example, under terragrunt/")
    return dest


EXAMPLE_UNITS = {
    "terragrunt/cloud/dns",
    "terragrunt/cloud/iam",
    "terragrunt/cloud/registry",
    "terragrunt/cluster/network",
    "terragrunt/cluster/vms",
    "terragrunt/cluster/os",
    "terragrunt/cluster/gitops",
}


def _named(text: str) -> set[str]:
    return {u for u in EXAMPLE_UNITS if u in text}


#: every task that reads the layout, with what shows it read the units under terragrunt/
LAYOUT_TASKS = {
    "units": (["units", "--json"], lambda out: {u["path"] for u in json.loads(out)["units"]}),
    "affected": (
        ["affected", "--base", "HEAD", "--json"],
        lambda out: {u["path"] for u in json.loads(out)["units"]},
    ),
    "graph": (["graph"], _named),
    "matrix": (
        ["matrix", "--base", "HEAD"],
        lambda out: {u for e in json.loads(out)["include"] for u in e["units"]},
    ),
    "check": (
        ["check", "--json"],
        lambda out: set() if json.loads(out)["violations"] else EXAMPLE_UNITS,
    ),
    "doctor": (
        ["doctor", "--json"],
        lambda out: EXAMPLE_UNITS if json.loads(out)["units"] == 7 else set(),
    ),
    "outdated": (
        ["outdated", "--json"],
        lambda out: {u["path"] for m in json.loads(out)["modules"] for u in m["units"]},
    ),
}


@pytest.mark.parametrize("task", sorted(LAYOUT_TASKS))
def test_every_task_reads_the_units_where_the_layout_puts_them(
    tmp_path: Path, tools: None, task: str
) -> None:
    root = relaid_example(tmp_path / "relaid")
    if task in ("affected", "matrix"):
        # every unit reads root.hcl: a change there selects all of them
        edit(root, "root.hcl", "# root.hcl:", "# root.hcl (edited):")
    args, units_of = LAYOUT_TASKS[task]
    ran = iac(root, *args)
    assert ran.returncode == 0, ran.output
    assert units_of(ran.stdout) == EXAMPLE_UNITS, ran.output


def test_move_unit_takes_the_new_folder_under_the_layouts_live_folder(tmp_path: Path) -> None:
    from tooling.commands.move import plan_move

    root = relaid_example(tmp_path / "relaid")
    policy = config.read_policy(root)
    move = plan_move(root, "terragrunt/cloud/dns", "terragrunt/cloud/zone", policy)
    assert (move.old_key, move.new_key) == (
        "terragrunt/cloud/dns/terraform.tfstate",
        "terragrunt/cloud/zone/terraform.tfstate",
    )
    with pytest.raises(ToolingError, match=r"under a live folder \(terragrunt; policy.toml"):
        plan_move(root, "terragrunt/cloud/dns", "live/cloud/zone", policy)


def test_outdated_says_why_it_lists_nothing_when_no_unit_is_found(tmp_path: Path) -> None:
    root = relaid_example(tmp_path / "relaid")
    edit(root, "policy.toml", 'live = ["terragrunt"]', 'live = ["elsewhere"]')
    (root / "elsewhere").mkdir()
    ran = iac(root, "outdated", "--json")
    assert json.loads(ran.stdout)["modules"] == []
    assert "no unit found under elsewhere" in ran.stderr


# --------------------------------------------------------------------------- the installed script


def test_the_installed_iac_script_ships_its_data_and_runs_in_another_repository(
    tmp_path: Path, tools: None
) -> None:
    wheels = tmp_path / "wheels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "-w",
            str(wheels),
            str(REPO),
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = wheels.glob("tooling-*.whl")
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    installed = target / "tooling"
    assert (installed / "schemas" / "units.schema.json").is_file()
    assert any((installed / "sandbox_catalog").rglob("main.tf"))
    assert (installed / "tasks" / "__init__.py").is_file()
    # the guard's source, which `iac setup` builds where the repository runs
    assert (installed / "guard" / "main.go").is_file()
    assert (installed / "guard" / "go.mod").is_file()
    script = target / "bin" / "iac"
    env = {**os.environ, **GIT_ENV, "PYTHONPATH": str(target)}
    helped = subprocess.run(
        [str(script), "--help"], capture_output=True, text=True, env=env, check=False
    )
    assert helped.returncode == 0 and "iac" in helped.stdout, helped.stderr
    listed = subprocess.run(
        [str(script), "--list"], capture_output=True, text=True, env=env, check=False
    )
    assert {"plan", "units", "doctor", "outdated"} <= set(listed.stdout.split())

    infra = subfolder_repo(tmp_path / "mono")
    ran = subprocess.run(
        [str(script), "units", "--json"],
        cwd=infra / "live",
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert [u["path"] for u in json.loads(ran.stdout)["units"]] == [
        "live/cloud/dns",
        "live/cluster/network",
    ]
    # the tasks came from the installed copy, not from this source tree
    where = subprocess.run(
        [sys.executable, "-c", "import tooling.tasks as t; print(t.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert where.stdout.strip().startswith(str(target))


# --------------------------------------------------------------------------- Gruntwork's live example

GRUNTWORK_LAYOUT = """\
[layout]
root_file = "root.hcl"

[layout.roots."non-prod"]
state_prefix = "non-prod/"
executor = "hosted"

[layout.roots."prod"]
state_prefix = "prod/"
executor = "hosted"

[check]
allowed_module_sources = ["github.com/gruntwork-io/*"]

[executors.hosted]
runs_on = ["ubuntu-latest"]
"""

GRUNTWORK_CHANGES = {
    "_envcommon/mysql.hcl": [
        "non-prod/us-east-1/qa/mysql",
        "non-prod/us-east-1/stage/mysql",
        "prod/us-east-1/prod/mysql",
    ],
    "non-prod/account.hcl": [
        "non-prod/us-east-1/qa/mysql",
        "non-prod/us-east-1/qa/webserver-cluster",
        "non-prod/us-east-1/stage/mysql",
        "non-prod/us-east-1/stage/webserver-cluster",
    ],
    "prod/us-east-1/prod/env.hcl": [
        "prod/us-east-1/prod/mysql",
        "prod/us-east-1/prod/webserver-cluster",
    ],
    "non-prod/us-east-1/qa/webserver-cluster/terragrunt.hcl": [
        "non-prod/us-east-1/qa/webserver-cluster"
    ],
    "README.md": [],
}


def test_gruntworks_live_example_with_two_live_roots_passes_check_and_affected_is_right(
    tmp_path: Path,
) -> None:
    """Offline: only the commands that fetch nothing (its modules are on GitHub)."""
    from test_crosscheck import _corpus

    repo = tmp_path / "gruntwork"
    shutil.copytree(_corpus("terragrunt-infrastructure-live-example"), repo, symlinks=True)
    (repo / "policy.toml").write_text(GRUNTWORK_LAYOUT)
    shutil.copy2(REPO / ".tool-versions", repo / ".tool-versions")
    git(repo, "init", "--quiet", "--initial-branch=main")
    commit_all(repo, "Gruntwork's live example")

    check = iac(repo, "check", "--json")
    assert check.returncode == 0, check.output
    assert json.loads(check.stdout)["violations"] == []
    for changed, expected in GRUNTWORK_CHANGES.items():
        with (repo / changed).open("a") as fh:
            fh.write("\n# changed\n")
        ran = iac(repo, "affected", "--base", "HEAD", "--json")
        assert _affected_units(ran) == expected, changed
        git(repo, "checkout", "--quiet", "--", changed)


def test_a_project_root_named_with_spaces_and_a_command_substitution_works(
    tmp_path: Path,
) -> None:
    top = tmp_path / "mono"
    infra = top / "my infra $(touch pwned)"
    (infra / "app").mkdir(parents=True)
    (top / "shared").mkdir()
    (top / "shared" / "a.hcl").write_text("locals {}\n")
    (infra / "policy.toml").write_text('[layout]\nlive = ["."]\n')
    shutil.copy2(REPO / ".tool-versions", infra / ".tool-versions")
    (infra / "root.hcl").write_text(
        'locals {\n  s = read_terragrunt_config("${get_repo_root()}/shared/a.hcl")\n}\n'
    )
    (infra / "app" / "terragrunt.hcl").write_text(
        'include "root" {\n  path = find_in_parent_folders("root.hcl")\n}\n'
    )
    git(top, "init", "--quiet", "--initial-branch=main")
    commit_all(top, "a hostile folder name")
    with (top / "shared" / "a.hcl").open("a") as fh:
        fh.write("# changed\n")
    ran = iac(infra / "app", "affected", "--base", "HEAD", "--json")
    assert _affected_units(ran) == ["app"]
    assert json.loads(ran.stdout)["units"][0]["reasons"] == ["../shared/a.hcl"]
    assert not list(tmp_path.rglob("pwned"))
