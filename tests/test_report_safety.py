"""Report folders and secrets end to end: nothing lost, nothing leaked.

Real terragrunt and tofu on local test modules; the GitHub API is the local test server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from infra_fixtures import (
    GIT_ENV,
    apply_unit,
    commit_all,
    git,
    invoke,
    local_unit,
    read_summary,
    units_by_path,
)

pytestmark = pytest.mark.e2e

CANARIES = (
    "canary-plain-7f3a9",
    "canary-map-41c2e",
    "canary-list-9b8d1",
    "canary-list-2e4f6",
    "canary-multi-line-one",
    "canary-multi-line-two",
)

VAULT_MODULE = """
output "token" {
  value     = "canary-plain-7f3a9"
  sensitive = true
}
output "conf" {
  value     = { user = "admin-user", password = "canary-map-41c2e" }
  sensitive = true
}
output "keys" {
  value     = ["canary-list-9b8d1", "canary-list-2e4f6"]
  sensitive = true
}
output "pem" {
  value     = "-----BEGIN KEY-----\\ncanary-multi-line-one\\ncanary-multi-line-two\\n-----END KEY-----\\n"
  sensitive = true
}
output "public" {
  value = "not-a-secret-endpoint"
}
"""

CONSUMER_MODULE = """
variable "token" { type = string }
variable "conf" { type = map(string) }
variable "keys" { type = list(string) }
variable "pem" { type = string }
variable "public" { type = string }
variable "db_password" {
  type      = string
  default   = "canary-sensitive-var-5d1"
  sensitive = true
}
resource "terraform_data" "app" {
  input = { token = var.token, conf = var.conf, keys = var.keys, pem = var.pem, public = var.public }
}
output "echo" {
  value = "${var.token} ${var.conf["password"]}"
}
"""

CONSUMER_DEPS = """
dependency "vault" {
  config_path = "../vault"
}

