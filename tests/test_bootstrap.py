"""Tests of bootstrap/: the AWS bootstrap script against a real moto server, the
LAN runner installer and the secret seeder as real subprocesses.

bootstrap/bootstrap is run exactly as an operator runs it (a subprocess with
--endpoint-url pointing at the session's moto server). Every test uses its own
bucket and role names: the moto server's state is shared by the session. The
OIDC provider is one per account, so tests only ever add to it.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
BOOTSTRAP_DIR = ROOT / "bootstrap"
BOOTSTRAP = BOOTSTRAP_DIR / "bootstrap"
INSTALL_SH = BOOTSTRAP_DIR / "lan-runner" / "install.sh"
UNIT_TEMPLATE = BOOTSTRAP_DIR / "lan-runner" / "actions-runner.service.in"
SEED_SH = BOOTSTRAP_DIR / "seed-secrets.sh"
SHELL_SCRIPTS = (INSTALL_SH, SEED_SH)

ACCOUNT = "123456789012"  # moto's default account
OIDC_ARN = f"arn:aws:iam::{ACCOUNT}:oidc-provider/token.actions.githubusercontent.com"
AUD = "token.actions.githubusercontent.com:aud"
SUB = "token.actions.githubusercontent.com:sub"
READ_ONLY = "arn:aws:iam::aws:policy/ReadOnlyAccess"
ADMIN = "arn:aws:iam::aws:policy/AdministratorAccess"
LAN_PRINCIPAL = f"arn:aws:iam::{ACCOUNT}:user/lan-runner"
RUNNER_URL = "https://github.com/example-org/infrastructure"


def clean_env(**extra: str) -> dict[str, str]:
    """The test process's environment without the CI markers (the suite itself
    runs in CI, where the scripts rightly refuse), plus ``extra``."""
    env = {key: value for key, value in os.environ.items() if key not in ("CI", "GITHUB_ACTIONS")}
    env.update(extra)
    return env


def load_bootstrap_module() -> ModuleType:
    """Import bootstrap/bootstrap (no .py suffix) to test its pure functions."""
    loader = importlib.machinery.SourceFileLoader("bootstrap_script", str(BOOTSTRAP))
    spec = importlib.util.spec_from_loader("bootstrap_script", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bootstrap_script"] = module
    loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bs() -> ModuleType:
    return load_bootstrap_module()


# --------------------------------------------------------------------------
# bootstrap/bootstrap against moto
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def aws_managed_policies(moto_server: Any) -> Iterator[None]:
    """moto knows AWS managed policies (ReadOnlyAccess, AdministratorAccess)
    only when asked to load them; the bootstrap attaches both."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.iam.models import iam_backends

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MOTO_IAM_LOAD_MANAGED_POLICIES", "true")
        backend = iam_backends[DEFAULT_ACCOUNT_ID]["aws"]
        if READ_ONLY not in backend.managed_policies:
            # The backend was created earlier in the session without them.
            for policy in backend._init_aws_policies():
                backend.managed_policies.setdefault(policy.arn, policy)
        yield


@dataclass
class Bootstrap:
    """One test's configuration file, names and a way to run the script."""

    config: Path
    endpoint: str
    env: dict[str, str]
    foundation: str
    app: str
    plan_role: str
    apply_role: str
    lan_role: str

    @property
    def buckets(self) -> tuple[str, str]:
        return (self.foundation, self.app)

    @property
    def roles(self) -> tuple[str, str, str]:
        return (self.plan_role, self.apply_role, self.lan_role)

    def run(
        self, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                sys.executable,
                str(BOOTSTRAP),
                *args,
                "--config",
                str(self.config),
                "--endpoint-url",
                self.endpoint,
            ],
            env=env if env is not None else self.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def client(self, service: str) -> Any:
        import boto3

        return boto3.client(service, endpoint_url=self.endpoint, region_name="us-east-1")


def write_config(path: Path, suffix: str, **overrides: str) -> dict[str, str]:
    names = {
        "foundation": f"found-state-{suffix}",
        "app": f"app-state-{suffix}",
        "plan_role": f"plan-{suffix}",
        "apply_role": f"apply-{suffix}",
        "lan_role": f"lan-{suffix}",
    }
    apply_environments = overrides.get("apply_environments", '["infra-auto", "infra-manual"]')
    plan_environments = overrides.get("plan_environments", '["infra-drift"]')
    path.write_text(
        f"""
org = "example-org"
repo = "infrastructure"
region = "us-east-1"

[buckets]
foundation = "{names["foundation"]}"
app = "{names["app"]}"

[roles.plan]
name = "{names["plan_role"]}"
environments = {plan_environments}

[roles.apply]
name = "{names["apply_role"]}"
environments = {apply_environments}

[roles.lan]
name = "{names["lan_role"]}"
principal_arn = "{LAN_PRINCIPAL}"
""",
        encoding="utf-8",
    )
    return names


@pytest.fixture
def boot(
    tmp_path: Path, moto_server: Any, aws_env: dict[str, str], aws_managed_policies: None
) -> Bootstrap:
    suffix = uuid.uuid4().hex[:12]
    config = tmp_path / "bootstrap.toml"
    names = write_config(config, suffix)
    return Bootstrap(
        config=config, endpoint=moto_server.endpoint, env=clean_env(**aws_env), **names
    )


