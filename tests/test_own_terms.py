"""Adopting a repository on its own terms: doctor's block, pasted as printed, leaves
``check`` nothing to say about the tooling's own conventions (prefixes, layers,
tiers); a project root below git's top level is found from the top; blind units
and stacks are planned; the messages name what the user typed and where.

Real parts only: throwaway git repositories laid out as adopted ones are (a project
root ``infra/live`` with a root ``terragrunt.hcl``, ``dev/`` and ``prod/``, the pins
at git's top level; a catalog of units and ``terragrunt.stack.hcl`` files), the
``iac`` entry in a separate process, real git and Terragrunt.
"""

from __future__ import annotations

import json
import shutil
import textwrap
import tomllib
from pathlib import Path

import pytest
from infra_fixtures import REPO, commit_all, edit, git
from test_adopt_layouts import iac

from tooling.errors import ToolingError
from tooling.io import toolchain

pytestmark = pytest.mark.e2e

APP_SOURCE = "git::https://git.example.com/platform-modules/app.git?ref=v1.0.0"

ROOT_TERRAGRUNT = textwrap.dedent(
    """\
    remote_state {
      backend = "s3"
      generate = {
        path      = "backend.tf"
        if_exists = "overwrite_terragrunt"
      }
      config = {
        bucket = "acme-state"
        key    = "${path_relative_to_include()}/terraform.tfstate"
        region = "us-east-1"
      }
    }
    """
)


def _app(folder: Path, name: str, before: str = "") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "terragrunt.hcl").write_text(
        'include "root" {\n  path = find_in_parent_folders("terragrunt.hcl")\n}\n\n'
        f'{before}terraform {{\n  source = "{APP_SOURCE}"\n}}\n\ninputs = {{\n  name = "{name}"\n}}\n'
    )


def envs_repo(top: Path) -> Path:
    """A git repository whose project root is ``infra/live``: a root ``terragrunt.hcl``
    keying state by the unit's path, ``dev/app``, ``prod/app`` and
    ``prod/us-east-1/db``; ``.tool-versions`` at git's top level. Returns the top."""
    live = top / "infra" / "live"
    live.mkdir(parents=True)
    shutil.copy2(REPO / ".tool-versions", top / ".tool-versions")
    (live / "terragrunt.hcl").write_text(ROOT_TERRAGRUNT)
    _app(live / "dev" / "app", "dev")
    _app(live / "prod" / "app", "prod")
    _app(live / "prod" / "us-east-1" / "db", "db")
    (top / "README.md").write_text("the company's monorepo\n")
    git(top, "init", "--quiet", "--initial-branch=main")
    commit_all(top, "environments in infra/live")
    return top


def _violations(ran: object) -> list[tuple[str, str]]:
    doc = json.loads(ran.stdout)  # type: ignore[attr-defined]
    return [(v["file"], v["rule"]) for v in doc["violations"]]


# --- 3: no noise from the tooling's own defaults ------------------------------------


def test_a_layout_naming_two_live_roots_passes_check_without_the_tooling_s_own_defaults(
    tmp_path: Path, tools: None
) -> None:
    """No ``live/`` exists: the state prefix, the layers and the tiers follow [layout]."""
    live = envs_repo(tmp_path / "mono") / "infra" / "live"
    (live / "policy.toml").write_text(
        '[layout]\nlive = ["dev", "prod"]\nroot_file = "terragrunt.hcl"\n'
    )
    check = iac(live, "check", "--json")
    assert _violations(check) == [], check.output
    assert check.returncode == 0, check.output

    units = iac(live, "units", "--json")
    tiers = {u["path"]: u["tier"] for u in json.loads(units.stdout)["units"]}
    # each live root is an environment: the tier of its units, not the folder below it
    assert tiers == {"dev/app": "dev", "prod/app": "prod", "prod/us-east-1/db": "prod"}


