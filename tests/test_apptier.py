"""The per-application tier: `invoke app-plan` / `invoke app-apply` on a sample app folder.

The sample (tests/apps/sample/terraform) is plain OpenTofu built on
``terraform_data``; it is copied into a throwaway git repository per test (the
app team's repository). Real tofu, real git, local state and moto's S3.
"""

from __future__ import annotations

import json
import re
import shutil
import uuid
from pathlib import Path
from typing import Any

import boto3
import pytest
from infra_fixtures import REPO, commit_all, git, invoke

from tooling.core.apps import tier
from tooling.core.apps.tier import AppState
from tooling.engine.apps import runs
from tooling.errors import ToolingError, UsageError
from tooling.io import config
from tooling.model.policy import AppPolicy, policy_from

SAMPLE = REPO / "tests" / "apps" / "sample" / "terraform"
FOUNDATION_BUCKET = "example-org-iac-foundation-state"
POLICY = AppPolicy(("terraform_data", "aws_s3_bucket*", "aws_db_instance"), (FOUNDATION_BUCKET,))


@pytest.fixture
def app_dir(tmp_path: Path) -> Path:
    """The sample app's terraform/ folder, in its own git repository."""
    repo = tmp_path / "sample-app"
    shutil.copytree(SAMPLE, repo / "terraform")
    git(repo.parent, "init", "--quiet", "--initial-branch=main", str(repo))
    commit_all(repo, "the sample app")
    return repo / "terraform"


def _plan(
    infra: Path, app_dir: Path, out: Path, app: str = "sample", env: dict[str, str] | None = None
) -> tuple[Any, dict[str, Any]]:
    ran = invoke(infra, "app-plan", "--app", app, "--dir", str(app_dir), "--out", str(out), env=env)
    assert "Traceback" not in ran.output, ran.output
    summary = (
        json.loads((out / "summary.json").read_text()) if (out / "summary.json").exists() else {}
    )
    return ran, summary


def _apply(
    infra: Path,
    app_dir: Path,
    out: Path,
    *args: str,
    app: str = "sample",
    env: dict[str, str] | None = None,
) -> tuple[Any, dict[str, Any]]:
    ran = invoke(
        infra, "app-apply", "--app", app, "--dir", str(app_dir), "--plans", str(out), *args, env=env
    )
    assert "Traceback" not in ran.output, ran.output
    doc = json.loads((out / "apply.json").read_text()) if (out / "apply.json").exists() else {}
    return ran, doc


# --------------------------------------------------------------------------- pure


@pytest.mark.parametrize("name", ["billing", "a-1", "42"])
def test_good_app_names(name: str) -> None:
    assert tier.check_name(name) == name


@pytest.mark.parametrize(
    "name", ["", "Billing", "bill_ing", "../live", "a/b", "a b", "live/cloud", "é"]
)
def test_bad_app_names_are_usage_errors(name: str) -> None:
    with pytest.raises(UsageError, match=re.escape("^[a-z0-9-]+$")):
        tier.check_name(name)