inputs = {
  token  = dependency.vault.outputs.token
  conf   = dependency.vault.outputs.conf
  keys   = dependency.vault.outputs.keys
  pem    = dependency.vault.outputs.pem
  public = dependency.vault.outputs.public
}
"""


def _leaks(folder: Path, *texts: str) -> list[str]:
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix != ".tfplan"):
        content = path.read_text(errors="replace")
        found += [f"{path.relative_to(folder)}: {c}" for c in CANARIES if c in content]
    for i, text in enumerate(texts):
        found += [f"text {i}: {c}" for c in CANARIES if c in text]
    return found


# --------------------------------------------------------------------------- the guarded folder


def test_app_plan_out_dot_refuses_and_leaves_the_clone_whole(
    example_repo: Path, tmp_path: Path
) -> None:
    app = tmp_path / "app"
    app.mkdir()
    (app / "main.tf").write_text('resource "terraform_data" "x" {\n  input = "x"\n}\n')
    ran = invoke(example_repo, "app-plan", "--app", "sample", "--dir", str(app), "--out", ".")
    assert ran.returncode == 2, ran.output
    assert "it is the repository" in ran.stderr
    assert (example_repo / ".git").is_dir() and (example_repo / "root.hcl").is_file()
    assert git(example_repo, "status", "--porcelain").strip() == ""


def test_plan_out_holding_a_file_deep_inside_units_is_refused_and_nothing_is_deleted(
    example_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    assert (
        invoke(example_repo, "plan", "--unit", "live/cloud/dns", "--out", str(out)).returncode == 0
    )
    (out / "units" / "mine").mkdir()
    (out / "units" / "mine" / "precious.txt").write_text("keep me")
    ran = invoke(example_repo, "plan", "--unit", "live/cloud/dns", "--out", str(out))
    assert ran.returncode == 2, ran.output
    assert "units/mine/precious.txt" in ran.stderr
    assert (out / "units" / "mine" / "precious.txt").read_text() == "keep me"
    assert (out / "summary.json").is_file()


def test_a_plan_that_fails_to_parse_keeps_the_previous_report(
    example_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    assert (
        invoke(example_repo, "plan", "--unit", "live/cloud/dns", "--out", str(out)).returncode == 0
    )
    before = (out / "summary.json").read_text()
    unit = example_repo / "live" / "cloud" / "dns" / "terragrunt.hcl"
    unit.write_text("inputs = = {\n" + unit.read_text())
    ran = invoke(example_repo, "plan", "--unit", "live/cloud/dns", "--out", str(out))
    assert ran.returncode == 1 and "Traceback" not in ran.output, ran.output
    assert "live/cloud/dns/terragrunt.hcl:1:" in ran.stderr, ran.stderr  # file:line:col
    assert (out / "summary.json").read_text() == before
    assert (out / "comment.md").is_file() and (
        out / "units" / "live" / "cloud" / "dns" / "plan.txt"
    ).is_file()


def test_a_second_plan_into_the_same_folder_refuses_while_the_first_runs(
    example_repo: Path, tmp_path: Path
) -> None:
    unit = example_repo / "live" / "cloud" / "dns" / "terragrunt.hcl"
    text = unit.read_text()
    hook = '  before_hook "slow" {\n    commands = ["plan"]\n    execute  = ["sleep", "8"]\n  }\n'
    unit.write_text(text.replace("terraform {\n", "terraform {\n" + hook, 1))
    # a unit's own hook is refused unless policy.toml allowlists its file (enforce-hooks)
    policy = example_repo / "policy.toml"
    policy.write_text(
        policy.read_text().replace(
            "[check.allowed_run_at_parse]\n",
            '[check.allowed_run_at_parse]\n"live/cloud/dns/terragrunt.hcl" = "a slow plan, for this test"\n',
            1,
        )
    )
    commit_all(example_repo, "a slow plan")
    out = tmp_path / "out"
    first = subprocess.Popen(
        [sys.executable, "-m", "invoke", "plan", "--unit", "live/cloud/dns", "--out", str(out)],
        cwd=example_repo,
        env={**os.environ, **GIT_ENV},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (out / "units").is_dir():
        assert time.monotonic() < deadline and first.poll() is None, "the first plan never started"
        time.sleep(0.1)
    second = invoke(example_repo, "plan", "--unit", "live/cloud/dns", "--out", str(out))
    out1, _ = first.communicate(timeout=300)
    assert second.returncode == 1, second.output
    assert "another run is writing to this folder" in second.stderr
    assert first.returncode == 0, out1
    summary = json.loads((out / "summary.json").read_text())
    assert [u["status"] for u in summary["units"]] == ["changes"]


# --------------------------------------------------------------------------- secrets


def _vault_and_consumer(repo: Path, tmp_path: Path) -> None:
    local_unit(repo, "vault", VAULT_MODULE)
    local_unit(repo, "consumer", CONSUMER_MODULE, CONSUMER_DEPS)
    commit_all(repo, "a unit with sensitive outputs and one that reads them")
    apply_unit(repo, "live/cloud/vault", tmp_path / "vault-plan")


def test_sensitive_dependency_outputs_never_reach_the_report_logs_summary_or_output(
    example_repo: Path, tmp_path: Path
) -> None:
    _vault_and_consumer(example_repo, tmp_path)
    out = tmp_path / "out"
    step = tmp_path / "step-summary.md"
    env = {
        **os.environ,
        **GIT_ENV,
        "GITHUB_ACTIONS": "true",
        "GITHUB_STEP_SUMMARY": str(step),
        "TF_VAR_extra_secret": "canary-tfvar-env-88a",
        "GH_TOKEN": "ghp_canarytoken0000",
    }
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "invoke",
            "plan",
            "--unit",
            "live/cloud/consumer",
            "--out",
            str(out),
        ],
        cwd=example_repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    plan_text = (out / "units/live/cloud/consumer/plan.txt").read_text()
    assert (
        "terraform_data.app" in plan_text and "not-a-secret-endpoint" in plan_text
    )  # the plan is still there
    assert _leaks(out, ran.stderr, step.read_text()) == []
    assert "canary-tfvar-env-88a" not in step.read_text() + ran.stderr
    # in GitHub Actions the runner is told to mask them too, line by line
    for canary in CANARIES:
        assert f"::add-mask::{canary}" in ran.stdout
    assert "::add-mask::canary-tfvar-env-88a" in ran.stdout
    assert "::add-mask::ghp_canarytoken0000" in ran.stdout
    leftover = "\n".join(
        line for line in ran.stdout.splitlines() if not line.startswith("::add-mask::")
    )
    assert not any(c in leftover for c in CANARIES)

    drift = tmp_path / "drift"
    ran = invoke(example_repo, "drift", "--out", str(drift))
    assert "Traceback" not in ran.output
    assert (drift / "units/live/cloud/consumer/plan.txt").is_file()
    assert _leaks(drift, ran.output) == []


def test_nothing_posted_to_github_carries_a_registered_secret(github_api) -> None:  # type: ignore[no-untyped-def]
    from tooling.engine import secrets
    from tooling.io.forge import Forge

    env = github_api.env()
    number = github_api.state.add_issue("drift", body="x")["number"]
    secrets.register({"canary-posted-secret"})
    try:
        Forge.from_env(env).comment(number, "plan shows canary-posted-secret here")
        Forge.from_env(env).create_issue("Drift: canary-posted-secret", "body canary-posted-secret")
    finally:
        secrets.reset()
    bodies = json.dumps([r.body for r in github_api.requests])
    assert "canary-posted-secret" not in bodies
    assert "(redacted)" in bodies


# --------------------------------------------------------------------------- what is secret, and nothing else

UP_TOKEN = "canary-up-token-61b7e"
UP_MODULE = f"""
output "token" {{
  value     = "{UP_TOKEN}"
  sensitive = true
}}
"""

#: echoes its input (an upstream's sensitive output, a plain input for OpenTofu) in an error
DOWN_MODULE = """
variable "token" {
  type = string
  validation {
    condition     = length(var.token) < 8
    error_message = "The token ${var.token} is too long."
  }
}
resource "terraform_data" "x" {
  input = "x"
}
"""

UP_DEP = """
dependency "up" {
  config_path = "../up"
}