def test_foundation_state_prefix_takes_one_prefix_per_live_root(
    tmp_path: Path, tools: None
) -> None:
    live = envs_repo(tmp_path / "mono") / "infra" / "live"
    policy = '[layout]\nlive = ["dev", "prod"]\nroot_file = "terragrunt.hcl"\n\n[check]\n'
    (live / "policy.toml").write_text(policy + 'foundation_state_prefix = ["dev/", "prod/"]\n')
    check = iac(live, "check", "--json")
    assert check.returncode == 0, check.output
    assert _violations(check) == []

    (live / "policy.toml").write_text(policy + 'foundation_state_prefix = ["dev/"]\n')
    check = iac(live, "check", "--json")
    assert check.returncode == 1, check.output
    assert sorted(_violations(check)) == [
        ("prod/app/terragrunt.hcl", "state-key-prefix"),
        ("prod/us-east-1/db/terragrunt.hcl", "state-key-prefix"),
    ]


def _roots_repo(top: Path, key: str) -> Path:
    """A repository of two live roots, as public ones are laid out: ``core/net`` and
    ``app/web``, which depends on ``core/net`` (one state per unit, ``key`` in root.hcl's
    ``remote_state``)."""
    top.mkdir(parents=True)
    shutil.copy2(REPO / ".tool-versions", top / ".tool-versions")
    (top / "root.hcl").write_text(ROOT_TERRAGRUNT.replace(KEY, key))
    (top / "core" / "net").mkdir(parents=True)
    (top / "core" / "net" / "terragrunt.hcl").write_text(
        'include "root" {\n  path = find_in_parent_folders("root.hcl")\n}\n\n'
        f'terraform {{\n  source = "{APP_SOURCE}"\n}}\n\ninputs = {{\n  name = "net"\n}}\n'
    )
    (top / "app" / "web").mkdir(parents=True)
    (top / "app" / "web" / "terragrunt.hcl").write_text(
        'include "root" {\n  path = find_in_parent_folders("root.hcl")\n}\n\n'
        'dependency "net" {\n  config_path = "../../core/net"\n'
        '  mock_outputs = { name = "mock" }\n'
        '  mock_outputs_allowed_terraform_commands = ["validate", "plan"]\n}\n\n'
        f'terraform {{\n  source = "{APP_SOURCE}"\n}}\n\n'
        "inputs = {\n  name = dependency.net.outputs.name\n}\n"
    )
    git(top, "init", "--quiet", "--initial-branch=main")
    commit_all(top, "two live roots")
    return top


KEY = "${path_relative_to_include()}/terraform.tfstate"


def _block(doctor: object) -> str:
    lines = doctor.stdout.splitlines()  # type: ignore[attr-defined]
    return "\n".join(lines[lines.index("[layout]") :]) + "\n"


def test_doctor_s_roots_declare_the_dependencies_across_roots_the_units_have(
    tmp_path: Path, tools: None
) -> None:
    """Each root doctor suggests is a layer (it names an executor): the roots its units
    depend on today are its ``may_depend_on``, so check has no layer violation; a new
    dependency across roots is one, for review."""
    top = _roots_repo(tmp_path / "roots", KEY)
    block = _block(iac(top, "doctor"))
    roots = tomllib.loads(block)["layout"]["roots"]
    assert roots["app"]["may_depend_on"] == ["app", "core"], block
    assert "may_depend_on" not in roots["core"], block
    (top / "policy.toml").write_text(block)
    commit_all(top, "adopted: doctor's block")
    check = iac(top, "check", "--json")
    assert _violations(check) == [], check.output
    assert check.returncode == 0

    (top / "core" / "dns").mkdir()
    (top / "core" / "dns" / "terragrunt.hcl").write_text(
        (top / "app" / "web" / "terragrunt.hcl")
        .read_text()
        .replace("../../core/net", "../../app/web")
    )
    check = iac(top, "check", "--json")
    assert check.returncode == 1
    assert _violations(check) == [("core/dns/terragrunt.hcl", "layer-dependency")], check.output