def test_state_location_local_then_s3_with_the_foundation_endpoint_as_default(
    tmp_path: Path,
) -> None:
    local = tier.state_for("billing", tmp_path, {})
    assert local == AppState(
        "local",
        "apps/billing/terraform.tfstate",
        path=str(tmp_path / ".iac/app-state/apps/billing/terraform.tfstate"),
    )
    assert tier.backend_config_args(local) == [f"-backend-config=path={local.path}"]
    s3 = tier.state_for(
        "billing",
        tmp_path,
        {
            "IAC_APP_STATE_BUCKET": "apps-b",
            "IAC_STATE_REGION": "eu-west-1",
            "IAC_STATE_ENDPOINT": "http://127.0.0.1:9",
        },
    )
    assert (s3.bucket, s3.key, s3.region, s3.endpoint) == (
        "apps-b",
        "apps/billing/terraform.tfstate",
        "eu-west-1",
        "http://127.0.0.1:9",
    )
    args = tier.backend_config_args(s3)
    assert args[:5] == [
        "-backend-config=bucket=apps-b",
        "-backend-config=key=apps/billing/terraform.tfstate",
        "-backend-config=region=eu-west-1",
        "-backend-config=encrypt=true",
        "-backend-config=use_lockfile=true",
    ]
    assert '-backend-config=endpoints={s3="http://127.0.0.1:9"}' in args
    own = tier.state_for(
        "billing", tmp_path, {"IAC_APP_STATE_BUCKET": "apps-b", "IAC_APP_STATE_REGION": "us-west-2"}
    )
    assert own.region == "us-west-2" and own.endpoint is None
    assert not any("endpoints" in a for a in tier.backend_config_args(own))
    assert tier.plan_args(Path("/x"), Path("/o/p.tfplan"))[5:] == [
        "-lock-timeout=0s",
        "-out=/o/p.tfplan",
    ]
    assert tier.plan_args(Path("/x"), Path("/o/p.tfplan"), lock=False)[5] == "-lock=false"
    assert tier.init_args(Path("/x"), own)[:6] == [
        "tofu",
        "-chdir=/x",
        "init",
        "-input=false",
        "-no-color",
        "-reconfigure",
    ]


def test_an_app_bucket_that_is_a_foundation_bucket_is_refused(tmp_path: Path) -> None:
    state = tier.state_for("billing", tmp_path, {"IAC_APP_STATE_BUCKET": FOUNDATION_BUCKET})
    assert "is a foundation state bucket" in tier.state_problems(state, (FOUNDATION_BUCKET,))[0]
    env = {"IAC_STATE_BUCKET": "live-bucket"}
    assert tier.foundation_buckets(POLICY, env) == (FOUNDATION_BUCKET, "live-bucket")


def _scan(tmp_path: Path, files: dict[str, str]) -> list[str]:
    root = tmp_path / "terraform"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return tier.config_problems(runs.scan_config(root), "billing", POLICY, (FOUNDATION_BUCKET,))


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (
            {
                "main.tf": 'terraform {\n  backend "s3" {\n    key = "live/cloud/dns/terraform.tfstate"\n  }\n}\n'
            },
            "terraform/main.tf:2: backend \"s3\" key = 'live/cloud/dns/terraform.tfstate' points at the foundation's state",
        ),
        (
            {
                "main.tf": f'terraform {{\n  backend "s3" {{\n    bucket = "{FOUNDATION_BUCKET}"\n  }}\n}}\n'
            },
            f'terraform/main.tf:2: backend "s3" points at the foundation state bucket {FOUNDATION_BUCKET}',
        ),
        (
            {
                "main.tf": 'terraform {\n  backend "local" {\n    path = "../../infra/.iac/state/live/cloud/iam/terraform.tfstate"\n  }\n}\n'
            },
            "points at the foundation's state",
        ),
        (
            {
                "prod.s3.tfbackend": 'bucket = "apps"\nkey    = "live/cluster/vms/terraform.tfstate"\n'
            },
            "terraform/prod.s3.tfbackend:1: backend config file key = 'live/cluster/vms/terraform.tfstate'",
        ),
        (
            {
                "data.tf": 'data "terraform_remote_state" "net" {\n  backend = "s3"\n  config = {\n    bucket = "x"\n    key    = "live/cluster/network/terraform.tfstate"\n  }\n}\n'
            },
            "terraform/data.tf:1: terraform_remote_state key = 'live/cluster/network/terraform.tfstate'",
        ),
        (
            {
                "main.tf": 'terraform {\n  backend "s3" {\n    key = "apps/payments/terraform.tfstate"\n  }\n}\n'
            },
            "points at another application's state; app billing owns apps/billing/ only",
        ),
        (
            {"main.tf": 'resource "aws_iam_role" "admin" {\n  name = "x"\n}\n'},
            "terraform/main.tf:1: resource type aws_iam_role is not allowed for applications",
        ),
        (
            {
                "main.tf": 'module "db" {\n  source = "./modules/db"\n}\n',
                "modules/db/main.tf": 'resource "aws_instance" "vm" {}\n',
            },
            "terraform/modules/db/main.tf:1: resource type aws_instance is not allowed",
        ),
        (
            {"main.tf.json": json.dumps({"resource": {"aws_lambda_function": {"f": {}}}})},
            "terraform/main.tf.json: resource type aws_lambda_function is not allowed",
        ),
        (
            {
                "main.tf.json": json.dumps(
                    {"terraform": {"backend": {"s3": {"key": "live/x/terraform.tfstate"}}}}
                )
            },
            "terraform/main.tf.json: backend \"s3\" key = 'live/x/terraform.tfstate'",
        ),
    ],
)
def test_config_refusals_name_the_file_and_line(
    tmp_path: Path, files: dict[str, str], expected: str
) -> None:
    problems = _scan(tmp_path, files)
    assert len(problems) == 1, problems
    assert expected in problems[0]


