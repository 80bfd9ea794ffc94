"""The point of execution (docs/rules.md, "The point of execution"): what Terragrunt hands
to OpenTofu is checked right before each OpenTofu command, by allowlist, on every path.

Each trick is a unit of a real example tree (the sandbox's DNS module, pinned by tag).
For each: the plan refuses it on the batch planner (``invoke plan --all``), on the
per-unit planner (``invoke plan --unit``) and in ``invoke drift``, naming the rule, and
the other units go on; ``invoke check`` names the static rule where the text shows it;
and **the guard alone** refuses what Terragrunt hands over when Terragrunt runs the
unit directly with the run's environment (the static verifier bypassed), so the exec
point holds whatever a picture of the configuration said. Apply refuses a trick that
appears after the plan. Real terragrunt, tofu and git.

Findings of issue 37, class B: 5 (a condition that flips between a picture and the run),
6 (inputs that redirect OpenTofu and were on no deny list), 7 (a computed ``env_vars``
``invoke check`` could not read); and siblings.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from infra_fixtures import commit_all, edit, invoke, make_example_repo, read_summary, units_by_path

from tooling.commands import check
from tooling.engine.rules import execguard
from tooling.io import terragrunt
from tooling.io.workspace import Workspace

pytestmark = pytest.mark.e2e

DNS_SOURCE = "git::https://git.example.com/platform-modules/terraform-cloudflare-dns.git?ref=v1.1.0"
STOLEN = "${get_repo_root()}/stolen.tfstate"
EVIL_TOFURC = (
    'provider_installation {\n  dev_overrides {\n    "hashicorp/null" = "/tmp"\n  }\n'
    "  direct {}\n}\n"
)


@dataclass(frozen=True)
class Trick:
    name: str  # the unit's folder: live/cloud/<name>
    static: str | None  # the rule `invoke check` and the static verifier name (None: none can)
    guard: str  # the rule the guard names when Terragrunt hands the unit over
    terraform: str = ""  # HCL inside the unit's terraform block
    body: str = ""  # HCL after it
    inputs: str = ""  # more lines of its inputs
    files: dict[str, str] = field(default_factory=dict)  # files of the unit folder
    #: the rule that refuses the whole run before Terragrunt starts (env-vars: a variable a
    #: process reads before its own code), so no report is written; None: refused alone
    early: str | None = None

    @property
    def path(self) -> str:
        return f"live/cloud/{self.name}"


def _extra(commands: str, line: str) -> str:
    return f'  extra_arguments "x" {{\n    commands = {commands}\n    {line}\n  }}\n'


TRICKS = [
    # finding 6: what redirects OpenTofu and was on no deny list
    Trick(
        "home-tofurc",
        "enforce-env",
        "exec-env",
        _extra('["init", "plan"]', 'env_vars = { HOME = "${get_terragrunt_dir()}/h" }'),
        files={"h/.tofurc": EVIL_TOFURC},
        early="env-vars",
    ),
    Trick(
        "var-file-outside",
        "enforce-args",
        "exec-args",
        _extra('["plan"]', 'arguments = ["-var-file=${get_repo_root()}/outside.tfvars"]'),
    ),
    Trick(
        "optional-var-files",
        "enforce-args",
        "exec-args",
        _extra('["plan"]', 'optional_var_files = ["${get_repo_root()}/outside.tfvars"]'),
    ),
    Trick(
        "plugin-dir",
        "enforce-args",
        "exec-args",
        _extra('["init"]', 'arguments = ["-plugin-dir=${get_terragrunt_dir()}/plugins"]'),
    ),
    Trick(
        "null-vars-committed",
        None,
        "working-copy",
        files={"terragrunt-null-vars.auto.tfvars.json": '{"zone_name": "evil.example"}\n'},
    ),
    Trick(
        "passphrase-env",
        "enforce-env",
        "exec-env",
        _extra('["init", "plan"]', 'env_vars = { TF_VAR_iac_encryption_passphrase = "known" }'),
    ),
    Trick("passphrase-input", None, "exec-env", inputs='  iac_encryption_passphrase = "known"\n'),
    # siblings
    Trick(
        "tf-data-dir",
        "enforce-state",
        "exec-env",
        _extra('["init", "plan"]', 'env_vars = { TF_DATA_DIR = "${get_terragrunt_dir()}/d" }'),
    ),
    Trick(
        "tf-plugin-cache-dir",
        "enforce-state",
        "exec-env",
        _extra('["init"]', 'env_vars = { TF_PLUGIN_CACHE_DIR = "${get_terragrunt_dir()}/p" }'),
    ),
    Trick(
        "tf-cli-config-file",
        "enforce-state",
        "exec-env",
        _extra(
            '["init", "plan"]',
            'env_vars = { TF_CLI_CONFIG_FILE = "${get_terragrunt_dir()}/h/.tofurc" }',
        ),
        files={"h/.tofurc": EVIL_TOFURC},
    ),
    Trick(
        "ld-preload",
        "enforce-env",
        "exec-env",
        _extra('["init", "plan"]', 'env_vars = { LD_PRELOAD = "${get_terragrunt_dir()}/x.so" }'),
        early="env-vars",
    ),
    Trick(
        "state-on-plan",
        "enforce-state",
        "exec-args",
        _extra('["plan"]', f'arguments = ["-state={STOLEN}"]'),
    ),
    Trick(
        "backend-config-on-plan",
        "enforce-state",
        "exec-args",
        _extra('["plan"]', f'arguments = ["-backend-config=path={STOLEN}"]'),
    ),
    Trick(
        "backend-config-on-init",
        "enforce-state",
        "exec-args",
        _extra('["init"]', f'arguments = ["-backend-config=path={STOLEN}"]'),
    ),
    Trick("chdir", "enforce-state", "exec-args", _extra('["plan"]', 'arguments = ["-chdir=.."]')),
    Trick(
        "download-dir",
        "enforce-runtime",
        "exec-run",
        body='download_dir = "${get_repo_root()}/elsewhere"\n',
    ),
    Trick("undeclared-input", None, "exec-env", inputs='  not_a_variable = "x"\n'),
    # a unit's own AWS credentials (no role assumed: the guard lets none through)
    Trick(
        "aws-credentials",
        "enforce-role",
        "exec-env",
        _extra(
            '["init", "plan"]',
            'env_vars = { AWS_ACCESS_KEY_ID = "AKIAUNITS" }',
        ),
    ),
]
#: units Terragrunt hands over whole: the guard refuses before OpenTofu starts
BY_NAME = {t.name: t for t in TRICKS}
#: the tricks refused alone: the others plan beside them
ALONE = [t for t in TRICKS if t.early is None]


def _write_unit(repo: Path, trick: Trick) -> None:
    unit = repo / trick.path
    unit.mkdir(parents=True, exist_ok=True)
    (unit / "terragrunt.hcl").write_text(
        'include "root" {\n  path = find_in_parent_folders("root.hcl")\n}\n\n'
        f'terraform {{\n  source = "{DNS_SOURCE}"\n{trick.terraform}}}\n\n{trick.body}'
        f'inputs = {{\n  zone_name = "{trick.name}.example"\n{trick.inputs}}}\n'
    )
    for rel, text in trick.files.items():
        (unit / rel).parent.mkdir(parents=True, exist_ok=True)
        (unit / rel).write_text(text)


def _repo_of(tmp_path_factory: pytest.TempPathFactory, tricks: list[Trick]) -> Path:
    from tooling.io import binpath

    binpath.ensure_bin_dir_on_path()
    repo = make_example_repo(tmp_path_factory.mktemp("exec") / "infra")
    (repo / "outside.tfvars").write_text('zone_name = "outside.example"\n')
    for trick in tricks:
        _write_unit(repo, trick)
    commit_all(repo, "tricks")
    return repo


@pytest.fixture(scope="module")
def tricks_repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The example with every trick refused alone (the other units plan beside them)."""
    yield _repo_of(tmp_path_factory, ALONE)