def test_doctor_suggests_the_state_prefix_every_key_starts_with(
    tmp_path: Path, tools: None
) -> None:
    """State kept one object per unit under ``terraform/`` (not under each live root):
    doctor's block names that prefix, so check's state-key rule holds the keys to it."""
    top = _roots_repo(tmp_path / "prefixed", "terraform/${path_relative_to_include()}.tfstate")
    block = _block(iac(top, "doctor"))
    suggested = tomllib.loads(block)
    assert suggested["check"] == {"foundation_state_prefix": "terraform/"}, block
    assert "roots" not in suggested["layout"], block
    (top / "policy.toml").write_text(block)
    commit_all(top, "adopted: doctor's block")
    check = iac(top, "check", "--json")
    assert _violations(check) == [], check.output
    assert "[check]" not in _block(iac(top, "doctor"))  # declared now: not suggested again

    # a unit keeping its state elsewhere is still found
    web = top / "app" / "web" / "terragrunt.hcl"
    web.write_text(
        web.read_text()
        + '\nremote_state {\n  backend = "s3"\n'
        + '  config = {\n    bucket = "acme-state"\n    key    = "other/web.tfstate"\n'
        + '    region = "us-east-1"\n  }\n}\n'
    )
    check = iac(top, "check", "--json")
    assert ("app/web/terragrunt.hcl", "state-key-prefix") in _violations(check), check.output

    # a policy.toml with a [check] table of its own: the line to add, not a second table
    git(top, "checkout", "--quiet", "--", "app/web/terragrunt.hcl")
    (top / "policy.toml").write_text('[check]\napp_state_prefix = "apps/"\n')
    block = _block(iac(top, "doctor"))
    assert "\n[check]" not in block, block
    assert '# add to policy.toml\'s [check] table: foundation_state_prefix = "terraform/"' in block


# --- 5: a project root below git's top level ----------------------------------------


def test_doctor_at_git_s_top_level_names_every_other_project_root_it_leaves_out(
    tmp_path: Path, tools: None
) -> None:
    """Two project roots side by side (``infra/`` and ``labs/``, each a root
    ``terragrunt.hcl`` its units include): the first is suggested, the other named."""
    top = tmp_path / "two"
    for root, unit in (("infra", "api"), ("labs", "vpc/iac")):
        (top / root).mkdir(parents=True)
        (top / root / "terragrunt.hcl").write_text(ROOT_TERRAGRUNT)
        _app(top / root / unit, unit)
    shutil.copy2(REPO / ".tool-versions", top / ".tool-versions")
    git(top, "init", "--quiet", "--initial-branch=main")
    commit_all(top, "two project roots")
    doc = json.loads(iac(top, "doctor", "--json").stdout)
    found = {f["where"]: (f["level"], f["what"]) for f in doc["findings"]}
    assert found["infra"][0] == "needs" and "the project root" in found["infra"][1]
    assert found["labs"][0] == "note", doc["findings"]
    assert "another project root" in found["labs"][1] and "run doctor in labs/" in found["labs"][1]
    assert doc["suggested_layout"]["live"] == ["api"]


def test_the_pins_at_git_s_top_level_serve_a_project_root_below_it(
    tmp_path: Path, tools: None
) -> None:
    top = envs_repo(tmp_path / "mono")
    live = top / "infra" / "live"
    doctor = iac(live, "doctor", "--json")
    assert not [f for f in json.loads(doctor.stdout)["findings"] if ".tool-versions" in f["where"]]
    assert toolchain.pin_file(live) == top / ".tool-versions"


def test_a_missing_tool_versions_asks_only_for_the_tools_a_run_needs(tmp_path: Path) -> None:
    git(tmp_path, "init", "--quiet")
    with pytest.raises(ToolingError) as caught:
        toolchain.read_pins(tmp_path)
    message = str(caught.value)
    assert "opentofu and terragrunt" in message
    assert "actionlint" not in message and "act" not in message.split()


# --- 8: messages ------------------------------------------------------------------