def test_allowed_config_passes(tmp_path: Path) -> None:
    assert (
        _scan(
            tmp_path,
            {
                "main.tf": 'terraform {\n  backend "s3" {\n    bucket = "apps"\n    key = "apps/billing/terraform.tfstate"\n  }\n}\n'
                'resource "aws_s3_bucket_versioning" "v" {}\nresource "aws_db_instance" "db" {}\n'
                'module "remote" {\n  source = "git::https://example.invalid/m.git"\n}\n',
            },
        )
        == []
    )


def test_plan_problems_count_every_kept_resource_but_not_deletes() -> None:
    plan = {
        "resource_changes": [
            {
                "address": "aws_db_instance.db",
                "type": "aws_db_instance",
                "mode": "managed",
                "change": {"actions": ["create"]},
            },
            {
                "address": "module.x.aws_iam_role.r",
                "type": "aws_iam_role",
                "mode": "managed",
                "change": {"actions": ["no-op"]},
            },
            {
                "address": "aws_instance.old",
                "type": "aws_instance",
                "mode": "managed",
                "change": {"actions": ["delete"]},
            },
            {
                "address": "data.aws_caller_identity.me",
                "type": "aws_caller_identity",
                "mode": "data",
                "change": {"actions": ["read"]},
            },
        ]
    }
    assert tier.plan_problems(plan, POLICY) == [
        "module.x.aws_iam_role.r: resource type aws_iam_role is not allowed for applications "
        "(policy.toml [apps] allowed_resource_types)"
    ]


def test_the_shipped_policy_has_an_allowlist_and_the_foundation_bucket_of_bootstrap() -> None:
    import tomllib

    policy = config.read_policy(REPO).app_tier()
    assert (
        policy.allows("terraform_data")
        and policy.allows("aws_db_instance")
        and policy.allows("aws_s3_bucket")
    )
    assert not policy.allows("aws_iam_role") and not policy.allows("aws_instance")
    boot = tomllib.loads((REPO / "bootstrap" / "bootstrap.toml").read_text())
    assert policy.foundation_buckets == (boot["buckets"]["foundation"],)


def test_a_policy_without_an_apps_table_is_an_actionable_error() -> None:
    with pytest.raises(ToolingError, match=r"policy.toml has no \[apps\] table"):
        policy_from({"gates": {}}).app_tier()


# --------------------------------------------------------------------------- plan and apply, local state