def actions(stdout: str) -> list[str]:
    return [line.split()[0] for line in stdout.splitlines() if line.strip()]


def trust(boot: Bootstrap, role: str) -> dict[str, Any]:
    document = boot.client("iam").get_role(RoleName=role)["Role"]["AssumeRolePolicyDocument"]
    return json.loads(document) if isinstance(document, str) else document


def only_statement(document: dict[str, Any]) -> dict[str, Any]:
    statements = document["Statement"]
    statements = [statements] if isinstance(statements, dict) else statements
    assert len(statements) == 1, statements
    return statements[0]


def describe(boot: Bootstrap) -> dict[str, Any]:
    """Everything the bootstrap manages, as the AWS APIs describe it."""
    s3, iam = boot.client("s3"), boot.client("iam")

    def strip(response: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in response.items() if key != "ResponseMetadata"}

    state: dict[str, Any] = {"buckets": {}, "roles": {}}
    for bucket in boot.buckets:
        state["buckets"][bucket] = {
            "versioning": strip(s3.get_bucket_versioning(Bucket=bucket)),
            "encryption": strip(s3.get_bucket_encryption(Bucket=bucket)),
            "public_access_block": strip(s3.get_public_access_block(Bucket=bucket)),
        }
    provider = strip(iam.get_open_id_connect_provider(OpenIDConnectProviderArn=OIDC_ARN))
    state["oidc"] = {key: sorted(provider[key]) for key in ("ClientIDList", "ThumbprintList")}
    for role in boot.roles:
        inline = iam.list_role_policies(RoleName=role)["PolicyNames"]
        state["roles"][role] = {
            "role": strip(iam.get_role(RoleName=role)),
            "attached": strip(iam.list_attached_role_policies(RoleName=role)),
            "inline": {
                name: strip(iam.get_role_policy(RoleName=role, PolicyName=name)) for name in inline
            },
        }
    return state


def bucket_names(boot: Bootstrap) -> set[str]:
    return {bucket["Name"] for bucket in boot.client("s3").list_buckets()["Buckets"]}


def role_names(boot: Bootstrap) -> set[str]:
    return {role["RoleName"] for role in boot.client("iam").list_roles()["Roles"]}


def test_apply_creates_buckets_with_versioning_encryption_and_public_access_block(
    boot: Bootstrap,
) -> None:
    result = boot.run("apply")
    assert result.returncode == 0, result.stderr
    s3 = boot.client("s3")
    for bucket in boot.buckets:
        assert re.search(rf"^create\s+s3-bucket\s+{bucket}$", result.stdout, re.M), result.stdout
        assert s3.get_bucket_versioning(Bucket=bucket)["Status"] == "Enabled"
        rules = s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"][
            "Rules"
        ]
        assert rules[0]["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] in (
            "AES256",
            "aws:kms",
        )
        block = s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"]
        assert block == {
            "BlockPublicAcls": True,
            "IgnorePublicAcls": True,
            "BlockPublicPolicy": True,
            "RestrictPublicBuckets": True,
        }


def test_apply_creates_the_github_oidc_provider(boot: Bootstrap) -> None:
    result = boot.run("apply")
    assert result.returncode == 0, result.stderr
    assert "https://token.actions.githubusercontent.com" in result.stdout
    iam = boot.client("iam")
    arns = [p["Arn"] for p in iam.list_open_id_connect_providers()["OpenIDConnectProviderList"]]
    assert OIDC_ARN in arns
    provider = iam.get_open_id_connect_provider(OpenIDConnectProviderArn=OIDC_ARN)
    assert "sts.amazonaws.com" in provider["ClientIDList"]
    assert provider["Url"].removeprefix("https://") == "token.actions.githubusercontent.com"


def test_plan_role_trusts_pull_requests_and_the_drift_environment_and_reads_state(
    boot: Bootstrap,
) -> None:
    assert boot.run("apply").returncode == 0
    statement = only_statement(trust(boot, boot.plan_role))
    assert statement["Effect"] == "Allow"
    assert statement["Principal"] == {"Federated": OIDC_ARN}
    assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
    assert statement["Condition"] == {
        "StringEquals": {
            AUD: "sts.amazonaws.com",
            SUB: [
                "repo:example-org/infrastructure:pull_request",
                "repo:example-org/infrastructure:environment:infra-drift",
            ],
        }
    }
    iam = boot.client("iam")
    attached = iam.list_attached_role_policies(RoleName=boot.plan_role)["AttachedPolicies"]
    assert [policy["PolicyArn"] for policy in attached] == [READ_ONLY]
    (name,) = iam.list_role_policies(RoleName=boot.plan_role)["PolicyNames"]
    document = iam.get_role_policy(RoleName=boot.plan_role, PolicyName=name)["PolicyDocument"]
    granted = {
        (action, resource)
        for statement in document["Statement"]
        for action in (
            [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]
        )
        for resource in (
            [statement["Resource"]]
            if isinstance(statement["Resource"], str)
            else statement["Resource"]
        )
    }
    assert granted == {
        ("s3:ListBucket", f"arn:aws:s3:::{boot.foundation}"),
        ("s3:GetObject", f"arn:aws:s3:::{boot.foundation}/*"),
    }