inputs = {
  token = dependency.up.outputs.token
}
"""


def _in_clear(folder: Path, secrets: Sequence[str], *texts: str) -> list[str]:
    """Where any of ``secrets`` stands in clear: files of ``folder`` (not binary plans), ``texts``."""
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix != ".tfplan"):
        content = path.read_text(errors="replace")
        found += [f"{path.relative_to(folder)}: {s}" for s in secrets if s in content]
    for i, text in enumerate(texts):
        found += [f"text {i}: {s}" for s in secrets if s in text]
    return found


def test_a_batch_plan_whose_dependent_fails_still_redacts_its_upstreams_sensitive_outputs(
    example_repo: Path, tmp_path: Path
) -> None:
    local_unit(example_repo, "up", UP_MODULE)
    local_unit(example_repo, "down", DOWN_MODULE, UP_DEP)
    commit_all(example_repo, "a unit whose failing plan echoes an upstream's sensitive output")
    apply_unit(example_repo, "live/cloud/up", tmp_path / "up-plan")
    out = tmp_path / "out"
    # two units: one `terragrunt run --all` (tooling/engine/plan/batchplanner.py)
    ran = invoke(
        example_repo,
        "plan",
        "--unit",
        "live/cloud/down",
        "--unit",
        "live/cloud/dns",
        "--out",
        str(out),
    )
    assert ran.returncode == 1, ran.output
    units = units_by_path(read_summary(out))
    assert units["live/cloud/down"]["status"] == "error"
    assert units["live/cloud/dns"]["status"] == "changes"
    assert "is too long" in str(units["live/cloud/down"]["error"])  # the real failure is kept
    assert _in_clear(out, [UP_TOKEN], ran.output) == []


#: plans fine; its apply fails, echoing the upstream's value (known only at apply)
ECHO_AT_APPLY_MODULE = """
variable "token" {
  type = string
}
resource "terraform_data" "x" {
  input = "${var.token} ${timestamp()}"
  lifecycle {
    postcondition {
      condition     = length(self.output) < 8
      error_message = "Applied ${self.output}: too long."
    }
  }
}
"""


def test_an_apply_that_echoes_an_upstreams_sensitive_output_is_redacted(
    example_repo: Path, tmp_path: Path
) -> None:
    local_unit(example_repo, "up", UP_MODULE)
    local_unit(example_repo, "echo", ECHO_AT_APPLY_MODULE, UP_DEP)
    commit_all(example_repo, "a unit whose apply echoes an upstream's sensitive output")
    apply_unit(example_repo, "live/cloud/up", tmp_path / "up-plan")
    out = tmp_path / "out"
    planned = invoke(example_repo, "plan", "--unit", "live/cloud/echo", "--out", str(out))
    assert planned.returncode == 0, planned.output
    ran = invoke(example_repo, "apply", "--plans", str(out), "--approve-manual")
    assert ran.returncode == 1, ran.output
    record = json.loads((out / "apply.json").read_text())
    assert [u["result"] for u in record["units"]] == ["failed"]
    assert "too long" in (out / "units/live/cloud/echo/apply.log").read_text()
    assert _in_clear(out, [UP_TOKEN], ran.output, planned.output) == []


def test_a_plain_tf_var_value_never_rewrites_unit_paths_and_the_plans_apply(
    example_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    env = {"TF_VAR_dns_zone_kind": "cloud", "TF_VAR_site": "live"}
    ran = invoke(
        example_repo,
        "plan",
        "--unit",
        "live/cloud/dns",
        "--unit",
        "live/cloud/iam",
        "--out",
        str(out),
        env=env,
    )
    assert ran.returncode == 0, ran.output
    summary = read_summary(out)
    assert list(units_by_path(summary)) == ["live/cloud/dns", "live/cloud/iam"]
    for unit in units_by_path(summary).values():
        assert (out / str(unit["plan_file"])).is_file(), unit["plan_file"]
    comment = (out / "comment.md").read_text()
    assert "live/cloud/dns" in comment and "live/(redacted)" not in comment
    assert "(redacted)" not in (out / "summary.json").read_text()
    applied = invoke(example_repo, "apply", "--plans", str(out), "--approve-manual", env=env)
    assert applied.returncode == 0, applied.output
    record = json.loads((out / "apply.json").read_text())
    assert {u["path"]: u["result"] for u in record["units"]} == {
        "live/cloud/dns": "applied",
        "live/cloud/iam": "applied",
    }


AGE_KEY = "AGE-SECRET-KEY-1CANARYQQQ7Z9XK2V"
ENC_MODULE = """
variable "age" {
  type = string
}
variable "token" {
  type = string
}
resource "terraform_data" "x" {
  input = { age = var.age, b64 = base64encode(var.token), url = urlencode("${var.token}/") }
}
"""
ENC_DEP = """
dependency "up" {
  config_path = "../up"
}