def test_plan_and_apply_with_local_state_under_apps_name(
    example_repo: Path, app_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "plan"
    ran, summary = _plan(example_repo, app_dir, out)
    assert ran.returncode == 0, ran.output
    assert "app sample: terraform/ with local state" in ran.stderr
    (unit,) = summary["units"]
    assert (unit["path"], unit["tier"], unit["status"]) == ("apps/sample", "app", "changes")
    assert unit["counts"]["create"] == 2
    assert unit["gate"]["decision"] == "auto"
    assert summary["app"]["state"]["key"] == "apps/sample/terraform.tfstate"
    assert summary["head"] == git(app_dir.parent, "rev-parse", "HEAD").strip()
    assert summary["tools"]["opentofu"] == "1.12.6"
    comment = (out / "comment.md").read_text()
    assert comment.startswith("<!-- iac-tooling:plan-report -->\n")
    assert "`apps/sample`" in comment and "terraform_data.database" in comment
    # the app folder is left as it was: no generated file, no .terraform
    assert sorted(p.name for p in app_dir.iterdir()) == ["main.tf"]
    assert not git(app_dir.parent, "status", "--porcelain").strip()

    ran, doc = _apply(example_repo, app_dir, out)
    assert ran.returncode == 0, ran.output
    assert [(u["path"], u["result"]) for u in doc["units"]] == [("apps/sample", "applied")]
    state = example_repo / ".iac" / "app-state" / "apps" / "sample" / "terraform.tfstate"
    resources = {r["name"] for r in json.loads(state.read_text())["resources"]}
    assert resources == {"database", "bucket"}
    assert not (example_repo / ".iac" / "state").exists()  # nothing in the foundation's state
    assert sorted(p.name for p in app_dir.iterdir()) == ["main.tf"]

    again = tmp_path / "again"
    ran, summary = _plan(example_repo, app_dir, again)
    assert ran.returncode == 0 and summary["units"][0]["status"] == "no-changes"


def test_app_plan_and_apply_redact_the_attributes_policy_toml_declares(
    example_repo: Path, app_dir: Path, tmp_path: Path
) -> None:
    secret = "sample-assets"  # the sample app's terraform_data.bucket input.name
    policy = example_repo / "policy.toml"
    text = policy.read_text(encoding="utf-8")
    assert text.rstrip().endswith('# docker_container = ["env"]')  # the table comes last
    policy.write_text(text + 'terraform_data = ["input.name"]\n', encoding="utf-8")
    commit_all(example_repo, "declare the bucket names sensitive")
    out = tmp_path / "plan"
    planned, summary = _plan(example_repo, app_dir, out)
    assert planned.returncode == 0, planned.output
    assert summary["units"][0]["status"] == "changes"
    assert "(redacted)" in next(out.rglob("plan.txt")).read_text(encoding="utf-8")
    applied, doc = _apply(example_repo, app_dir, out)
    assert applied.returncode == 0, applied.output
    assert [(u["path"], u["result"]) for u in doc["units"]] == [("apps/sample", "applied")]
    for written in out.rglob("*"):
        if written.is_file() and written.suffix in (".txt", ".log", ".md", ".json"):
            assert secret not in written.read_text(encoding="utf-8"), written
    assert secret not in planned.output and secret not in applied.output


def test_a_delete_waits_for_approval_then_applies_with_it(
    example_repo: Path, app_dir: Path, tmp_path: Path
) -> None:
    ran, _ = _plan(example_repo, app_dir, tmp_path / "p1")
    assert _apply(example_repo, app_dir, tmp_path / "p1")[0].returncode == 0
    main = app_dir / "main.tf"
    main.write_text(
        re.sub(r'resource "terraform_data" "bucket" \{.*?\n\}\n', "", main.read_text(), flags=re.S)
    )
    commit_all(app_dir.parent, "drop the bucket")
    ran, summary = _plan(example_repo, app_dir, tmp_path / "p2")
    assert ran.returncode == 0, ran.output
    gate = summary["units"][0]["gate"]
    assert gate["decision"] == "manual" and "deletes terraform_data.bucket" in gate["reasons"]
    ran, doc = _apply(example_repo, app_dir, tmp_path / "p2")
    assert ran.returncode == 0
    assert doc["units"][0]["result"] == "waiting-approval"
    ran, doc = _apply(example_repo, app_dir, tmp_path / "p2", "--approve-manual")
    assert ran.returncode == 0, ran.output
    assert doc["units"][0]["result"] == "applied"


def test_apply_refuses_a_plan_made_at_another_commit_or_for_another_app(
    example_repo: Path, app_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "plan"
    assert _plan(example_repo, app_dir, out)[0].returncode == 0
    ran, _ = _apply(example_repo, app_dir, out, app="other")
    assert ran.returncode == 1 and "these plans are for app 'sample', not 'other'" in ran.stderr
    (app_dir / "extra.tf").write_text('resource "terraform_data" "cache" {}\n')
    commit_all(app_dir.parent, "a later commit")
    ran, doc = _apply(example_repo, app_dir, out)
    assert ran.returncode == 1
    assert doc["units"][0]["result"] == "refused" and "HEAD is" in doc["units"][0]["reason"]
    assert not (
        example_repo / ".iac" / "app-state" / "apps" / "sample" / "terraform.tfstate"
    ).exists()


# --------------------------------------------------------------------------- plan and apply, moto S3


def test_plan_and_apply_on_s3_write_exactly_apps_name_in_the_app_bucket(
    example_repo: Path, app_dir: Path, tmp_path: Path, aws_env: dict[str, str]
) -> None:
    s3 = boto3.client("s3")
    bucket = f"app-tier-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    env = {"IAC_APP_STATE_BUCKET": bucket, "IAC_APP_STATE_ENDPOINT": aws_env["AWS_ENDPOINT_URL"]}
    # a pull request's plan (the app's read-only role) takes no lock and writes nothing
    pr = tmp_path / "pr"
    ran, summary = _plan(
        example_repo, app_dir, pr, env={**env, "GITHUB_EVENT_NAME": "pull_request"}
    )
    assert ran.returncode == 0, ran.output
    assert (
        " plan -input=false -no-color -lock=false "
        in (pr / "units/apps/sample/plan.log").read_text()
    )
    assert s3.list_objects_v2(Bucket=bucket).get("KeyCount") == 0
    out = tmp_path / "plan"
    ran, summary = _plan(example_repo, app_dir, out, env=env)
    assert ran.returncode == 0, ran.output
    assert f"S3 state s3://{bucket}/apps/sample/terraform.tfstate" in ran.stderr
    assert "-lock-timeout=0s" in (out / "units/apps/sample/plan.log").read_text()
    assert summary["app"]["state"]["bucket"] == bucket
    ran, doc = _apply(example_repo, app_dir, out, env=env)
    assert ran.returncode == 0, ran.output
    assert doc["units"][0]["result"] == "applied"
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    assert keys == ["apps/sample/terraform.tfstate"]  # and the lock file is gone
    state = json.loads(s3.get_object(Bucket=bucket, Key=keys[0])["Body"].read())
    assert {r["name"] for r in state["resources"]} == {"database", "bucket"}
    assert not (example_repo / ".iac" / "app-state").exists()


# --------------------------------------------------------------------------- refusals


def test_a_bad_app_name_is_refused_before_anything_runs(
    example_repo: Path, app_dir: Path, tmp_path: Path
) -> None:
    ran, summary = _plan(example_repo, app_dir, tmp_path / "plan", app="Sample_App")
    assert ran.returncode == 2
    assert (
        "--app 'Sample_App': an application name is lower-case letters, digits and '-' only"
        in ran.stderr
    )
    assert summary == {}


@pytest.mark.parametrize(
    ("backend", "message"),
    [
        (
            'backend "s3" {\n    key = "live/cloud/iam/terraform.tfstate"\n  }',
            "terraform/backend.tf:2: backend \"s3\" key = 'live/cloud/iam/terraform.tfstate' points at the foundation's state",
        ),
        (
            f'backend "s3" {{\n    bucket = "{FOUNDATION_BUCKET}"\n    key    = "apps/sample/terraform.tfstate"\n  }}',
            f'terraform/backend.tf:2: backend "s3" points at the foundation state bucket {FOUNDATION_BUCKET}',
        ),
    ],
)
def test_a_backend_pointing_at_the_foundation_is_refused(
    example_repo: Path, app_dir: Path, tmp_path: Path, backend: str, message: str
) -> None:
    (app_dir / "backend.tf").write_text(f"terraform {{\n  {backend}\n}}\n")
    ran, summary = _plan(example_repo, app_dir, tmp_path / "plan")
    assert ran.returncode == 1
    assert "app sample: refused:" in ran.stderr and message in ran.stderr
    assert summary == {}
    assert not (example_repo / ".iac" / "app-state").exists()


def test_the_foundation_bucket_as_app_bucket_is_refused(
    example_repo: Path, app_dir: Path, tmp_path: Path
) -> None:
    ran, _ = _plan(
        example_repo, app_dir, tmp_path / "plan", env={"IAC_APP_STATE_BUCKET": FOUNDATION_BUCKET}
    )
    assert ran.returncode == 1
    assert f"IAC_APP_STATE_BUCKET={FOUNDATION_BUCKET} is a foundation state bucket" in ran.stderr


def test_a_disallowed_resource_type_in_the_config_is_refused_before_init(
    example_repo: Path, app_dir: Path, tmp_path: Path
) -> None:
    (app_dir / "iam.tf").write_text('resource "aws_iam_role" "admin" {\n  name = "app-admin"\n}\n')
    ran, summary = _plan(example_repo, app_dir, tmp_path / "plan")
    assert ran.returncode == 1
    assert (
        "terraform/iam.tf:1: resource type aws_iam_role is not allowed for applications"
        in ran.stderr
    )
    assert summary == {}
    assert not (
        example_repo / ".iac" / "app-work"
    ).exists()  # tofu never ran (no provider download)


def test_a_disallowed_type_from_a_remote_module_is_refused_on_the_plan_and_never_applied(
    example_repo: Path, app_dir: Path, tmp_path: Path
) -> None:
    # a module in its own git repository: the config scan cannot see inside it, the plan can.
    # Pinned by tag from an allowed repository (the app tier refuses any other remote
    # module before init), served from a local folder through IAC_MODULE_REWRITE.
    modules = tmp_path / "platform-modules" / "queue.git"
    (modules / "queue").mkdir(parents=True)
    (modules / "queue" / "main.tf").write_text(
        'resource "terraform_data" "queue" {\n  input = "jobs"\n}\n'
    )
    git(tmp_path, "init", "--quiet", "--initial-branch=main", str(modules))
    commit_all(modules, "queue module")
    git(modules, "tag", "v1.0.0")
    rewrite = {
        "IAC_MODULE_REWRITE": f"https://git.example.com/platform-modules/=file://{modules.parent}/"
    }
    (app_dir / "queue.tf").write_text(
        'module "queue" {\n  source = '
        '"git::https://git.example.com/platform-modules/queue.git//queue?ref=v1.0.0"\n}\n'
    )
    policy = example_repo / "policy.toml"
    policy.write_text(policy.read_text().replace('  "terraform_data",\n', "", 1))
    (
        app_dir / "main.tf"
    ).unlink()  # the sample's own terraform_data would be refused by the config scan
    commit_all(app_dir.parent, "only the module")
    out = tmp_path / "plan"
    ran, summary = _plan(example_repo, app_dir, out, env=rewrite)
    assert ran.returncode == 1
    unit = summary["units"][0]
    assert unit["status"] == "error" and unit["plan_file"] is None
    assert (
        "refused: module.queue.terraform_data.queue: resource type terraform_data is not allowed"
        in unit["error"]
    )
    assert not list(out.rglob("*.tfplan"))
    ran, doc = _apply(example_repo, app_dir, out, env=rewrite)
    assert ran.returncode == 1 and doc["units"][0]["result"] == "refused"
    assert not (
        example_repo / ".iac" / "app-state" / "apps" / "sample" / "terraform.tfstate"
    ).exists()