def test_apply_role_trusts_the_apply_environments_only(boot: Bootstrap) -> None:
    assert boot.run("apply").returncode == 0
    statement = only_statement(trust(boot, boot.apply_role))
    assert statement["Principal"] == {"Federated": OIDC_ARN}
    assert statement["Condition"] == {
        "StringEquals": {
            AUD: "sts.amazonaws.com",
            SUB: [
                "repo:example-org/infrastructure:environment:infra-auto",
                "repo:example-org/infrastructure:environment:infra-manual",
            ],
        }
    }
    # environment subjects only, matched exactly: no wildcard, no branch or PR subject
    assert set(statement["Condition"]) == {"StringEquals"}
    assert all(":environment:" in sub for sub in statement["Condition"]["StringEquals"][SUB])
    attached = boot.client("iam").list_attached_role_policies(RoleName=boot.apply_role)[
        "AttachedPolicies"
    ]
    assert [policy["PolicyArn"] for policy in attached] == [ADMIN]


def test_environments_come_from_the_config(tmp_path: Path, boot: Bootstrap) -> None:
    names = write_config(
        boot.config,
        uuid.uuid4().hex[:12],
        apply_environments='["staging"]',
        plan_environments="[]",
    )
    for key, value in names.items():
        setattr(boot, key, value)
    assert boot.run("apply").returncode == 0
    condition = only_statement(trust(boot, boot.apply_role))["Condition"]["StringEquals"]
    assert condition[SUB] == "repo:example-org/infrastructure:environment:staging"
    condition = only_statement(trust(boot, boot.plan_role))["Condition"]["StringEquals"]
    assert condition[SUB] == "repo:example-org/infrastructure:pull_request"


def test_a_role_whose_trust_lacks_an_environment_is_updated(boot: Bootstrap) -> None:
    """A role made by the earlier one-environment bootstrap is corrected in place."""
    assert boot.run("apply").returncode == 0
    expected = trust(boot, boot.apply_role)
    narrow = json.loads(json.dumps(expected))
    narrow["Statement"][0]["Condition"]["StringEquals"][SUB] = (
        "repo:example-org/infrastructure:environment:infra-auto"
    )
    boot.client("iam").update_assume_role_policy(
        RoleName=boot.apply_role, PolicyDocument=json.dumps(narrow)
    )
    plan = boot.run("plan")
    assert re.search(
        rf"^update\s+iam-role\s+{boot.apply_role}\b.*trust policy", plan.stdout, re.M
    ), plan.stdout
    assert boot.run("apply").returncode == 0
    assert trust(boot, boot.apply_role) == expected


def test_lan_role_trusts_the_runner_host_and_touches_cluster_state_only(boot: Bootstrap) -> None:
    assert boot.run("apply").returncode == 0
    statement = only_statement(trust(boot, boot.lan_role))
    assert statement["Principal"] == {"AWS": LAN_PRINCIPAL}
    assert statement["Action"] == "sts:AssumeRole"
    iam = boot.client("iam")
    assert iam.list_attached_role_policies(RoleName=boot.lan_role)["AttachedPolicies"] == []
    (name,) = iam.list_role_policies(RoleName=boot.lan_role)["PolicyNames"]
    document = iam.get_role_policy(RoleName=boot.lan_role, PolicyName=name)["PolicyDocument"]
    bucket = f"arn:aws:s3:::{boot.foundation}"
    for statement in document["Statement"]:
        resources = (
            [statement["Resource"]]
            if isinstance(statement["Resource"], str)
            else statement["Resource"]
        )
        for resource in resources:
            assert (
                resource == bucket
                or resource.startswith(f"{bucket}/live/cluster/")
                or (
                    resource == f"{bucket}/live/cloud/dns/*"
                    and statement["Action"] == "s3:GetObject"
                )
                # the apply's audit records: added and read (the chain), never deleted
                or (
                    resource == f"{bucket}/audit/*"
                    and statement["Action"] == ["s3:GetObject", "s3:PutObject"]
                )
            ), resource
    objects = [s for s in document["Statement"] if "s3:PutObject" in s["Action"]]
    assert [s["Resource"] for s in objects] == [f"{bucket}/live/cluster/*", f"{bucket}/audit/*"]
    deletes = [s for s in document["Statement"] if "s3:DeleteObject" in s["Action"]]
    assert [s["Resource"] for s in deletes] == [f"{bucket}/live/cluster/*.tflock"]
    # gitops reads the dns unit's outputs from its state: read-only, that prefix only
    reads = [s for s in document["Statement"] if s.get("Sid") == "ReadUpstreamState"]
    assert [(s["Action"], bs_resources(s)) for s in reads] == [
        ("s3:GetObject", [f"{bucket}/live/cloud/dns/*"])
    ]


def bs_resources(statement: dict[str, Any]) -> list[str]:
    resource = statement["Resource"]
    return [resource] if isinstance(resource, str) else list(resource)