def test_a_backend_generated_by_remote_state_is_declared_by_the_root_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A root terragrunt.hcl's ``remote_state { generate = ... }`` declares backend.tf:
    a plan keeps it; a generated file no block declares is removed, naming the root file."""
    from tooling.engine.rules import workcopies
    from tooling.io import config

    (tmp_path / "terragrunt.hcl").write_text(ROOT_TERRAGRUNT)
    (tmp_path / "policy.toml").write_text(
        '[layout]\nlive = ["dev"]\nroot_file = "terragrunt.hcl"\n'
    )
    copy = tmp_path / "dev" / "app" / workcopies.CACHE / "abc" / "def"
    (copy / ".terraform").mkdir(parents=True)
    for name in ("backend.tf", "old.tf"):
        (copy / name).write_text(f"{workcopies.SIGNATURE} 1234\n")
    root_file = config.read_policy(tmp_path).layout.root_file
    workcopies.prepare(
        [("dev/app", tmp_path / "dev" / "app")], config.load(), tmp_path, root_file=root_file
    )
    assert (copy / "backend.tf").is_file()
    assert not (copy / "old.tf").exists()
    said = capsys.readouterr()
    assert "removed old.tf" in said.out + said.err
    assert "backend.tf" not in said.out + said.err
    assert "a generated file terragrunt.hcl does not declare" in said.out + said.err


def test_doctor_at_git_s_top_level_suggests_the_project_root_below_and_commands_run_there(
    tmp_path: Path, tools: None
) -> None:
    top = envs_repo(tmp_path / "mono")
    doctor = iac(top, "doctor")
    assert "needs infra/live: the project root" in doctor.stdout, doctor.output
    assert "for infra/live/policy.toml" in doctor.stdout
    lines = doctor.stdout.splitlines()
    block = "\n".join(lines[lines.index("[layout]") :]) + "\n"
    layout = tomllib.loads(block)["layout"]
    assert layout["live"] == ["dev", "prod"] and layout["root_file"] == "terragrunt.hcl"
    assert "create it at the root" not in block

    (top / "infra" / "live" / "policy.toml").write_text(block)
    commit_all(top, "adopted: doctor's block")
    check = iac(top, "check", "--json")
    assert check.returncode == 0, check.output
    assert _violations(check) == []
    units = iac(top, "units", "--json")
    assert units.returncode == 0, units.output
    assert sorted(u["path"] for u in json.loads(units.stdout)["units"]) == [
        "dev/app",
        "prod/app",
        "prod/us-east-1/db",
    ]
    again = iac(top, "doctor")
    assert again.returncode == 0, again.output
    assert "ready to adopt" in again.stderr
    # the executor the units run on is declared by the block: the matrix routes them
    assert tomllib.loads(block)["executors"] == {"hosted": {"runs_on": ["ubuntu-latest"]}}
    git(top, "checkout", "--quiet", "-b", "change")
    edit(top, "infra/live/prod/app/terragrunt.hcl", 'name = "prod"', 'name = "prod-2"')
    commit_all(top, "prod: another name")
    matrix = iac(top, "matrix", "--base", "main")
    assert matrix.returncode == 0, matrix.output
    assert [leg["units"] for leg in json.loads(matrix.stdout)["include"]] == [["prod/app"]]


def test_hints_name_the_command_the_user_typed(tmp_path: Path) -> None:
    outside = iac(tmp_path, "units")
    assert outside.returncode == 1
    assert "Run `iac doctor` there." in outside.stderr, outside.output
    unknown = iac(tmp_path, "unitz")
    assert "`iac --list`" in unknown.stderr and "invoke" not in unknown.stderr
    missing = iac(tmp_path, "adopt")
    assert "(positional: iac adopt UNIT ADDRESS ID)" in missing.stderr, missing.output
    assert "`iac --help adopt`" in missing.stderr


def test_a_unit_check_cannot_read_is_reported_at_its_own_file(tmp_path: Path, tools: None) -> None:
    live = envs_repo(tmp_path / "mono") / "infra" / "live"
    (live / "policy.toml").write_text(
        '[layout]\nlive = ["dev", "prod"]\nroot_file = "terragrunt.hcl"\n'
    )
    edit(live, "dev/app/terragrunt.hcl", 'name = "dev"', 'name = file("missing.txt")')
    check = iac(live, "check", "--json")
    assert check.returncode == 1
    unreadable = [v for v in _violations(check) if v[1] == "config-invalid"]
    assert unreadable == [("dev/app/terragrunt.hcl", "config-invalid")], check.output  # not live:1


# --- 6: blind units and stacks ----------------------------------------------------

ADOPTED = textwrap.dedent(
    """\
    [layout]
    live = ["dev", "prod"]
    root_file = "terragrunt.hcl"

    [layout.roots."dev"]
    state_prefix = "dev/"
    tier = "dev"
    executor = "hosted"

    [layout.roots."prod"]
    state_prefix = "prod/"
    tier = "prod"
    executor = "lan"

    [executors.hosted]
    runs_on = ["ubuntu-latest"]

    [executors.lan]
    runs_on = ["self-hosted", "lan"]
    """
)

#: nested deeper than the model follows; Terragrunt evaluates it
DEEP = "locals {\n  deep = " + "[" * 300 + "1" + "]" * 300 + "\n}\n\n"


def test_a_unit_the_model_cannot_evaluate_is_routed_by_its_folder_and_the_matrix_goes_on(
    tmp_path: Path, tools: None
) -> None:
    top = envs_repo(tmp_path / "mono")
    live = top / "infra" / "live"
    (live / "policy.toml").write_text(ADOPTED)
    _app(live / "prod" / "blind", "blind", DEEP)
    commit_all(top, "adopted, with a unit the model cannot evaluate")
    git(top, "checkout", "--quiet", "-b", "change")
    edit(live, "dev/app/terragrunt.hcl", 'name = "dev"', 'name = "dev2"')
    commit_all(top, "dev: another name")

    units = {u["path"]: u for u in json.loads(iac(live, "units", "--json").stdout)["units"]}
    blind = units["prod/blind"]
    assert blind["error"] and blind["executor"] == "lan"  # its folder's, [layout.roots."prod"]
    assert blind["gate"] == "<unresolved>"  # never assumed: it waits for a human

    matrix = iac(live, "matrix", "--base", "main")
    assert matrix.returncode == 0, matrix.output
    legs = {leg["executor"]: leg["units"] for leg in json.loads(matrix.stdout)["include"]}
    # any change selects the blind unit (the model cannot say what it reads): planned on
    # its folder's executor, beside the unit that changed
    assert legs == {"hosted": ["dev/app"], "lan": ["prod/blind"]}


ROOT_HCL = ROOT_TERRAGRUNT


def stacks_repo(top: Path) -> Path:
    """A repository of stacks: ``units/app`` the catalog (a unit reading ``values``),
    ``stacks/dev`` and ``stacks/prod`` each a ``terragrunt.stack.hcl`` using it."""
    top.mkdir(parents=True)
    shutil.copy2(REPO / ".tool-versions", top / ".tool-versions")
    (top / "root.hcl").write_text(ROOT_HCL)
    (top / "units" / "app").mkdir(parents=True)
    (top / "units" / "app" / "terragrunt.hcl").write_text(
        'include "root" {\n  path = find_in_parent_folders("root.hcl")\n}\n\n'
        f'terraform {{\n  source = "{APP_SOURCE}"\n}}\n\ninputs = {{\n  name = values.name\n}}\n'
    )
    for env in ("dev", "prod"):
        (top / "stacks" / env).mkdir(parents=True)
        (top / "stacks" / env / "terragrunt.stack.hcl").write_text(
            'unit "app" {\n  source = "../../units/app"\n  path   = "app"\n'
            f'  values = {{\n    name = "{env}"\n  }}\n}}\n'
        )
    git(top, "init", "--quiet", "--initial-branch=main")
    commit_all(top, "stacks of the catalog's units")
    return top


def test_doctor_puts_the_stack_folders_in_the_layout_and_a_values_edit_selects_the_unit(
    tmp_path: Path, tools: None
) -> None:
    top = stacks_repo(tmp_path / "stacks")
    doctor = iac(top, "doctor")
    lines = doctor.stdout.splitlines()
    block = "\n".join(lines[lines.index("[layout]") :]) + "\n"
    # the stacks are where the units are; the catalog holds templates, not units
    suggested = tomllib.loads(block)
    assert suggested["layout"]["live"] == ["stacks"], doctor.output
    # the generated units' executor, declared for matrix
    assert suggested["executors"] == {"hosted": {"runs_on": ["ubuntu-latest"]}}
    assert "# tiers (units): dev (1), prod (1)" in block
    (top / "policy.toml").write_text(block)
    commit_all(top, "adopted: doctor's block")

    git(top, "checkout", "--quiet", "-b", "values")
    edit(top, "stacks/prod/terragrunt.stack.hcl", 'name = "prod"', 'name = "prod-2"')
    commit_all(top, "prod: another name")
    # the working tree's model (what matrix and plan read): every stack generated
    affected = iac(top, "affected", "--base", "main", "--json")
    assert affected.returncode == 0, affected.output
    # as Terragrunt's own filter lists it
    assert [u["path"] for u in json.loads(affected.stdout)["units"]] == [
        "stacks/prod/.terragrunt-stack/app"
    ]
    matrix = iac(top, "matrix", "--base", "main")
    assert matrix.returncode == 0, matrix.output
    assert [leg["units"] for leg in json.loads(matrix.stdout)["include"]] == [
        ["stacks/prod/.terragrunt-stack/app"]
    ]
    # a change to the catalog's unit selects every stack's
    edit(top, "units/app/terragrunt.hcl", "name = values.name", "name = upper(values.name)")
    commit_all(top, "catalog: upper-case names")
    affected = iac(top, "affected", "--base", "main", "--json")
    assert [u["path"] for u in json.loads(affected.stdout)["units"]] == [
        "stacks/dev/.terragrunt-stack/app",
        "stacks/prod/.terragrunt-stack/app",
    ]


def test_doctor_names_unit_files_left_outside_the_suggested_live_folders(
    tmp_path: Path, tools: None
) -> None:
    top = stacks_repo(tmp_path / "stacks")
    (top / "fixtures" / "x").mkdir(parents=True)
    (top / "fixtures" / "x" / "terragrunt.hcl").write_text('terraform {\n  source = "../m"\n}\n')
    doc = json.loads(iac(top, "doctor", "--json").stdout)
    assert doc["suggested_layout"]["live"] == ["stacks"]
    notes = [f for f in doc["findings"] if f["where"] == "fixtures"]
    assert len(notes) == 1 and "fixtures/x/terragrunt.hcl" in notes[0]["what"], doc["findings"]
    assert "outside the suggested live folders" in notes[0]["what"]


BLIND_WITH_COMMANDS = textwrap.dedent(
    """\
    locals {
      data = jsondecode(file("missing.json"))
      who  = run_cmd("echo", "me")
      cmd  = get_terraform_command()
    }

    """
)


def test_what_plan_refuses_in_a_unit_the_model_cannot_evaluate_is_named_by_check_and_doctor(
    tmp_path: Path, tools: None
) -> None:
    live = envs_repo(tmp_path / "mono") / "infra" / "live"
    (live / "policy.toml").write_text(ADOPTED.replace('executor = "lan"', 'executor = "hosted"'))
    _app(live / "dev" / "blind", "blind", BLIND_WITH_COMMANDS)
    check = iac(live, "check", "--json")
    wanted = {"command-dependent", "config-invalid", "run-at-parse"}
    assert sorted(v for v in _violations(check) if v[1] in wanted) == [
        ("dev/blind/terragrunt.hcl", "command-dependent"),
        ("dev/blind/terragrunt.hcl", "config-invalid"),
        ("dev/blind/terragrunt.hcl", "run-at-parse"),
    ], check.output
    doctor = json.loads(iac(live, "doctor", "--json").stdout)
    refused = {
        (f["where"], f["what"].split(":", 2)[1].strip())
        for f in doctor["findings"]
        if f["what"].startswith("plan refuses it")
    }
    assert refused == {
        ("dev/blind/terragrunt.hcl:7", "run-at-parse"),
        ("dev/blind/terragrunt.hcl:8", "command-dependent"),
    }, doctor["findings"]


#: evaluable: an echo-only run_cmd and a command function, nothing missing
WITH_COMMANDS = 'locals {\n  who = run_cmd("echo", "me")\n  cmd = get_terraform_command()\n}\n\n'


def test_what_plan_refuses_in_a_unit_the_model_evaluates_is_named_by_doctor_as_check_names_it(
    tmp_path: Path, tools: None
) -> None:
    """Doctor is where an adopting team looks first: what plan will refuse is there, at
    the same file and line as check's violation, before any plan is tried."""
    live = envs_repo(tmp_path / "mono") / "infra" / "live"
    (live / "policy.toml").write_text(ADOPTED.replace('executor = "lan"', 'executor = "hosted"'))
    _app(live / "dev" / "cmd", "cmd", WITH_COMMANDS)
    check = iac(live, "check", "--json")
    named = {
        (f"{v['file']}:{v['line']}", v["rule"])
        for v in json.loads(check.stdout)["violations"]
        if v["file"].startswith("dev/cmd/")
    }
    assert named == {
        ("dev/cmd/terragrunt.hcl:6", "run-at-parse"),
        ("dev/cmd/terragrunt.hcl:7", "command-dependent"),
    }, check.output
    doctor = iac(live, "doctor", "--json")
    assert doctor.returncode == 1, doctor.output  # plan would refuse the unit: not ready
    refused = {
        (f["where"], f["what"].split(":", 2)[1].strip())
        for f in json.loads(doctor.stdout)["findings"]
        if f["level"] == "needs" and f["what"].startswith("plan refuses it")
    }
    assert refused == named, doctor.stdout