# the age key reaches the module as TF_VAR_age (a secret is never read with get_env)
inputs = {
  token = dependency.up.outputs.token
}
"""


def test_an_age_key_and_encodings_of_a_registered_secret_never_reach_the_report(
    example_repo: Path, tmp_path: Path
) -> None:
    import base64
    from urllib.parse import quote

    local_unit(example_repo, "up", UP_MODULE)
    local_unit(example_repo, "enc", ENC_MODULE, ENC_DEP)
    commit_all(example_repo, "a unit that shows an age key and encodings of a secret")
    apply_unit(example_repo, "live/cloud/up", tmp_path / "up-plan")
    out = tmp_path / "out"
    ran = invoke(
        example_repo,
        "plan",
        "--unit",
        "live/cloud/enc",
        "--out",
        str(out),
        env={"SOPS_AGE_KEY": AGE_KEY, "TF_VAR_age": AGE_KEY},
    )
    assert ran.returncode == 0, ran.output
    encoded = [base64.b64encode(UP_TOKEN.encode()).decode(), quote(f"{UP_TOKEN}/", safe="")]
    plan_text = (out / "units/live/cloud/enc/plan.txt").read_text()
    assert "b64" in plan_text and "url" in plan_text and "(redacted)" in plan_text
    assert _in_clear(out, [AGE_KEY, UP_TOKEN, *encoded], ran.output) == []


def test_an_adoption_never_prints_an_upstreams_sensitive_output(example_repo: Path) -> None:
    module = 'variable "token" {\n  type = string\n}\nresource "terraform_data" "db" {\n  input = var.token\n}\n'
    local_unit(example_repo, "up", UP_MODULE)
    local_unit(example_repo, "adoptee", module, UP_DEP)
    commit_all(example_repo, "a unit to adopt, whose difference holds an upstream's secret")
    apply_unit(example_repo, "live/cloud/up", example_repo.parent / "up-plan")
    ran = invoke(example_repo, "adopt", "live/cloud/adoptee", "terraform_data.db", "db-1")
    assert ran.returncode == 1, ran.output  # the difference (input) refuses the adoption
    assert "input: null -> " in ran.stderr and "(redacted)" in ran.stderr
    assert UP_TOKEN not in ran.output


def test_a_resource_address_holding_an_upstreams_secret_stops_the_plan_naming_the_field(
    example_repo: Path, tmp_path: Path
) -> None:
    module = (
        'variable "token" {\n  type = string\n}\n'
        'resource "terraform_data" "x" {\n  for_each = toset([var.token])\n  input = "x"\n}\n'
    )
    local_unit(example_repo, "up", UP_MODULE)
    local_unit(example_repo, "keyed", module, UP_DEP)
    commit_all(example_repo, "a unit whose resource address is an upstream's secret")
    apply_unit(example_repo, "live/cloud/up", tmp_path / "up-plan")
    out = tmp_path / "out"
    ran = invoke(example_repo, "plan", "--unit", "live/cloud/keyed", "--out", str(out))
    assert ran.returncode == 1, ran.output
    assert "error: summary.json: /units/0/" in ran.stderr
    assert "/address would hold a secret value" in ran.stderr
    assert not (out / "summary.json").exists()  # never a rewritten address
    assert _in_clear(out, [UP_TOKEN], ran.output) == []