def test_second_apply_prints_only_found_and_changes_nothing(boot: Bootstrap) -> None:
    first = boot.run("apply")
    assert first.returncode == 0, first.stderr
    assert "update" not in actions(first.stdout)
    before = describe(boot)
    second = boot.run("apply")
    assert second.returncode == 0, second.stderr
    assert actions(second.stdout) == ["found"] * 6, second.stdout
    assert "create" not in second.stdout and "update" not in second.stdout
    assert describe(boot) == before


def test_plan_reports_a_tampered_trust_policy_and_apply_fixes_it(boot: Bootstrap) -> None:
    assert boot.run("apply").returncode == 0
    expected = trust(boot, boot.plan_role)
    iam = boot.client("iam")
    loose = json.loads(json.dumps(expected))
    loose["Statement"][0]["Condition"] = {"StringLike": {SUB: "repo:example-org/*"}}
    iam.update_assume_role_policy(RoleName=boot.plan_role, PolicyDocument=json.dumps(loose))

    plan = boot.run("plan")
    assert plan.returncode == 0, plan.stderr
    assert re.search(
        rf"^update\s+iam-role\s+{boot.plan_role}\b.*trust policy", plan.stdout, re.M
    ), plan.stdout
    assert actions(plan.stdout).count("update") == 1
    assert trust(boot, boot.plan_role) == loose, "plan must not change anything"

    apply = boot.run("apply")
    assert apply.returncode == 0, apply.stderr
    assert re.search(rf"^update\s+iam-role\s+{boot.plan_role}\b", apply.stdout, re.M)
    assert trust(boot, boot.plan_role) == expected
    assert actions(boot.run("apply").stdout) == ["found"] * 6


def test_apply_corrects_bucket_and_policy_drift(boot: Bootstrap) -> None:
    assert boot.run("apply").returncode == 0
    before = describe(boot)
    s3, iam = boot.client("s3"), boot.client("iam")
    s3.put_bucket_versioning(Bucket=boot.app, VersioningConfiguration={"Status": "Suspended"})
    s3.delete_public_access_block(Bucket=boot.app)
    iam.attach_role_policy(RoleName=boot.apply_role, PolicyArn=READ_ONLY)
    extra = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}],
    }
    iam.put_role_policy(
        RoleName=boot.lan_role, PolicyName="extra", PolicyDocument=json.dumps(extra)
    )

    plan = boot.run("plan")
    assert actions(plan.stdout).count("update") == 3, plan.stdout
    assert "versioning" in plan.stdout and "public access block" in plan.stdout
    assert f"detach {READ_ONLY}" in plan.stdout and "delete inline policy extra" in plan.stdout

    assert boot.run("apply").returncode == 0
    assert describe(boot) == before


def test_plan_only_reads(boot: Bootstrap) -> None:
    buckets, roles = bucket_names(boot), role_names(boot)
    result = boot.run("plan")
    assert result.returncode == 0, result.stderr
    for name in (*boot.buckets, *boot.roles):
        assert re.search(rf"^create\s+\S+\s+{name}$", result.stdout, re.M), result.stdout
    assert bucket_names(boot) == buckets
    assert role_names(boot) == roles


def test_apply_dry_run_creates_nothing(boot: Bootstrap) -> None:
    buckets, roles = bucket_names(boot), role_names(boot)
    result = boot.run("apply", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert actions(result.stdout).count("create") >= 5, result.stdout
    assert "dry run" in result.stderr
    assert bucket_names(boot) == buckets
    assert role_names(boot) == roles


@pytest.mark.parametrize(
    ("variable", "value"), [("CI", "true"), ("CI", "1"), ("GITHUB_ACTIONS", "true"), ("CI", "yes")]
)
def test_refuses_to_run_in_ci(boot: Bootstrap, variable: str, value: str) -> None:
    buckets, roles = bucket_names(boot), role_names(boot)
    result = boot.run("apply", env={**boot.env, variable: value})
    assert result.returncode == 2
    assert result.stdout == ""
    assert "refusing to run in CI" in result.stderr and "manual" in result.stderr
    assert bucket_names(boot) == buckets
    assert role_names(boot) == roles


@pytest.mark.parametrize("value", ["false", "0", "", "FALSE"])
def test_ci_markers_that_say_no_do_not_block(boot: Bootstrap, value: str) -> None:
    result = boot.run("plan", env={**boot.env, "CI": value, "GITHUB_ACTIONS": value})
    assert result.returncode == 0, result.stderr


def test_ci_refusal_comes_before_any_client_or_config(tmp_path: Path) -> None:
    """No endpoint, no credentials, no config file: the guard answers first."""
    result = subprocess.run(
        [sys.executable, str(BOOTSTRAP), "apply", "--config", str(tmp_path / "missing.toml")],
        env=clean_env(CI="true", AWS_ENDPOINT_URL="http://127.0.0.1:9"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "refusing to run in CI" in result.stderr


def test_help_explains_the_commands() -> None:
    result = subprocess.run(
        [sys.executable, str(BOOTSTRAP), "--help"],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0
    for word in ("plan", "apply", "--config", "--endpoint-url", "--dry-run", "found", "CI"):
        assert word in result.stdout


def test_script_is_an_executable_python3_entry_point() -> None:
    assert os.access(BOOTSTRAP, os.X_OK)
    assert BOOTSTRAP.read_text(encoding="utf-8").splitlines()[0] == "#!/usr/bin/env python3"
    source = BOOTSTRAP.read_text(encoding="utf-8")
    assert not re.search(r"^\s*(from|import)\s+tooling\b", source, re.M)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("org = 'o'\n", "required"),
        ("not toml = = 1\n", "not valid TOML"),
        ("orgg = 'typo'\n", "unknown key"),
    ],
)
def test_bad_config_is_a_usage_error(tmp_path: Path, content: str, message: str) -> None:
    config = tmp_path / "bootstrap.toml"
    config.write_text(content, encoding="utf-8")
    result = subprocess.run(
        [
            sys.executable,
            str(BOOTSTRAP),
            "plan",
            "--config",
            str(config),
            "--endpoint-url",
            "http://127.0.0.1:9",
        ],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert message in result.stderr


def test_shipped_config_is_valid(bs: ModuleType) -> None:
    config = bs.load_config(BOOTSTRAP_DIR / "bootstrap.toml")
    assert config.apply_environments == ("infra-auto", "infra-manual")
    assert config.plan_environments == ("infra-drift",)
    assert config.lan_read_prefixes == ("live/cloud/dns/",)
    assert config.apply_policy_arns == (ADMIN,)
    assert config.lan_state_prefix == "live/cluster/"


# --------------------------------------------------------------------------
# The pure documents
# --------------------------------------------------------------------------


def test_github_trust_policy_document(bs: ModuleType) -> None:
    document = bs.github_trust_policy(OIDC_ARN, bs.github_subject("o", "r", "pull_request"))
    assert document == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "GitHubActionsOIDC",
                "Effect": "Allow",
                "Principal": {"Federated": OIDC_ARN},
                "Action": "sts:AssumeRoleWithWebIdentity",
                "Condition": {
                    "StringEquals": {AUD: "sts.amazonaws.com", SUB: "repo:o/r:pull_request"}
                },
            }
        ],
    }