def test_a_routed_blind_unit_is_planned_waiting_for_a_human_and_its_leg_plans_the_others(
    tmp_path: Path, tools: None
) -> None:
    from infra_fixtures import make_example_repo

    repo = make_example_repo(tmp_path / "infra")
    with (repo / "policy.toml").open("a") as policy:
        policy.write(
            '\n[layout]\nlive = ["live"]\n\n[layout.roots."live/cloud"]\nexecutor = "hosted"\n'
        )
    dns = repo / "live/cloud/dns/terragrunt.hcl"
    dns.write_text(dns.read_text() + "\n" + DEEP)
    commit_all(repo, "dns: nested deeper than the model follows")
    git(repo, "checkout", "--quiet", "-b", "change")
    edit(repo, "live/cloud/registry/terragrunt.hcl", "}", "}\n")
    commit_all(repo, "registry: a blank line")

    matrix = iac(repo, "matrix", "--base", "main")
    assert matrix.returncode == 0, matrix.output
    doc = json.loads(matrix.stdout)
    (leg,) = doc["include"]
    assert leg["executor"] == "hosted" and "live/cloud/dns" in leg["units"], doc
    (tmp_path / "matrix.json").write_text(matrix.stdout)
    out = tmp_path / "plans"
    iac(
        repo,
        "plan",
        "--from-matrix",
        str(tmp_path / "matrix.json"),
        "--leg",
        "hosted",
        "--base",
        "main",
        "--out",
        str(out),
    )
    units = {u["path"]: u for u in json.loads((out / "summary.json").read_text())["units"]}
    # in its folder's leg; the working-copy check still refuses to plan a module the model
    # does not know (fail closed): never auto, never applied
    assert units["live/cloud/dns"]["executor"] == "hosted"
    assert units["live/cloud/dns"]["gate"]["decision"] != "auto", units["live/cloud/dns"]
    assert units["live/cloud/dns"]["model_error"]
    others = [u for p, u in units.items() if p != "live/cloud/dns"]
    assert others and all(u["status"] in ("changes", "no-changes") for u in others), others