@pytest.fixture(scope="module")
def early_repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The example with every trick that refuses the whole run before Terragrunt."""
    yield _repo_of(tmp_path_factory, [t for t in TRICKS if t.early is not None])


def _repo_for(trick: Trick, request: pytest.FixtureRequest) -> Path:
    repo: Path = request.getfixturevalue("early_repo" if trick.early else "tricks_repo")
    return repo


def _assert_refused(entry: dict[str, Any] | Any, trick: Trick) -> None:
    status = entry["status"] if isinstance(entry, dict) else entry.status
    error = str(entry.get("error") if isinstance(entry, dict) else entry.error)
    assert status == "error", (trick.name, status, error)
    rule = trick.static or trick.guard
    assert f": {rule}: " in error, (trick.name, error)
    assert trick.path in error


def test_check_names_every_trick_the_text_shows(tricks_repo: Path, early_repo: Path) -> None:
    violations = check.run(tricks_repo)[0] + check.run(early_repo)[0]
    for trick in TRICKS:
        rules = {v.rule for v in violations if v.file == f"{trick.path}/terragrunt.hcl"}
        if trick.static is not None:
            assert trick.static in rules, (trick.name, rules)
        if trick.early is not None:
            assert trick.early in rules, (trick.name, rules)


def test_the_batch_planner_refuses_every_trick_and_plans_the_other_units(
    tricks_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "plans"
    ran = invoke(tricks_repo, "plan", "--all", "--out", str(out))
    assert ran.returncode == 1, ran.output
    units = units_by_path(read_summary(out))
    for trick in ALONE:
        _assert_refused(units[trick.path], trick)
        assert not list((out / "units" / trick.path).glob("*.tfplan"))
    for clean in ("live/cloud/dns", "live/cloud/iam", "live/cluster/network"):
        assert units[clean]["status"] == "changes", units[clean]
    assert not (tricks_repo / "stolen.tfstate").exists()


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_the_per_unit_planner_refuses_each_trick(
    request: pytest.FixtureRequest, tmp_path: Path, name: str
) -> None:
    trick = BY_NAME[name]
    repo = _repo_for(trick, request)
    out = tmp_path / "plans"
    ran = invoke(repo, "plan", "--unit", trick.path, "--out", str(out))
    assert ran.returncode == 1, ran.output
    if trick.early is not None:  # refused before Terragrunt starts: no report at all
        assert f"{trick.path}/terragrunt.hcl:" in ran.stderr, ran.output
        assert f": {trick.early}: " in ran.stderr, ran.output
        assert not (out / "summary.json").exists()
        return
    _assert_refused(units_by_path(read_summary(out))[trick.path], trick)
    assert not list((out / "units" / trick.path).glob("*.tfplan"))


def test_drift_refuses_every_trick_and_checks_the_other_units(
    tricks_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "drift"
    invoke(tricks_repo, "drift", "--out", str(out))
    doc = json.loads((out / "drift.json").read_text())
    units = {u["path"]: u for u in doc["units"]}
    for trick in ALONE:
        _assert_refused(units[trick.path], trick)
    assert units["live/cloud/dns"]["status"] in ("drifted", "in-sync"), units["live/cloud/dns"]


def _armed(repo: Path, *paths: str) -> dict[str, str]:
    """The environment ``invoke plan`` gives Terragrunt for ``paths``: the guard armed."""
    ws = Workspace(repo)
    model = ws.model()
    env, _ = execguard.armed(
        [(p, repo / p, model.units[p].source) for p in paths],
        ws.tool_env,
        cache_dir=ws.settings.cache_dir,
        model=model,
        policy=ws.policy,
    )
    return env


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_the_guard_alone_refuses_what_terragrunt_hands_over(
    request: pytest.FixtureRequest, tmp_path: Path, name: str
) -> None:
    """Terragrunt runs the unit itself with the run's environment: no static verifier in
    the way, only the guard before each OpenTofu command."""
    trick = BY_NAME[name]
    repo = _repo_for(trick, request)
    plan_file = tmp_path / "p.tfplan"
    ran = terragrunt.run(
        terragrunt.plan_args(plan_file), repo / trick.path, _armed(repo, trick.path)
    )
    output = ran.stdout + ran.stderr
    assert ran.returncode != 0, output
    # one line naming the unit (where OpenTofu would run outside any unit's working copy,
    # the folder instead), the rule and the fix
    [line] = {
        ln.strip() for ln in output.splitlines() if f": {trick.guard}: " in ln and "ERROR" in ln
    }
    if trick.guard == "exec-run":
        assert line.startswith("ERROR tofu: exec-run: OpenTofu would run") and "; remove" in line
    else:
        assert line.startswith(f"ERROR {trick.path}") and "; " in line, line
    assert not plan_file.exists()
    assert not (repo / "stolen.tfstate").exists()


def test_the_guard_lets_a_clean_unit_through_unchanged(tricks_repo: Path, tmp_path: Path) -> None:
    plan_file = tmp_path / "p.tfplan"
    ran = terragrunt.run(
        terragrunt.plan_args(plan_file),
        tricks_repo / "live/cloud/dns",
        _armed(tricks_repo, "live/cloud/dns"),
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert plan_file.is_file() and "zone_name" not in ran.stderr


def test_a_units_terraform_binary_never_replaces_the_guard(tmp_path: Path, tools: None) -> None:
    """With ``TG_TF_PATH`` set (the pipeline sets it to the guard), Terragrunt 1.1.3 runs
    it whatever the unit's ``terraform_binary`` says: the unit's program never runs, the
    guard checks the command and OpenTofu plans."""
    repo = make_example_repo(tmp_path / "infra")
    marker = tmp_path / "the unit's binary ran"
    script = repo / "live/cloud/dns/tofu.sh"
    script.write_text(f'#!/bin/sh\ntouch "{marker}"\nexec tofu "$@"\n')
    script.chmod(0o755)
    edit(
        repo,
        "live/cloud/dns/terragrunt.hcl",
        'include "root"',
        'terraform_binary = "${get_terragrunt_dir()}/tofu.sh"\n\ninclude "root"',
    )
    commit_all(repo, "a unit naming its own OpenTofu")
    violations, _ = check.run(repo)
    assert "enforce-runtime" in {v.rule for v in violations if "live/cloud/dns" in v.file}
    plan_file = tmp_path / "p.tfplan"
    env = _armed(repo, "live/cloud/dns")
    ran = terragrunt.run(terragrunt.plan_args(plan_file), repo / "live/cloud/dns", env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert plan_file.is_file() and not marker.exists()
    # the same unit with the guard's variable unset: Terragrunt would run the unit's
    env.pop(execguard.TF_PATH_ENV)
    terragrunt.run(terragrunt.plan_args(tmp_path / "q.tfplan"), repo / "live/cloud/dns", env)
    assert marker.exists()


# --------------------------------------------------------------------------- finding 5


FLIP = (
    'length(fileset("${get_terragrunt_dir()}/../iam/.terragrunt-cache", "**")) > 0 ? '
    f'{{ TF_CLI_ARGS_init = "-backend-config=path={STOLEN}" }} : {{}}'
)


def _refused_before_terragrunt(
    repo: Path, out: Path, args: tuple[str, ...], unit_file: str
) -> None:
    """A computed env_vars is refused before any Terragrunt process (``env-vars``, on the
    text): the run stops naming the file, and writes no report."""
    ran = invoke(repo, *args, "--out", str(out))
    assert ran.returncode == 1, ran.output
    assert f"{unit_file}:" in ran.stderr and ": env-vars: " in ran.stderr, ran.output
    assert not (out / "summary.json").exists() and not (out / "drift.json").exists()


def test_finding_5_env_vars_that_flip_while_the_run_goes_are_refused_on_every_path(
    tmp_path: Path, tools: None
) -> None:
    """``env_vars`` chosen by a condition that changes during the run (iam's working copy
    appears once iam is planned): a picture taken before the plans saw ``{}``; the plan
    would initialise registry on another state."""
    repo = make_example_repo(tmp_path / "infra")
    registry = "live/cloud/registry"
    plans = tmp_path / "reviewed"
    planned = invoke(
        repo, "plan", "--unit", "live/cloud/iam", "--unit", registry, "--out", str(plans)
    )
    assert planned.returncode == 0, planned.output
    edit(
        repo,
        "live/cloud/registry/terragrunt.hcl",
        '?ref=v1.1.0"\n}',
        f'?ref=v1.1.0"\n\n  extra_arguments "flip" {{\n    commands = ["init", "plan", "apply"]\n'
        f"    env_vars = {FLIP}\n  }}\n}}",
    )
    # apply: iam applies (its working copy is there), registry's condition then holds
    applied = invoke(repo, "apply", "--plans", str(plans))
    assert applied.returncode == 1, applied.output
    record = {u["path"]: u for u in json.loads((plans / "apply.json").read_text())["units"]}
    assert record["live/cloud/iam"]["result"] == "applied"
    assert record[registry]["result"] == "refused" and "enforce-env" in record[registry]["reason"]
    assert not (repo / "stolen.tfstate").exists()
    violations, _ = check.run(repo)
    assert "enforce-env" in {v.rule for v in violations if v.file == f"{registry}/terragrunt.hcl"}
    # the batch (iam and registry planned together), per unit, and drift: a computed
    # env_vars refuses the run before Terragrunt starts (env-vars), no report written
    for args in (
        ("plan", "--unit", "live/cloud/iam", "--unit", registry),
        ("plan", "--unit", registry),
        ("drift",),
    ):
        _refused_before_terragrunt(repo, tmp_path / "again", args, f"{registry}/terragrunt.hcl")
    # the guard alone, now that iam's working copy is there and the condition holds
    assert list((repo / "live/cloud/iam/.terragrunt-cache").rglob("*"))
    ran = terragrunt.run(
        terragrunt.plan_args(tmp_path / "p"), repo / registry, _armed(repo, registry)
    )
    assert ran.returncode != 0
    assert f"{registry}: exec-env: OpenTofu's environment changes TF_CLI_ARGS_init" in ran.stderr
    assert not (repo / "stolen.tfstate").exists()
    records = list((repo / registry / ".terragrunt-cache").rglob(".terraform/terraform.tfstate"))
    assert all("stolen" not in r.read_text() for r in records)


def test_finding_5_a_recorded_backend_moved_elsewhere_is_refused_before_the_plan(
    tmp_path: Path, tools: None
) -> None:
    """Whatever moved it (a reused runner cache, an override the condition switched on):
    the backend OpenTofu recorded after init is checked against the unit's own key."""
    repo = make_example_repo(tmp_path / "infra")
    dns = "live/cloud/dns"
    first = invoke(repo, "plan", "--unit", dns, "--out", str(tmp_path / "a"))
    assert first.returncode == 0, first.output
    [record] = (repo / dns / ".terragrunt-cache").rglob(".terraform/terraform.tfstate")
    doc = json.loads(record.read_text())
    doc["backend"]["config"]["path"] = str(repo / "stolen.tfstate")
    record.write_text(json.dumps(doc))
    ran = terragrunt.run(terragrunt.plan_args(tmp_path / "p"), repo / dns, _armed(repo, dns))
    assert ran.returncode != 0
    assert f"{dns}: exec-backend: the backend OpenTofu recorded has another path" in ran.stderr
    assert not (tmp_path / "p").exists()