def test_desired_roles(bs: ModuleType) -> None:
    config = bs.parse_config(
        {
            "org": "o",
            "repo": "r",
            "region": "eu-west-1",
            "buckets": {"foundation": "found-b", "app": "app-b"},
            "roles": {
                "apply": {"environments": ["prod-eu"]},
                "lan": {"principal_arn": LAN_PRINCIPAL},
            },
        }
    )
    plan, apply, lan = bs.desired_roles(config, "aws", ACCOUNT)
    assert plan.trust["Statement"][0]["Condition"]["StringEquals"][SUB] == [
        "repo:o/r:pull_request",
        "repo:o/r:environment:infra-drift",
    ]
    assert (
        apply.trust["Statement"][0]["Condition"]["StringEquals"][SUB]
        == "repo:o/r:environment:prod-eu"
    )
    assert plan.managed_policy_arns == (READ_ONLY,)
    assert apply.managed_policy_arns == (ADMIN,)
    assert lan.trust["Statement"][0]["Principal"] == {"AWS": LAN_PRINCIPAL}
    assert lan.managed_policy_arns == ()


def _config(**roles: dict[str, Any]) -> dict[str, Any]:
    lan = {"principal_arn": LAN_PRINCIPAL, **roles.pop("lan", {})}
    return {
        "org": "o",
        "repo": "r",
        "region": "us-east-1",
        "buckets": {"foundation": "found-b", "app": "app-b"},
        "roles": {**roles, "lan": lan},
    }


@pytest.mark.parametrize(
    ("roles", "message"),
    [
        ({"apply": {"environment": "production"}}, "replaced by roles.apply.environments"),
        ({"apply": {"environments": []}}, "at least one GitHub environment"),
        ({"apply": {"environments": "infra-auto"}}, "must be a list of strings"),
        ({"apply": {"environments": ["infra-auto", "infra-auto"]}}, "twice"),
        ({"apply": {"environments": ["infra *"]}}, "environments entry is not valid"),
        (
            {"plan": {"environments": ["infra-drift", "infra-auto"]}},
            "listed for both the plan and the apply role",
        ),
        ({"lan": {"read_prefixes": ["live/cloud/dns"]}}, "must end with /"),
    ],
)
def test_bad_role_settings_are_refused(bs: ModuleType, roles: dict[str, Any], message: str) -> None:
    with pytest.raises(bs.ConfigError, match=re.escape(message)):
        bs.parse_config(_config(**roles))


