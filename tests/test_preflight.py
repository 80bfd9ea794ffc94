"""Executor preflight: tool versions, the job's identity, and units of another executor.

Real parts: the pinned binaries, moto's STS on loopback (an assumed role gives
an ``assumed-role`` ARN; plain credentials give moto's fixed
``arn:aws:sts::123456789012:user/moto``), and for Google Cloud a local HTTP
token endpoint that google-auth really exchanges a token with (workload
identity federation: STS token exchange, then service account impersonation).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import boto3
import pytest
from infra_fixtures import commit_all, edit, invoke, invoke_in_process, serving

from tooling.core.rules import registry
from tooling.core.rules.rule import UnitFacts
from tooling.engine.rules import preflight
from tooling.errors import ToolingError
from tooling.io.workspace import Workspace
from tooling.model.policy import CheckPolicy, Executor

LAN_ROLE = "arn:aws:iam::123456789012:role/infra-lan-executor"
AUDIENCE = "//iam.googleapis.com/projects/123456/locations/global/workloadIdentityPools/github/providers/github"
LAN_SA = "infra-lan@example-infra.iam.gserviceaccount.com"


# --------------------------------------------------------------------------- pure


def test_foreign_units_name_the_unit_and_both_executors() -> None:
    units = [("live/cluster/vms", "lan"), ("live/cloud/dns", "hosted"), ("live/x", None)]
    problems = preflight.foreign_units(units, "lan")
    assert len(problems) == 2
    assert problems[0].startswith(
        "unit live/cloud/dns belongs to executor hosted, but this job runs as executor lan"
    )
    assert "unit live/x belongs to executor (none)" in problems[1]
    assert preflight.foreign_units(units[:1], "lan") == []


@pytest.mark.parametrize(
    ("arn", "ok"),
    [
        ("arn:aws:sts::123456789012:assumed-role/infra-lan-executor/vault-1", True),
        ("arn:aws:sts::123456789012:assumed-role/github-infra-apply/apply-1", False),
        ("arn:aws:sts::123456789012:user/moto", False),
        (None, False),
    ],
)
def test_identity_problems_for_aws(arn: str | None, ok: bool) -> None:
    lan = Executor(
        "lan",
        ("self-hosted", "lan"),
        aws_role_arn_patterns=("arn:aws:sts::*:assumed-role/infra-lan-executor/*",),
    )
    problems = preflight.identity_problems(lan, aws_arn=arn)
    assert (problems == []) is ok
    if not ok:
        assert f"AWS identity {arn} is not the one executor lan runs as" in problems[0]


def test_an_executor_without_expected_identities_checks_none() -> None:
    assert preflight.identity_problems(Executor("hosted", ("ubuntu-latest",))) == []


# --------------------------------------------------------------------------- tool versions


def test_a_tool_version_other_than_the_pin_is_refused(example_repo: Path) -> None:
    pins = example_repo / ".tool-versions"
    pins.write_text(pins.read_text().replace("opentofu 1.12.6", "opentofu 1.12.5"))
    with pytest.raises(ToolingError) as err:
        Workspace(example_repo).check_tools()  # what the preflight's callers run before it
    assert "pins 1.12.5" in str(err.value) and "1.12.6" in str(err.value)
    ran = invoke(
        example_repo, "plan", "--unit", "live/cloud/dns", "--out", str(example_repo / "out")
    )
    assert ran.returncode == 1
    assert re.search(
        r"opentofu: \S*\.tool-versions pins 1\.12\.5, but \S*tofu is 1\.12\.6", ran.stderr
    ), ran.stderr
    assert not (example_repo / "out" / "summary.json").exists()


# --------------------------------------------------------------------------- AWS identity (moto STS)


def _assumed(role_arn: str, session: str) -> dict[str, str]:
    creds = boto3.client("sts").assume_role(RoleArn=role_arn, RoleSessionName=session)[
        "Credentials"
    ]
    return {
        "AWS_ACCESS_KEY_ID": creds["AccessKeyId"],
        "AWS_SECRET_ACCESS_KEY": creds["SecretAccessKey"],
        "AWS_SESSION_TOKEN": creds["SessionToken"],
    }


def test_moto_gives_the_assumed_role_arn_the_patterns_are_written_for(
    aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert preflight.aws_caller_arn() == "arn:aws:sts::123456789012:user/moto"
    for key, value in _assumed(LAN_ROLE, "vault-lan-1").items():
        monkeypatch.setenv(key, value)
    assert (
        preflight.aws_caller_arn()
        == "arn:aws:sts::123456789012:assumed-role/infra-lan-executor/vault-lan-1"
    )


def test_a_wrong_aws_identity_is_refused_before_anything_is_planned(
    example_repo: Path, aws_env: dict[str, str]
) -> None:
    out = example_repo / "out"
    ran = invoke(
        example_repo,
        "plan",
        "--unit",
        "live/cluster/network",
        "--out",
        str(out),
        env={"IAC_EXECUTOR": "lan"},
    )
    assert ran.returncode == 1, ran.output
    assert (
        "AWS identity arn:aws:sts::123456789012:user/moto is not the one executor lan runs as"
        in ran.stderr
    )
    assert "arn:aws:sts::*:assumed-role/infra-lan-executor/*" in ran.stderr
    assert "Traceback" not in ran.output
    assert not (out / "summary.json").exists()
    assert not (example_repo / ".iac" / "state" / "live").exists()


def test_the_right_aws_identity_is_accepted_and_the_unit_is_planned(
    example_repo: Path, aws_env: dict[str, str]
) -> None:
    out = example_repo / "out"
    ran = invoke(
        example_repo,
        "plan",
        "--unit",
        "live/cluster/network",
        "--out",
        str(out),
        env={"IAC_EXECUTOR": "lan", **_assumed(LAN_ROLE, "vault-lan-7")},
    )
    assert ran.returncode == 0, ran.output
    assert (
        "preflight: AWS identity arn:aws:sts::123456789012:assumed-role/infra-lan-executor/vault-lan-7 "
        "is executor lan's" in ran.stderr
    )
    summary = json.loads((out / "summary.json").read_text())
    assert [(u["path"], u["status"]) for u in summary["units"]] == [
        ("live/cluster/network", "changes")
    ]


def test_the_hosted_plan_role_is_not_the_lan_identity(
    example_repo: Path, aws_env: dict[str, str]
) -> None:
    creds = _assumed("arn:aws:iam::123456789012:role/github-infra-plan", "plan-1")
    ran = invoke(
        example_repo,
        "plan",
        "--unit",
        "live/cluster/network",
        "--out",
        str(example_repo / "out"),
        env={"IAC_EXECUTOR": "lan", **creds},
    )
    assert ran.returncode == 1
    assert "assumed-role/github-infra-plan/plan-1 is not the one executor lan runs as" in ran.stderr


# --------------------------------------------------------------------------- units of another executor


def test_planning_a_unit_of_the_other_executor_is_refused(example_repo: Path) -> None:
    # no identity is needed to be refused: the routing check comes first
    ran = invoke(
        example_repo,
        "plan",
        "--unit",
        "live/cloud/dns",
        "--unit",
        "live/cluster/network",
        "--out",
        str(example_repo / "out"),
        env={"IAC_EXECUTOR": "lan"},
    )
    assert ran.returncode == 1
    assert (
        "unit live/cloud/dns belongs to executor hosted, but this job runs as executor lan (IAC_EXECUTOR=lan)"
        in ran.stderr
    )
    assert "live/cluster/network belongs" not in ran.stderr
    assert not (example_repo / "out" / "summary.json").exists()


def test_applying_a_unit_of_the_other_executor_is_refused(example_repo: Path) -> None:
    out = example_repo / "out"
    planned = invoke(example_repo, "plan", "--unit", "live/cloud/dns", "--out", str(out))
    assert planned.returncode == 0, planned.output
    ran = invoke(example_repo, "apply", "--plans", str(out), env={"IAC_EXECUTOR": "lan"})
    assert ran.returncode == 1
    assert (
        "unit live/cloud/dns belongs to executor hosted, but this job runs as executor lan"
        in ran.stderr
    )
    assert not (out / "apply.json").exists()
    assert not (
        example_repo / ".iac" / "state" / "live" / "cloud" / "dns" / "terraform.tfstate"
    ).exists()


def test_an_undeclared_executor_is_refused(example_repo: Path) -> None:
    ran = invoke(
        example_repo,
        "plan",
        "--unit",
        "live/cloud/dns",
        "--out",
        str(example_repo / "out"),
        env={"IAC_EXECUTOR": "gpu"},
    )
    assert ran.returncode == 1
    assert (
        "IAC_EXECUTOR names executor 'gpu', which policy.toml does not declare (declared: hosted, lan)"
        in ran.stderr
    )


# --------------------------------------------------------------------------- Google Cloud identity (google-auth)


class TokenEndpoint:
    """A local stand-in for Google's STS and IAM Credentials endpoints; records every request."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, str], str]] = []
        self.refuse = False
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                endpoint.requests.append(
                    ("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                )
                if self.path == "/v1/token":
                    if endpoint.refuse:
                        self._send(
                            400,
                            {
                                "error": "invalid_grant",
                                "error_description": "subject token rejected",
                            },
                        )
                    else:
                        self._send(
                            200,
                            {
                                "access_token": "federated-token",
                                "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
                                "token_type": "Bearer",
                                "expires_in": 3600,
                            },
                        )
                elif self.path.endswith(":generateAccessToken"):
                    self._send(
                        200, {"accessToken": "sa-token", "expireTime": "2099-01-01T00:00:00Z"}
                    )
                else:
                    self._send(404, {"error": "not found"})

            def _send(self, status: int, doc: dict[str, Any]) -> None:
                data = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._stack = ExitStack()

    def __enter__(self) -> TokenEndpoint:
        self._stack.enter_context(serving(self.server))
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()


@pytest.fixture
def token_endpoint() -> Iterator[TokenEndpoint]:
    with TokenEndpoint() as endpoint:
        yield endpoint


def _external_account(
    tmp_path: Path,
    endpoint: TokenEndpoint,
    monkeypatch: pytest.MonkeyPatch,
    *,
    service_account: str | None,
) -> None:
    """An external account credentials file, as google-github-actions/auth writes it."""
    subject = tmp_path / "oidc-token"
    subject.write_text("github-oidc-jwt")
    info: dict[str, Any] = {
        "type": "external_account",
        "audience": AUDIENCE,
        "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
        "token_url": f"{endpoint.url}/v1/token",
        "credential_source": {"file": str(subject), "format": {"type": "text"}},
    }
    if service_account:
        info["service_account_impersonation_url"] = (
            f"{endpoint.url}/v1/projects/-/serviceAccounts/{service_account}:generateAccessToken"
        )
    path = tmp_path / "gha-creds.json"
    path.write_text(json.dumps(info))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))
    for key in ("GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "CLOUDSDK_CONFIG"):
        monkeypatch.delenv(key, raising=False)


LAN_GCP = Executor(
    "lan",
    ("self-hosted", "lan"),
    gcp_service_account_patterns=("infra-lan@*.iam.gserviceaccount.com",),
)


def test_gcp_identity_is_fetched_from_the_token_endpoint_and_accepted(
    tmp_path: Path,
    token_endpoint: TokenEndpoint,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _external_account(tmp_path, token_endpoint, monkeypatch, service_account=LAN_SA)
    preflight.check_identity(LAN_GCP)
    assert f"preflight: Google Cloud identity {LAN_SA} is executor lan's" in capsys.readouterr().err
    (sts, impersonate) = token_endpoint.requests
    form = parse_qs(sts[3])
    assert sts[1] == "/v1/token"
    assert form["subject_token"] == ["github-oidc-jwt"] and form["audience"] == [AUDIENCE]
    assert form["grant_type"] == ["urn:ietf:params:oauth:grant-type:token-exchange"]
    assert impersonate[1] == f"/v1/projects/-/serviceAccounts/{LAN_SA}:generateAccessToken"
    assert impersonate[2]["authorization"] == "Bearer federated-token"


def test_a_wrong_gcp_service_account_is_refused(
    tmp_path: Path, token_endpoint: TokenEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    _external_account(
        tmp_path,
        token_endpoint,
        monkeypatch,
        service_account="infra-hosted@example-infra.iam.gserviceaccount.com",
    )
    with pytest.raises(ToolingError) as err:
        preflight.check_identity(LAN_GCP)
    assert (
        "service account infra-hosted@example-infra.iam.gserviceaccount.com is not the one executor lan runs as"
        in str(err.value)
    )
    assert len(token_endpoint.requests) == 2  # the token was really fetched before the comparison


def test_gcp_audience_without_impersonation(
    tmp_path: Path, token_endpoint: TokenEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    _external_account(tmp_path, token_endpoint, monkeypatch, service_account=None)
    right = Executor(
        "hosted",
        ("ubuntu-latest",),
        gcp_audience_patterns=(
            "//iam.googleapis.com/projects/*/locations/global/workloadIdentityPools/github/providers/*",
        ),
    )
    preflight.check_identity(right)
    assert [r[1] for r in token_endpoint.requests] == ["/v1/token"]
    wrong = Executor(
        "hosted",
        ("ubuntu-latest",),
        gcp_audience_patterns=(
            "//iam.googleapis.com/projects/*/locations/global/workloadIdentityPools/other/providers/*",
        ),
    )
    with pytest.raises(ToolingError, match="not the workload identity provider of executor hosted"):
        preflight.check_identity(wrong)
    # and a service account is expected, but the credentials impersonate none
    with pytest.raises(
        ToolingError,
        match=r"service account \(none: the credentials impersonate no service account\)",
    ):
        preflight.check_identity(LAN_GCP)


def test_a_rejected_token_exchange_is_an_actionable_error(
    tmp_path: Path, token_endpoint: TokenEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    token_endpoint.refuse = True
    _external_account(tmp_path, token_endpoint, monkeypatch, service_account=LAN_SA)
    with pytest.raises(
        ToolingError, match=r"preflight: cannot obtain Google Cloud credentials .*invalid_grant"
    ):
        preflight.check_identity(LAN_GCP)


# --------------------------------------------------------------------------- the role a unit runs as

ORG_ROLE = "arn:aws:iam::999999999999:role/OrganizationAccountAccessRole"
LAN_IAM_ROLE = "arn:aws:iam::123456789012:role/infra-lan-executor"


def test_role_problems_accept_only_the_executors_own_role_or_one_allowlisted_for_the_tier() -> None:
    lan = Executor("lan", ("self-hosted",), ("arn:aws:sts::*:assumed-role/infra-lan-executor/*",))
    policy = CheckPolicy(allowed_roles={"cloud": {"arn:aws:iam::*:role/dns-admin": "why"}})
    dns_admin = "arn:aws:iam::123456789012:role/dns-admin"
    ok = [
        ("live/a", "cluster", None),
        ("live/b", "cluster", LAN_IAM_ROLE),
        ("live/c", "cloud", dns_admin),
    ]
    assert preflight.role_problems(ok, lan, policy) == []
    refused = preflight.role_problems(
        [("live/d", "cluster", ORG_ROLE), ("live/e", "cluster", dns_admin)], lan, policy
    )
    assert len(refused) == 2
    assert refused[0].startswith(f"unit live/d would run as role {ORG_ROLE} (iam_role)")
    assert "[check.allowed_roles.cluster]" in refused[0]
    assert "unit live/e would run as role" in refused[1]  # allowlisted for another tier only
    # no executor (local use): only an allowlisted role
    assert len(preflight.role_problems(ok, None, policy)) == 1
    assert preflight.assumed_arn(LAN_IAM_ROLE, "s") == (
        "arn:aws:sts::123456789012:assumed-role/infra-lan-executor/s"
    )


def _root_role(repo: Path, role: str) -> None:
    edit(repo, "root.hcl", "locals {", f'iam_role = "{role}"\n\nlocals {{')


def test_a_role_root_hcl_declares_for_every_unit_is_refused_by_the_preflight_before_any_plan(
    example_repo: Path, aws_env: dict[str, str]
) -> None:
    # the verifier lets it through (the unit sets what root.hcl declares); the preflight not
    _root_role(example_repo, ORG_ROLE)
    commit_all(example_repo, "every unit runs as the org role")
    out = example_repo / "out"
    ran = invoke(
        example_repo,
        "plan",
        "--unit",
        "live/cluster/network",
        "--out",
        str(out),
        env={"IAC_EXECUTOR": "lan", **_assumed(LAN_ROLE, "vault-lan-2")},
    )
    assert ran.returncode == 1, ran.output
    assert f"unit live/cluster/network would run as role {ORG_ROLE} (iam_role)" in ran.stderr
    assert "[check.allowed_roles.cluster]" in ran.stderr
    assert "Traceback" not in ran.output
    assert not (out / "summary.json").exists()
    assert not (example_repo / ".iac" / "state" / "live").exists()


def test_a_unit_running_as_its_executors_own_role_is_planned(
    example_repo: Path, aws_env: dict[str, str]
) -> None:
    _root_role(example_repo, LAN_IAM_ROLE)
    commit_all(example_repo, "every unit runs as the lan role")
    out = example_repo / "out"
    ran = invoke(
        example_repo,
        "plan",
        "--unit",
        "live/cluster/network",
        "--out",
        str(out),
        env={"IAC_EXECUTOR": "lan", **_assumed(LAN_ROLE, "vault-lan-3")},
    )
    assert ran.returncode == 0, ran.output
    summary = json.loads((out / "summary.json").read_text())
    assert [(u["path"], u["status"]) for u in summary["units"]] == [
        ("live/cluster/network", "changes")
    ]


def test_apply_refuses_a_unit_whose_role_changed_to_one_its_executor_may_not_use(
    example_repo: Path, aws_env: dict[str, str]
) -> None:
    out = example_repo / "out"
    creds = {"IAC_EXECUTOR": "lan", **_assumed(LAN_ROLE, "vault-lan-4")}
    planned = invoke(
        example_repo, "plan", "--unit", "live/cluster/network", "--out", str(out), env=creds
    )
    assert planned.returncode == 0, planned.output
    _root_role(example_repo, ORG_ROLE)  # after the plan, before the apply
    ran = invoke(example_repo, "apply", "--plans", str(out), env=creds)
    assert ran.returncode != 0, ran.output
    record = json.loads((out / "apply.json").read_text())
    unit = next(u for u in record["units"] if u["path"] == "live/cluster/network")
    assert unit["result"] == "refused"
    assert f"would run as role {ORG_ROLE}" in unit["reason"]
    assert not (
        example_repo / ".iac" / "state" / "live" / "cluster" / "network" / "terraform.tfstate"
    ).exists()


def test_drift_runs_no_render_and_its_verifier_judges_each_units_static_form_once(
    example_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # drift plans unit by unit (the per-unit planner): the verifier before each plan
    # judges the unit's static form, worked out once for the run beside the preflight;
    # what root.hcl declares comes from the model: no `terragrunt render` at all
    judged: Counter[str] = Counter()
    real = registry.verify

    def counted(rendered: Any, declared: Any, facts: UnitFacts, policy: Any) -> Any:
        judged[facts.path] += 1
        return real(rendered, declared, facts, policy)

    monkeypatch.setattr(registry, "verify", counted)
    out = example_repo / "drift"
    ran = invoke_in_process(
        example_repo,
        "drift",
        "--executor",
        "lan",
        "--out",
        str(out),
        monkeypatch=monkeypatch,
        env={"IAC_ECHO_COMMANDS": "1"},
    )
    assert ran.returncode == 0, ran.output
    echoed = [line for line in ran.stderr.splitlines() if line.startswith("+ ")]
    assert any(line.startswith("+ terragrunt ") and " plan" in line for line in echoed), echoed
    assert not [line for line in echoed if line.startswith("+ terragrunt render")], echoed
    drifted = [
        "live/cluster/gitops",
        "live/cluster/network",
        "live/cluster/os",
        "live/cluster/vms",
    ]
    assert judged == dict.fromkeys(drifted, 1), judged
    report = json.loads((out / "drift.json").read_text())
    assert sorted(u["path"] for u in report["units"]) == drifted