# --------------------------------------------------------------------------- finding 7


def test_finding_7_a_computed_env_vars_is_named_by_check_and_refused_by_plan_drift_and_apply(
    tmp_path: Path, tools: None
) -> None:
    repo = make_example_repo(tmp_path / "infra")
    dns = "live/cloud/dns"
    out = tmp_path / "plans"
    planned = invoke(repo, "plan", "--unit", dns, "--unit", "live/cloud/iam", "--out", str(out))
    assert planned.returncode == 0, planned.output
    # after the plan: a computed env_vars, whose names the text does not show
    edit(
        repo,
        f"{dns}/terragrunt.hcl",
        '?ref=v1.1.0"\n}',
        '?ref=v1.1.0"\n\n  extra_arguments "e" {\n    commands = ["init", "plan", "apply"]\n'
        "    env_vars = local.e\n  }\n}\n\nlocals {\n"
        '  e = { for k in ["HOME"] : k => "${get_terragrunt_dir()}/h" }\n}',
    )
    violations, _ = check.run(repo)
    mine = [v for v in violations if v.file == f"{dns}/terragrunt.hcl" and v.rule == "enforce-env"]
    assert mine and "computes its env_vars" in mine[0].message
    applied = invoke(repo, "apply", "--plans", str(out))
    assert applied.returncode == 1, applied.output
    record = {u["path"]: u for u in json.loads((out / "apply.json").read_text())["units"]}
    assert record[dns]["result"] == "refused" and "enforce-env" in record[dns]["reason"]
    assert record["live/cloud/iam"]["result"] == "applied"
    assert not (repo / ".iac/state" / dns / "terraform.tfstate").exists()
    commit_all(repo, "a computed env_vars")
    for args in (("plan", "--unit", dns), ("plan", "--unit", dns, "--unit", "live/cloud/iam")):
        _refused_before_terragrunt(repo, tmp_path / "again", args, f"{dns}/terragrunt.hcl")
    _refused_before_terragrunt(repo, tmp_path / "drift", ("drift",), f"{dns}/terragrunt.hcl")
    # and the guard alone, on what Terragrunt computes
    ran = terragrunt.run(terragrunt.plan_args(tmp_path / "p"), repo / dns, _armed(repo, dns))
    assert (
        ran.returncode != 0
        and f"{dns}: exec-env: OpenTofu's environment changes HOME" in ran.stderr
    )


