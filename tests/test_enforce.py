"""The rule enforced where OpenTofu runs: each trick is refused before its plan (one
Terragrunt process per unit and the batch's ``run --all``), before its apply, and named
by ``invoke check`` with the same rule.

Every trick is a unit of a real example tree beside ``live/cloud/dns``; the verifier
judges its static form before any Terragrunt process of it starts. A refused unit is
never planned: no plan file, the report names the rule, ``file:line`` and the fix, and
the other units go on.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from infra_fixtures import (
    commit_all,
    edit,
    invoke,
    make_example_repo,
    read_summary,
    units_by_path,
)

from tooling.commands import check
from tooling.core.plan.targets import Target
from tooling.engine.plan.batchplanner import run_batch
from tooling.engine.plan.unitplanner import plan_unit
from tooling.engine.rules import verify
from tooling.io import config, terragrunt
from tooling.io.workspace import Workspace

pytestmark = pytest.mark.e2e

_CODE = 'resource \\"terraform_data\\" \\"injected\\" {}\\n'
_DNS_STATE = "${get_repo_root()}/.iac/state/live/cloud/dns/terraform.tfstate"


@dataclass(frozen=True)
class Trick:
    name: str  # the unit's folder: live/cloud/<name>
    rule: str  # the rule that refuses it
    body: str = ""  # HCL after the unit's includes
    terraform: str = ""  # HCL inside the unit's terraform block
    include: str = ""  # HCL inside the unit's include "root" block

    @property
    def path(self) -> str:
        return f"live/cloud/{self.name}"


def _gen(contents: str, path: str = "extra.tf", extra: str = "") -> str:
    return (
        f'generate "extra" {{\n  path      = "{path}"\n  if_exists = "overwrite"\n{extra}'
        f"  contents  = {contents}\n}}\n"
    )


#: finding 1: OpenTofu code smuggled in through generate, eight ways
GENERATE_TRICKS = [
    Trick(
        "gen-jsonencode",
        "enforce-generate",
        _gen(
            "jsonencode({ resource = { terraform_data = { injected = {} } } })",
            "extra.tf.json",
            "  disable_signature = true\n",
        ),
    ),
    Trick(
        "gen-format",
        "enforce-generate",
        _gen('format("%s \\"terraform_data\\" \\"injected\\" {}\\n", "resource")'),
    ),
    Trick(
        "gen-lower",
        "enforce-generate",
        _gen('lower("RESOURCE \\"TERRAFORM_DATA\\" \\"INJECTED\\" {}\\n")'),
    ),
    Trick(
        "gen-base64",
        "enforce-generate",
        _gen('base64decode("cmVzb3VyY2UgInRlcnJhZm9ybV9kYXRhIiAiaW5qZWN0ZWQiIHt9Cg==")'),
    ),
    Trick(
        "gen-nospace",
        "enforce-generate",
        _gen('"resource\\"terraform_data\\" \\"injected\\" {}\\n"'),
    ),
    Trick(
        "gen-include-locals",
        "enforce-generate",
        'include "code" {\n  path   = "${get_repo_root()}/shared/code.hcl"\n  expose = true\n}\n'
        + _gen("include.code.locals.extra_code"),
    ),
    Trick(
        "gen-dependency-mock",
        "enforce-generate",
        'dependency "dns" {\n  config_path = "../dns"\n'
        f'  mock_outputs = {{ code = "{_CODE}" }}\n'
        '  mock_outputs_allowed_terraform_commands = ["validate", "plan"]\n}\n'
        + _gen('try(dependency.dns.outputs.code, "")'),
    ),
    Trick(
        "gen-heredoc-local",
        "enforce-generate",
        'locals {\n  r = "res"\n}\n'
        + _gen('<<-EOT\n    ${local.r}ource "terraform_data" "injected" {}\n  EOT'),
    ),
]

#: findings 3, 4, 5 and 8 (static part), and siblings of them
OTHER_TRICKS = [
    Trick(
        "state-backend-config",
        "enforce-state",
        terraform='  extra_arguments "state" {\n    commands  = ["init"]\n'
        f'    arguments = ["-backend-config=path={_DNS_STATE}"]\n  }}\n',
    ),
    Trick(
        "state-remote-local",
        "enforce-state",
        f'remote_state {{\n  backend = "local"\n  config  = {{ path = "{_DNS_STATE}" }}\n}}\n',
    ),
    Trick(
        "role-iam",
        "enforce-role",
        'iam_role = "arn:aws:iam::999999999999:role/OrganizationAccountAccessRole"\n',
    ),
    Trick(
        "errors-ignore",
        "enforce-errors",
        'errors {\n  ignore "all" {\n    ignorable_errors = [".*"]\n  }\n}\n',
    ),
    Trick(
        "mocks-apply",
        "enforce-mocks",
        'dependency "dns" {\n  config_path = "../dns"\n  mock_outputs = { zone_id = "mock" }\n'
        '  mock_outputs_allowed_terraform_commands = ["apply"]\n}\n',
    ),
    # siblings
    Trick(
        "env-tf-cli-args-init",
        "enforce-state",
        terraform='  extra_arguments "env" {\n    commands = ["init", "plan"]\n'
        f'    env_vars = {{ TF_CLI_ARGS_init = "-backend-config=path={_DNS_STATE}" }}\n  }}\n',
    ),
    Trick(
        "env-tf-data-dir",
        "enforce-state",
        terraform='  extra_arguments "env" {\n    commands = ["init", "plan"]\n'
        '    env_vars = { TF_DATA_DIR = "${get_repo_root()}/live/cloud/dns/.terraform" }\n  }\n',
    ),
    Trick(
        "env-aws-profile",
        "enforce-role",
        terraform='  extra_arguments "env" {\n    commands = ["plan", "apply"]\n'
        '    env_vars = { AWS_PROFILE = "admin" }\n  }\n',
    ),
    Trick(
        "gen-backend-same-path",
        "enforce-generate",
        'generate "state" {\n  path      = "backend.tf"\n  if_exists = "overwrite"\n'
        f'  contents  = "terraform {{\\n  backend \\"local\\" {{\\n    path = \\"{_DNS_STATE}\\"\\n  }}\\n}}\\n"\n}}\n',
    ),
    Trick(
        "gen-override-json",
        "enforce-generate",
        _gen(
            f'jsonencode({{ terraform = {{ backend = {{ local = {{ path = "{_DNS_STATE}" }} }} }} }})',
            "backend_override.tf.json",
            "  disable_signature = true\n",
        ),
    ),
    Trick(
        "role-web-identity", "enforce-role", 'iam_web_identity_token = "eyJhbGciOi.fake.token"\n'
    ),
    Trick("runtime-download-dir", "enforce-runtime", 'download_dir = "/tmp/elsewhere"\n'),
    Trick("runtime-terraform-binary", "enforce-runtime", 'terraform_binary = "/bin/true"\n'),
    Trick("gen-drop-root-backend", "enforce-generate", include='  merge_strategy = "no_merge"\n'),
    Trick(
        "mocks-every-command",
        "enforce-mocks",
        'dependency "dns" {\n  config_path = "../dns"\n  mock_outputs = { zone_id = "mock" }\n}\n',
    ),
]

TRICKS = GENERATE_TRICKS + OTHER_TRICKS
MODULE = 'resource "terraform_data" "own" {}\n'


def _add_trick(repo: Path, trick: Trick) -> None:
    (repo / "testmods" / trick.name).mkdir(parents=True, exist_ok=True)
    (repo / "testmods" / trick.name / "main.tf").write_text(MODULE)
    unit = repo / trick.path
    unit.mkdir(parents=True, exist_ok=True)
    (unit / "terragrunt.hcl").write_text(
        f'include "root" {{\n  path = find_in_parent_folders("root.hcl")\n{trick.include}}}\n\n'
        f'terraform {{\n  source = "${{get_repo_root()}}/testmods/{trick.name}"\n{trick.terraform}}}\n\n'
        f"{trick.body}"
    )


@pytest.fixture(scope="module")
def tricks_repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    from tooling.io import binpath

    binpath.ensure_bin_dir_on_path()
    repo = make_example_repo(tmp_path_factory.mktemp("tricks") / "infra")
    (repo / "shared").mkdir()
    (repo / "shared" / "code.hcl").write_text(f'locals {{\n  extra_code = "{_CODE}"\n}}\n')
    for trick in TRICKS:
        _add_trick(repo, trick)
    commit_all(repo, "tricks")
    yield repo


def _target(repo: Path, path: str) -> Target:
    unit = Workspace(repo).model().units[path]
    return Target(path, unit.tier, unit.executor, "named", repo / path, unit.dependencies)


def _assert_refused(result: object, trick: Trick, out: Path) -> None:
    status, error = result.status, result.error or ""  # type: ignore[attr-defined]
    assert status == "error", (trick.name, status, error)
    assert error.startswith(f"refused: {trick.path} breaks the rule"), error
    assert f"{trick.path}/terragrunt.hcl:" in error, error
    assert f": {trick.rule}: " in error, error
    assert "Fix: " in error
    assert result.plan_file is None  # type: ignore[attr-defined]
    assert not list((out / "units" / trick.path).glob("*.tfplan"))


@pytest.mark.parametrize("trick", TRICKS, ids=[t.name for t in TRICKS])
def test_each_trick_is_refused_before_its_plan_on_the_per_unit_path(
    tricks_repo: Path, tmp_path: Path, trick: Trick
) -> None:
    out = tmp_path / "plans"
    ws = Workspace(tricks_repo)
    result = plan_unit(_target(tricks_repo, trick.path), out, ws.tool_env, policy=ws.policy)
    _assert_refused(result, trick, out)
    # nothing of the unit ran: no working copy was made, so no injected code was planned
    assert not (tricks_repo / trick.path / ".terragrunt-cache").exists()
    assert not (tricks_repo / trick.path / verify.DECLARED_CONFIG).exists()


def test_the_batch_planner_refuses_every_trick_and_plans_the_other_units(
    tricks_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "plans"
    targets = [_target(tricks_repo, "live/cloud/dns")] + [
        _target(tricks_repo, t.path) for t in TRICKS
    ]
    ws = Workspace(tricks_repo)
    planned = run_batch(targets, out, ws.tool_env, jobs=2, policy=ws.policy)
    results = {r.path: r for r in planned}
    for trick in TRICKS:
        _assert_refused(results[trick.path], trick, out)
    assert results["live/cloud/dns"].status == "changes", results["live/cloud/dns"].error
    assert results["live/cloud/dns"].plan_file is not None


def test_check_names_the_rule_the_plan_refuses_for_every_trick(tricks_repo: Path) -> None:
    violations, _model = check.run(tricks_repo)
    for trick in TRICKS:
        rules = {v.rule for v in violations if v.file == f"{trick.path}/terragrunt.hcl"}
        assert trick.rule in rules, (trick.name, rules)
    clean = [v for v in violations if v.rule.startswith("enforce-") and "/dns/" in v.file]
    assert clean == []


def test_the_example_units_keep_the_rule_as_terragrunt_resolves_them(
    tricks_repo: Path,
) -> None:
    env = Workspace(tricks_repo).tool_env
    policy = config.read_policy(tricks_repo)
    for path, unit in Workspace(tricks_repo).model().units.items():
        if unit.path.startswith("live/cloud/") and any(t.path == path for t in TRICKS):
            continue
        assert verify.violations(tricks_repo / path, path, unit.tier, env, policy) == [], path


def test_a_role_the_policy_allowlists_for_the_tier_passes_and_other_tiers_do_not(
    tmp_path: Path,
) -> None:
    from tooling.io import binpath

    binpath.ensure_bin_dir_on_path()
    repo = make_example_repo(tmp_path / "infra")
    role = "arn:aws:iam::999999999999:role/OrganizationAccountAccessRole"
    edit(
        repo,
        "live/cloud/dns/terragrunt.hcl",
        'include "root"',
        f'iam_role = "{role}"\n\ninclude "root"',
    )
    edit(
        repo,
        "live/cluster/network/terragrunt.hcl",
        'include "root"',
        f'iam_role = "{role}"\n\ninclude "root"',
    )
    with (repo / "policy.toml").open("a") as fh:
        fh.write(
            f'\n[check.allowed_roles.cloud]\n"{role}" = "the DNS zone lives in the org account"\n'
        )
    ws = Workspace(repo)
    env, policy = ws.tool_env, ws.policy
    assert verify.violations(repo / "live/cloud/dns", "live/cloud/dns", "cloud", env, policy) == []
    refused = verify.violations(
        repo / "live/cluster/network", "live/cluster/network", "cluster", env, policy
    )
    assert [v.rule for v in refused] == ["enforce-role"]
    text = (repo / "live/cluster/network/terragrunt.hcl").read_text()
    assert refused[0].file == "live/cluster/network/terragrunt.hcl"
    assert refused[0].line == text[: text.index("iam_role")].count("\n") + 1


def test_a_unit_that_starts_ignoring_errors_after_its_plan_is_refused_at_apply(
    tmp_path: Path,
) -> None:
    from tooling.io import binpath

    binpath.ensure_bin_dir_on_path()
    repo = make_example_repo(tmp_path / "infra")
    out = tmp_path / "plans"
    planned = invoke(repo, "plan", "--unit", "live/cloud/dns", "--out", str(out))
    assert planned.returncode == 0, planned.output
    assert units_by_path(read_summary(out))["live/cloud/dns"]["status"] == "changes"
    unit = repo / "live/cloud/dns/terragrunt.hcl"
    unit.write_text(
        unit.read_text() + '\nerrors {\n  ignore "all" {\n    ignorable_errors = [".*"]\n  }\n}\n'
    )
    applied = invoke(repo, "apply", "--plans", str(out))
    assert applied.returncode == 1, applied.output
    record = {u["path"]: u for u in json.loads((out / "apply.json").read_text())["units"]}
    dns = record["live/cloud/dns"]
    assert dns["result"] == "refused", dns
    assert "enforce-errors" in dns["reason"] and "live/cloud/dns/terragrunt.hcl:" in dns["reason"]
    assert not (repo / ".iac/state/live/cloud/dns/terraform.tfstate").exists()


def test_the_batch_verification_starts_no_terragrunt_process_and_leaves_no_file_behind(
    tricks_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every unit is judged on its static form (what Terragrunt hands to OpenTofu is the
    guard's, where OpenTofu runs): no render, no file written beside a unit."""
    started: list[object] = []
    real = terragrunt.run

    def counted(*args: object, **kwargs: object) -> object:
        started.append(args)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(terragrunt, "run", counted)
    model = Workspace(tricks_repo).model()
    ws = Workspace(tricks_repo)
    refused = verify.verify_many(
        [(tricks_repo / p, p, model.units[p].tier) for p in model.order],
        ws.tool_env,
        ws.policy,
        jobs=2,
    )
    assert set(refused) == {t.path for t in TRICKS}
    assert started == []
    forms = verify.static_forms(tricks_repo, ["live/cloud/gen-base64"], ws.policy, model)
    mine, declared = (
        forms["live/cloud/gen-base64"].rendered,
        forms["live/cloud/gen-base64"].declared,
    )
    # root.hcl declares the backend and the encryption of state and plans
    assert set(mine["generate"]) == {"backend", "encryption", "extra"}
    assert set(declared["generate"]) == {"backend", "encryption"}
    left = [p for p in tricks_repo.rglob(".iac-*") if ".iac/" not in p.as_posix()]
    assert left == []


def test_mocks_for_init_validate_and_plan_pass_check_and_plan(tmp_path: Path) -> None:
    from tooling.io import binpath

    binpath.ensure_bin_dir_on_path()
    repo = make_example_repo(tmp_path / "infra")
    trick = Trick(
        "mocks-init-validate-plan",
        "enforce-mocks",
        'dependency "dns" {\n  config_path = "../dns"\n  mock_outputs = { zone_id = "mock" }\n'
        '  mock_outputs_allowed_terraform_commands = ["init", "validate", "plan"]\n}\n',
    )
    _add_trick(repo, trick)
    commit_all(repo, "mocks for init, validate and plan")
    violations, _model = check.run(repo)
    mine = [v for v in violations if v.file == f"{trick.path}/terragrunt.hcl"]
    assert [v for v in mine if v.rule.startswith("enforce-")] == [], mine
    ws = Workspace(repo)
    env = ws.tool_env
    assert verify.violations(repo / trick.path, trick.path, "cloud", env, ws.policy) == []
    out = tmp_path / "plans"
    result = plan_unit(_target(repo, trick.path), out, env, policy=ws.policy)
    assert result.status == "changes", result.error