def _workflow_subjects(role_markers: tuple[str, ...]) -> set[str]:
    """The OIDC subjects of every workflow job that assumes a role whose
    variable is one of ``role_markers``: ``environment:<name>`` for jobs with an
    environment, ``pull_request`` for jobs of pull request workflows without one."""
    import yaml

    subjects: set[str] = set()
    for path in sorted((ROOT / ".github" / "workflows").glob("*.yml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        on = doc.get("on", doc.get(True))
        events = set(on) if isinstance(on, dict | list) else {on}
        for job in doc["jobs"].values():
            text = json.dumps(job.get("steps") or [])
            if not any(marker in text for marker in role_markers):
                continue
            environment = job.get("environment")
            if isinstance(environment, dict):
                environment = environment.get("name")
            if environment:
                subjects.add(f"environment:{environment}")
            else:
                assert "pull_request" in events and "pull_request_target" not in events, (
                    f"{path.name}: a job assumes {role_markers} without an environment "
                    "outside a pull request: no subject of the role's trust matches it"
                )
                subjects.add("pull_request")
    return subjects


def test_shipped_trust_matches_the_workflows_exactly(bs: ModuleType) -> None:
    """The roles trust exactly the subjects the workflows' jobs present."""
    config = bs.load_config(BOOTSTRAP_DIR / "bootstrap.toml")
    plan, apply, _ = bs.desired_roles(config, "aws", ACCOUNT)

    def trusted(role: Any) -> set[str]:
        sub = role.trust["Statement"][0]["Condition"]["StringEquals"][SUB]
        prefix = f"repo:{config.org}/{config.repo}:"
        values = [sub] if isinstance(sub, str) else sub
        assert all(v.startswith(prefix) for v in values), values
        return {v.removeprefix(prefix) for v in values}

    apply_subjects = _workflow_subjects(("vars.AWS_APPLY_ROLE_ARN", "vars.VAULT_APPLY_ROLE"))
    plan_subjects = _workflow_subjects(("vars.AWS_PLAN_ROLE_ARN", "vars.VAULT_PLAN_ROLE"))
    assert apply_subjects == {"environment:infra-auto", "environment:infra-manual"}
    assert plan_subjects == {"pull_request", "environment:infra-drift"}
    assert trusted(apply) == apply_subjects
    assert trusted(plan) == plan_subjects


def test_normalize_policy_ignores_list_order_and_singletons(bs: ModuleType) -> None:
    a = {"Statement": [{"Action": ["s3:GetObject"], "Resource": ["b", "a"]}]}
    b = {"Statement": {"Action": "s3:GetObject", "Resource": ["a", "b"]}}
    assert bs.same_policy(a, b)
    assert bs.same_policy(json.dumps(a).replace(" ", ""), b)
    assert not bs.same_policy(a, {"Statement": {"Action": "s3:*", "Resource": ["a", "b"]}})


def test_bucket_drift(bs: ModuleType) -> None:
    spec = bs.BucketSpec("b", "us-east-1")
    good = bs.BucketState(
        "us-east-1",
        "Enabled",
        {"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}},
        dict(bs.PUBLIC_ACCESS_BLOCK),
    )
    assert bs.bucket_drift(good, spec) == []
    kms = bs.BucketState(
        "us-east-1",
        "Enabled",
        {"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms"}},
        dict(bs.PUBLIC_ACCESS_BLOCK),
    )
    assert bs.bucket_drift(kms, spec) == [], "never weaken KMS to AES256"
    bare = bs.BucketState("us-east-1", "", None, None)
    assert len(bs.bucket_drift(bare, spec)) == 3


@pytest.mark.parametrize(
    ("environ", "blocked"),
    [
        ({}, False),
        ({"CI": ""}, False),
        ({"CI": "false"}, False),
        ({"CI": "0", "GITHUB_ACTIONS": "False"}, False),
        ({"CI": "true"}, True),
        ({"GITHUB_ACTIONS": "true"}, True),
        ({"CI": "woodpecker"}, True),
    ],
)
def test_ci_variable(bs: ModuleType, environ: dict[str, str], blocked: bool) -> None:
    assert (bs.ci_variable(environ) is not None) is blocked


# --------------------------------------------------------------------------
# The shell scripts
# --------------------------------------------------------------------------


def sh(
    script: Path, *args: str, env: dict[str, str] | None = None, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(script), *args],
        env=env if env is not None else clean_env(),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("script", SHELL_SCRIPTS, ids=lambda p: p.name)
def test_shell_help(script: Path) -> None:
    result = sh(script, "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Usage:")
    assert "--dry-run" in result.stdout


@pytest.mark.parametrize(
    ("script", "args"),
    [
        (INSTALL_SH, ["--bogus"]),
        (INSTALL_SH, ["--name", "lan-1"]),  # no --url
        (INSTALL_SH, ["--url", RUNNER_URL]),  # no --name
        (INSTALL_SH, ["--url"]),  # no value
        (INSTALL_SH, ["--url", "http://github.com/o/r", "--name", "lan-1"]),  # not https
        (INSTALL_SH, ["--url", RUNNER_URL, "--name", "bad name"]),
        (INSTALL_SH, ["--url", RUNNER_URL, "--name", "lan-1", "--user", "root"]),
        (SEED_SH, ["--bogus"]),
        (SEED_SH, ["--only", "nope"]),
        (SEED_SH, ["--prefix"]),
    ],
)
def test_shell_bad_arguments(script: Path, args: list[str]) -> None:
    result = sh(script, *args)
    assert result.returncode != 0
    assert "Usage:" in result.stderr


def test_seed_secrets_never_echoes_a_stray_argument() -> None:
    result = sh(SEED_SH, "api_token_secret=hunter2")
    assert result.returncode == 2
    assert "hunter2" not in result.stdout + result.stderr


@pytest.mark.parametrize("variable", ["CI", "GITHUB_ACTIONS"])
@pytest.mark.parametrize(
    ("script", "args"),
    [(INSTALL_SH, ["--url", RUNNER_URL, "--name", "lan-1", "--dry-run"]), (SEED_SH, ["--dry-run"])],
    ids=["install.sh", "seed-secrets.sh"],
)
def test_shell_refuses_in_ci(script: Path, args: list[str], variable: str) -> None:
    result = sh(script, *args, env=clean_env(**{variable: "true"}))
    assert result.returncode == 2
    assert "refusing to run in CI" in result.stderr
    assert result.stdout == ""


def test_install_dry_run_prints_the_ephemeral_registration() -> None:
    result = sh(INSTALL_SH, "--url", RUNNER_URL, "--name", "lan-1", "--dry-run", stdin="not-read\n")
    assert result.returncode == 0, result.stderr
    config_lines = [
        line for line in result.stdout.splitlines() if "config.sh" in line and line.startswith("+")
    ]
    assert len(config_lines) == 1, result.stdout
    line = config_lines[0]
    assert re.search(r"config\.sh .*--labels self-hosted,lan .*--ephemeral", line), line
    assert "--disableupdate" in line
    assert "runuser -u gh-runner" in line
    assert f"--url {RUNNER_URL}" in line and "--name lan-1" in line
    assert "--token" not in line
    assert "+ systemctl enable --now actions-runner-lan-1.service" in result.stdout
    assert "User=gh-runner" in result.stdout
    assert "not-read" not in result.stdout


def test_install_persistent_keeps_auto_update() -> None:
    result = sh(
        INSTALL_SH,
        "--url",
        RUNNER_URL,
        "--name",
        "lan-2",
        "--persistent",
        "--user",
        "runner2",
        "--labels",
        "self-hosted,lan,big",
        "--dry-run",
    )
    assert result.returncode == 0, result.stderr
    (line,) = [
        line for line in result.stdout.splitlines() if "config.sh" in line and line.startswith("+")
    ]
    assert "--labels self-hosted,lan,big" in line
    assert "--ephemeral" not in line and "--disableupdate" not in line
    assert "runuser -u runner2" in line


def test_install_dry_run_leaves_the_token_file(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("AABBCC-secret-token\n", encoding="utf-8")
    result = sh(
        INSTALL_SH,
        "--url",
        RUNNER_URL,
        "--name",
        "lan-1",
        "--token-file",
        str(token_file),
        "--dry-run",
    )
    assert result.returncode == 0, result.stderr
    assert token_file.exists()
    assert "AABBCC-secret-token" not in result.stdout + result.stderr
    assert str(token_file) in result.stdout


STUBS = {
    # Record the call; the real ones would change this machine.
    "useradd": 'printf "useradd %s\\n" "$*" >>"$STUB_LOG"\n',
    "chown": 'printf "chown %s\\n" "$*" >>"$STUB_LOG"\n',
    "systemctl": 'printf "systemctl %s\\n" "$*" >>"$STUB_LOG"\n',
    # install -d: just make the directory (the last argument).
    "install": 'printf "install %s\\n" "$*" >>"$STUB_LOG"\nmkdir -p "${@: -1}"\n',
    # runuser -u USER -- CMD...: run CMD as the current user.
    "runuser": 'printf "runuser %s\\n" "$*" >>"$STUB_LOG"\nshift 3\nexec "$@"\n',
}

FAKE_CONFIG_SH = """#!/usr/bin/env bash
printf '%s\\n' "$*" >"$STUB_LOG.config-args"
printf '%s' "${ACTIONS_RUNNER_INPUT_TOKEN:-}" >"$STUB_LOG.config-token"
: >.runner
"""


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="install.sh insists on root"
)
def test_install_reads_the_token_file_deletes_it_and_passes_it_in_the_environment(
    tmp_path: Path,
) -> None:
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    for name, body in STUBS.items():
        stub = stubs / name
        stub.write_text(f"#!/usr/bin/env bash\n{body}", encoding="utf-8")
        stub.chmod(0o755)
    archive = tmp_path / "actions-runner-linux-x64-2.337.0.tar.gz"
    payload = tmp_path / "payload"
    payload.mkdir()
    for name, body in (("config.sh", FAKE_CONFIG_SH), ("run.sh", "#!/usr/bin/env bash\n")):
        (payload / name).write_text(body, encoding="utf-8")
        (payload / name).chmod(0o755)
    with tarfile.open(archive, "w:gz") as tar:
        for item in payload.iterdir():
            tar.add(item, arcname=f"./{item.name}")
    token_file = tmp_path / "token"
    token = "AAAA-registration-token-1234"
    token_file.write_text(token + "\n", encoding="utf-8")
    units = tmp_path / "units"
    units.mkdir()
    log = tmp_path / "calls.log"

    result = sh(
        INSTALL_SH,
        "--url", RUNNER_URL,
        "--name", "lan-9",
        "--user", f"ghr{uuid.uuid4().hex[:8]}",
        "--dir", str(tmp_path / "opt"),
        "--runner-archive", str(archive),
        "--token-file", str(token_file),
        env=clean_env(PATH=f"{stubs}{os.pathsep}{os.environ['PATH']}", STUB_LOG=str(log), SYSTEMD_UNIT_DIR=str(units)),
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert not token_file.exists(), "the token file must be deleted after use"
    assert Path(f"{log}.config-token").read_text(encoding="utf-8") == token
    args = Path(f"{log}.config-args").read_text(encoding="utf-8")
    assert "--labels self-hosted,lan" in args and "--ephemeral" in args
    everything = log.read_text(encoding="utf-8") + args + result.stdout + result.stderr
    assert token not in everything, "the token must never be on a command line or printed"
    unit = (units / "actions-runner-lan-9.service").read_text(encoding="utf-8")
    assert f"ExecStart={tmp_path / 'opt' / 'lan-9'}/run.sh" in unit
    assert "@RUNNER_" not in unit
    assert token not in unit
    assert "systemctl enable --now actions-runner-lan-9.service" in log.read_text(encoding="utf-8")
    runner_dir = tmp_path / "opt" / "lan-9"
    assert token not in "".join(
        p.read_text(encoding="utf-8", errors="replace")
        for p in runner_dir.rglob("*")
        if p.is_file()
    )


def test_unit_template_has_every_placeholder_install_fills() -> None:
    template = UNIT_TEMPLATE.read_text(encoding="utf-8")
    script = INSTALL_SH.read_text(encoding="utf-8")
    placeholders = set(re.findall(r"@RUNNER_[A-Z]+@", template))
    assert placeholders == {"@RUNNER_NAME@", "@RUNNER_USER@", "@RUNNER_DIR@", "@RUNNER_MODE@"}
    for placeholder in placeholders:
        assert placeholder in script


SEED_INPUT = 'root@pam!tofu\ns3cr3t-"value\\x\nmachine: secrets\nline two\n.\n-----BEGIN KEY-----\nabc\n.\ngit.example.com ssh-ed25519 AAAA\n.\n'
SEED_VALUES = ("root@pam!tofu", "s3cr3t-", "machine: secrets", "BEGIN KEY", "ssh-ed25519 AAAA")


def test_seed_dry_run_prints_paths_never_values() -> None:
    result = sh(SEED_SH, "--dry-run", stdin=SEED_INPUT)
    assert result.returncode == 0, result.stderr
    for path in ("secret/infra/lan/proxmox", "secret/infra/lan/talos", "secret/infra/lan/flux"):
        assert path in result.stdout
    assert "api_token_id" in result.stdout and "api_token_secret" in result.stdout
    for value in SEED_VALUES:
        assert value not in result.stdout + result.stderr


FAKE_VAULT = """#!/usr/bin/env bash
printf '%s\\n' "$*" >>"$VAULT_LOG.argv"
if [[ "$1 $2" == "kv put" ]]; then
  cat >>"$VAULT_LOG.stdin"
  printf '\\n' >>"$VAULT_LOG.stdin"
fi
"""


@pytest.fixture
def fake_vault(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A ``vault`` on PATH that records its arguments and stdin; (log prefix, environment)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "vault").write_text(FAKE_VAULT, encoding="utf-8")
    (bin_dir / "vault").chmod(0o755)
    log = tmp_path / "vault"
    env = clean_env(
        PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        VAULT_LOG=str(log),
        VAULT_ADDR="http://127.0.0.1:8200",
    )
    return log, env


def test_seed_hands_values_to_vault_on_stdin_only(fake_vault: tuple[Path, dict[str, str]]) -> None:
    log, env = fake_vault
    result = sh(SEED_SH, stdin=SEED_INPUT, env=env)
    assert result.returncode == 0, result.stderr
    argv = Path(f"{log}.argv").read_text(encoding="utf-8")
    assert "kv put secret/infra/lan/proxmox -" in argv
    for value in SEED_VALUES:
        assert value not in argv + result.stdout + result.stderr
    written = [
        json.loads(line)
        for line in Path(f"{log}.stdin").read_text(encoding="utf-8").splitlines()
        if line
    ]
    assert written == [
        {"api_token_id": "root@pam!tofu", "api_token_secret": 's3cr3t-"value\\x'},
        {"secrets_yaml": "machine: secrets\nline two\n"},
        {
            "ssh_private_key": "-----BEGIN KEY-----\nabc\n",
            "known_hosts": "git.example.com ssh-ed25519 AAAA\n",
        },
    ]


def test_seed_refuses_a_missing_value(fake_vault: tuple[Path, dict[str, str]]) -> None:
    log, env = fake_vault
    result = sh(SEED_SH, "--only", "proxmox", stdin="only-the-id\n", env=env)
    assert result.returncode == 1
    assert "no value for api_token_secret" in result.stderr
    assert not Path(f"{log}.stdin").exists(), "nothing may be written for an incomplete path"


def test_shellcheck() -> None:
    shellcheck = shutil.which("shellcheck")
    if shellcheck is None:
        pytest.skip("shellcheck is not installed (apt-get install shellcheck)")
    result = subprocess.run(
        [shellcheck, "--severity=style", *map(str, SHELL_SCRIPTS)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("script", [*SHELL_SCRIPTS, BOOTSTRAP], ids=lambda p: p.name)
def test_scripts_are_executable(script: Path) -> None:
    assert os.access(script, os.X_OK)
    assert script.read_text(encoding="utf-8").startswith("#!/usr/bin/env ")