# --------------------------------------------------------------------------- apply


@pytest.mark.parametrize("name", ["home-tofurc", "passphrase-input", "null-vars-committed"])
def test_apply_refuses_a_trick_that_appears_after_the_plan_and_applies_the_rest(
    tmp_path: Path, tools: None, name: str
) -> None:
    trick = BY_NAME[name]
    repo = make_example_repo(tmp_path / "infra")
    clean = Trick(trick.name, None, "")
    _write_unit(repo, clean)
    commit_all(repo, "a clean unit")
    out = tmp_path / "plans"
    planned = invoke(
        repo, "plan", "--unit", trick.path, "--unit", "live/cloud/iam", "--out", str(out)
    )
    assert planned.returncode == 0, planned.output
    _write_unit(repo, trick)  # the trick, after the plan a reviewer saw
    applied = invoke(repo, "apply", "--plans", str(out))
    assert applied.returncode == 1, applied.output
    record = {u["path"]: u for u in json.loads((out / "apply.json").read_text())["units"]}
    unit = record[trick.path]
    assert unit["result"] in ("refused", "failed"), unit
    assert f"{trick.static or trick.guard}" in unit["reason"], unit
    assert record["live/cloud/iam"]["result"] == "applied"
    assert not (repo / ".iac/state" / trick.path / "terraform.tfstate").exists()


def test_the_guard_configuration_holds_no_secret(tmp_path: Path, tools: None) -> None:
    repo = make_example_repo(tmp_path / "infra")
    secret = "correct horse battery staple"
    os.environ["IAC_ENCRYPTION_PASSPHRASE"] = secret
    try:
        env = _armed(repo, "live/cloud/dns")
    finally:
        del os.environ["IAC_ENCRYPTION_PASSPHRASE"]
    config = Path(env[execguard.TF_PATH_ENV]).parent / "guard.json"
    assert secret not in config.read_text()
