"""Plans and state at rest: OpenTofu's encryption, configured once by root.hcl.

With the real tools: the example tree plans plain by default and encrypted when
``IAC_ENCRYPTION_PASSPHRASE`` is set (the report is still written, ``tofu show``
fails without the key); state objects in S3 (moto) are encrypted, with a
passphrase or with AWS KMS (moto's KMS); an apply without the key refuses in one
line, applies nothing and leaves the state object as it was; and the runbook's
switch of an existing repository from plain to encrypted state works, then
keeps working once the fallback is removed.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from infra_fixtures import (
    GIT_ENV,
    commit_all,
    edit,
    encrypted_envelope,
    invoke,
    read_summary,
    s3_state_bucket,
    units_by_path,
)

from tooling.core.apply import encryption
from tooling.model import encryption as contract

PASSPHRASE = "correct horse battery staple $(touch pwned) 'q'"
UNIT = "live/cloud/dns"


# ------------------------------------------------------------------ the pure rules


def test_a_zip_plan_or_plain_state_is_not_encrypted_and_an_envelope_names_its_provider() -> None:
    assert encryption.key_providers(b"PK\x03\x04rest") is None
    assert encryption.key_providers(b'{"version": 4, "resources": []}') is None
    assert encryption.key_providers(b"not json") is None
    assert encryption.key_providers(encrypted_envelope("pbkdf2")) == {"pbkdf2"}
    assert encryption.key_providers(encrypted_envelope("aws_kms")) == {"aws_kms"}


def test_the_missing_key_is_named_by_the_provider_of_the_first_plan_that_needs_it() -> None:
    plans = [("a.tfplan", b"PK\x03\x04"), ("b.tfplan", encrypted_envelope("aws_kms"))]
    assert encryption.missing_key(plans, {}) == ("b.tfplan", contract.KMS_KEY_ENV)
    assert encryption.missing_key(plans, {contract.KMS_KEY_ENV: "k"}) is None
    pbkdf2 = [("c.tfplan", encrypted_envelope("pbkdf2"))]
    assert encryption.missing_key(pbkdf2, {}) == ("c.tfplan", contract.PASSPHRASE_ENV)
    assert encryption.missing_key(pbkdf2, {contract.PASSPHRASE_ENV: ""}) is not None
    assert encryption.missing_key([("d.tfplan", b"PK\x03\x04")], {}) is None


def test_only_a_set_passphrase_reaches_opentofu_as_the_generated_variable() -> None:
    assert contract.tofu_env({}) == {}
    assert contract.tofu_env({contract.PASSPHRASE_ENV: ""}) == {}
    assert contract.tofu_env({contract.PASSPHRASE_ENV: "p" * 20}) == {
        "TF_VAR_iac_encryption_passphrase": "p" * 20
    }


@pytest.mark.parametrize(
    ("environ", "words"),
    [
        pytest.param({contract.PASSPHRASE_ENV: "short $(x)"}, "has 10 characters", id="short"),
        pytest.param(
            {contract.KMS_KEY_ENV: 'k" } resource "x" "y" {'}, "not a KMS key id", id="hcl-quote"
        ),
        pytest.param({contract.KMS_KEY_ENV: "$(touch pwned)"}, "not a KMS key id", id="shell"),
        pytest.param({contract.KMS_KEY_ENV: "key id"}, "not a KMS key id", id="space"),
        pytest.param(
            {contract.FROM_PLAIN_ENV: "yes", contract.PASSPHRASE_ENV: "p" * 16},
            "use 'true'",
            id="from-plain-yes",
        ),
        pytest.param({contract.FROM_PLAIN_ENV: "true"}, "without a key", id="from-plain-no-key"),
    ],
)
def test_unusable_encryption_variables_are_refused_by_name_without_the_passphrase(
    environ: dict[str, str], words: str
) -> None:
    message = contract.problem(environ)
    assert message is not None and words in message
    assert "\n" not in message
    if contract.PASSPHRASE_ENV in environ:
        assert environ[contract.PASSPHRASE_ENV] not in message


def test_usable_encryption_variables_pass_and_say_what_encrypts() -> None:
    arn = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    good = {contract.PASSPHRASE_ENV: "p" * 16, contract.KMS_KEY_ENV: arn}
    assert contract.problem(good) is None
    assert contract.problem({contract.KMS_KEY_ENV: "alias/iac-state"}) is None
    assert contract.problem({}) is None and contract.describe({}) == ""
    assert contract.describe(good) == "state and plans encrypted (AWS KMS, passphrase as fallback)"
    assert contract.describe(
        {contract.PASSPHRASE_ENV: "p" * 16, contract.FROM_PLAIN_ENV: "true"}
    ) == ("state and plans encrypted (passphrase, plain still read)")


# ------------------------------------------------------------------ with the real tools


def _plan(repo: Path, out: Path, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    ran = invoke(repo, "plan", "--out", str(out), *args, env=env)
    assert ran.returncode == 0, ran.output
    return read_summary(out)


def _plan_file(out: Path, unit: str = UNIT) -> Path:
    return out / str(units_by_path(read_summary(out))[unit]["plan_file"])


def _work_copy(repo: Path, unit: str = UNIT) -> Path:
    from tooling.io import terragrunt

    work = terragrunt.working_copy(repo / unit)
    assert work is not None
    return work


def _tofu_show(work: Path, plan: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["tofu", "show", "-json", str(plan)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def _without_key() -> dict[str, str]:
    env = {**os.environ}
    for name in (contract.PASSPHRASE_ENV, "TF_VAR_iac_encryption_passphrase"):
        env.pop(name, None)
    env["TF_CLI_CONFIG_FILE"] = os.devnull
    return env


def _state(s3: Any, bucket: str, unit: str = UNIT) -> dict[str, Any]:
    got = s3.get_object(Bucket=bucket, Key=f"{unit}/terraform.tfstate")
    return {"body": got["Body"].read(), "etag": got["ETag"]}


def _readable_state(body: bytes) -> bool:
    try:
        doc = json.loads(body)
    except ValueError:
        return False
    return isinstance(doc, dict) and "resources" in doc


@pytest.mark.e2e
def test_the_example_plans_plain_by_default_and_encrypted_with_a_passphrase(
    example_repo: Path, tmp_path: Path
) -> None:
    plain = _plan(example_repo, tmp_path / "plain", "--unit", UNIT)
    assert _plan_file(tmp_path / "plain").read_bytes().startswith(encryption.ZIP_MAGIC)
    assert (
        "State and plan files are plain"
        in (_work_copy(example_repo) / contract.GENERATED_FILE).read_text()
    )

    env = {contract.PASSPHRASE_ENV: PASSPHRASE}
    out = tmp_path / "encrypted"
    summary = _plan(example_repo, out, "--unit", UNIT, env=env)
    assert summary["settings"]["description"].endswith(  # type: ignore[index]
        "(embedded default), state and plans encrypted (passphrase)"
    )
    data = _plan_file(out).read_bytes()
    assert encryption.key_providers(data) == {"pbkdf2"}
    # the report is written as before, from the encrypted plan (`tofu show` with the key)
    unit = units_by_path(summary)[UNIT]
    assert unit["status"] == "changes"
    assert unit["counts"] == units_by_path(plain)[UNIT]["counts"]
    comment = (out / "comment.md").read_text()
    assert 'terraform_data.record["api"]' in comment
    # the key is on no disk: not in the working copy, the report or its logs
    work = _work_copy(example_repo)
    generated = (work / contract.GENERATED_FILE).read_text()
    assert 'key_provider "pbkdf2"' in generated and PASSPHRASE not in generated
    for path in [*out.rglob("*"), *work.rglob("*.tf")]:
        if path.is_file():
            assert PASSPHRASE.encode() not in path.read_bytes(), path
    assert not (example_repo / "pwned").exists()

    plan = _plan_file(out)
    shown = _tofu_show(
        work, plan, {**_without_key(), "TF_VAR_iac_encryption_passphrase": PASSPHRASE}
    )
    assert shown.returncode == 0 and '"resource_changes"' in shown.stdout, shown.stderr
    no_key = _tofu_show(work, plan, _without_key())
    assert no_key.returncode != 0 and "resource_changes" not in no_key.stdout
    wrong = _tofu_show(
        work, plan, {**_without_key(), "TF_VAR_iac_encryption_passphrase": "another passphrase!!"}
    )
    assert wrong.returncode != 0 and "resource_changes" not in wrong.stdout
    assert "decrypt" in wrong.stderr.lower(), wrong.stderr


@pytest.mark.e2e
def test_a_kms_key_id_that_would_break_the_generated_file_stops_every_task_before_it_writes(
    example_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "plans"
    for env in (
        {contract.KMS_KEY_ENV: 'k"\n}\nresource "terraform_data" "x" {'},
        {contract.PASSPHRASE_ENV: "too short"},
    ):
        ran = invoke(example_repo, "plan", "--unit", UNIT, "--out", str(out), env=env)
        assert ran.returncode == 2, ran.output
        errors = [line for line in ran.output.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and "IAC_ENCRYPTION_" in errors[0], ran.output
        assert "too short" not in ran.output and "Traceback" not in ran.output
        assert not out.exists()
        assert not list(example_repo.rglob(contract.GENERATED_FILE))


@pytest.mark.e2e
def test_apply_without_the_key_refuses_in_one_line_and_leaves_the_encrypted_state_untouched(
    example_repo: Path, tmp_path: Path, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    s3, bucket = s3_state_bucket(monkeypatch, aws_env, f"enc-{tmp_path.name}")
    env = {contract.PASSPHRASE_ENV: PASSPHRASE}
    _plan(example_repo, tmp_path / "p1", "--unit", UNIT, env=env)
    first = invoke(example_repo, "apply", "--plans", str(tmp_path / "p1"), env=env)
    assert first.returncode == 0, first.output
    before = _state(s3, bucket)
    assert encryption.key_providers(before["body"]) == {"pbkdf2"}
    assert not _readable_state(before["body"]) and b"203.0.113.10" not in before["body"]

    edit(example_repo, f"{UNIT}/terragrunt.hcl", "203.0.113.10", "203.0.113.11")
    commit_all(example_repo, "api moves")
    out = tmp_path / "p2"
    _plan(example_repo, out, "--unit", UNIT, env=env)
    refused = invoke(example_repo, "apply", "--plans", str(out))
    assert refused.returncode == 1, refused.output
    errors = [line for line in refused.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, refused.output
    assert contract.PASSPHRASE_ENV in errors[0] and "nothing was applied" in errors[0]
    assert str(_plan_file(out)) in errors[0]
    assert "Traceback" not in refused.output
    assert not (out / "apply.json").exists()
    assert _state(s3, bucket) == before

    # another key than the plans were made with: the unit is refused in one line (no
    # terminal codes, no OpenTofu error box), nothing is applied
    wrong = invoke(
        example_repo, "apply", "--plans", str(out), env={contract.PASSPHRASE_ENV: "x" * 24}
    )
    assert wrong.returncode == 1, wrong.output
    record = json.loads((out / "apply.json").read_text())
    reason = next(u["reason"] for u in record["units"] if u["path"] == UNIT)
    assert [u["result"] for u in record["units"] if u["path"] == UNIT] == ["refused"]
    assert "does not decrypt with the key in the environment" in reason, reason
    assert "\n" not in reason and "\x1b" not in reason and "\x1b" not in wrong.output
    assert _state(s3, bucket) == before
    (out / "apply.json").unlink()
    (out / "apply.md").unlink()

    applied = invoke(example_repo, "apply", "--plans", str(out), env=env)
    assert applied.returncode == 0, applied.output
    after = _state(s3, bucket)
    assert after["etag"] != before["etag"] and encryption.is_encrypted(after["body"])
    assert PASSPHRASE not in applied.output


@pytest.mark.e2e
def test_aws_kms_through_moto_encrypts_plans_and_state_and_apply_needs_the_key_id(
    example_repo: Path, tmp_path: Path, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import boto3

    s3, bucket = s3_state_bucket(monkeypatch, aws_env, f"kms-{tmp_path.name}")
    kms = boto3.client("kms", endpoint_url=aws_env["AWS_ENDPOINT_URL"], region_name="us-east-1")
    key_id = kms.create_key(Description="iac state")["KeyMetadata"]["KeyId"]
    env = {contract.KMS_KEY_ENV: key_id}
    out = tmp_path / "plans"
    _plan(example_repo, out, "--unit", UNIT, env=env)
    assert encryption.key_providers(_plan_file(out).read_bytes()) == {"aws_kms"}

    refused = invoke(example_repo, "apply", "--plans", str(out))
    assert refused.returncode == 1 and contract.KMS_KEY_ENV in refused.stderr, refused.output
    assert s3.list_objects_v2(Bucket=bucket).get("KeyCount", 0) == 0

    applied = invoke(example_repo, "apply", "--plans", str(out), env=env)
    assert applied.returncode == 0, applied.output
    body = _state(s3, bucket)["body"]
    assert encryption.key_providers(body) == {"aws_kms"}
    assert not _readable_state(body) and b"203.0.113.10" not in body
    # a plan against the encrypted state reads it back through KMS: nothing to change
    again = _plan(example_repo, tmp_path / "again", "--unit", UNIT, env=env)
    assert units_by_path(again)[UNIT]["status"] == "no-changes"


#: the runbook's step (docs/runbooks.md, "Encrypting plans and state"), for one unit
RUNBOOK_SWITCH = (
    'export TF_VAR_iac_encryption_passphrase="$IAC_ENCRYPTION_PASSPHRASE"\n'
    "IAC_ENCRYPTION_FROM_PLAIN=true terragrunt --working-dir {unit} --non-interactive "
    "apply -refresh-only -auto-approve"
)


@pytest.mark.e2e
def test_the_runbook_switches_plain_state_to_encrypted_and_works_without_the_fallback(
    example_repo: Path, tmp_path: Path, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tooling.io.workspace import Workspace

    s3, bucket = s3_state_bucket(monkeypatch, aws_env, f"switch-{tmp_path.name}")
    _plan(example_repo, tmp_path / "plain", "--unit", UNIT)
    plain = invoke(example_repo, "apply", "--plans", str(tmp_path / "plain"))
    assert plain.returncode == 0, plain.output
    assert _readable_state(_state(s3, bucket)["body"])

    # the key alone cannot read the plain state: OpenTofu refuses it (the reason for the step)
    env = {contract.PASSPHRASE_ENV: PASSPHRASE}
    refused = invoke(example_repo, "plan", "--unit", UNIT, "--out", str(tmp_path / "r"), env=env)
    assert refused.returncode != 0, refused.output

    shell_env = {**os.environ, **GIT_ENV, **Workspace(example_repo).tool_env, **env}
    shell_env.pop("TF_VAR_iac_encryption_passphrase", None)  # the step exports it itself
    switched = subprocess.run(
        RUNBOOK_SWITCH.format(unit=UNIT),
        shell=True,
        cwd=example_repo,
        env=shell_env,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert switched.returncode == 0, switched.stdout + switched.stderr
    body = _state(s3, bucket)["body"]
    assert encryption.key_providers(body) == {"pbkdf2"} and not _readable_state(body)

    # the fallback removed (IAC_ENCRYPTION_FROM_PLAIN unset): plan and apply go on
    again = _plan(example_repo, tmp_path / "after", "--unit", UNIT, env=env)
    assert units_by_path(again)[UNIT]["status"] == "no-changes"
    edit(example_repo, f"{UNIT}/terragrunt.hcl", "ttl = 60", "ttl = 120")
    commit_all(example_repo, "longer ttl")
    changed = _plan(example_repo, tmp_path / "change", "--unit", UNIT, env=env)
    assert units_by_path(changed)[UNIT]["status"] == "changes"
    applied = invoke(example_repo, "apply", "--plans", str(tmp_path / "change"), env=env)
    assert applied.returncode == 0, applied.output
    assert encryption.is_encrypted(_state(s3, bucket)["body"])


# ------------------------------------------------------------------ the workflows pass the key

#: the jobs that run OpenTofu on the foundation: they plan, apply or check drift
KEYED_JOBS = {"plan.yml": {"plan"}, "apply.yml": {"apply", "apply-manual"}, "drift.yml": {"drift"}}


def test_only_the_jobs_that_run_opentofu_receive_the_encryption_key() -> None:
    from test_workflows import jobs, load

    for workflow, keyed in KEYED_JOBS.items():
        for name, job in jobs(load(workflow)).items():
            env = job.get("env") or {}
            if name in keyed:
                assert env[contract.PASSPHRASE_ENV] == "${{ secrets.IAC_ENCRYPTION_PASSPHRASE }}"
                assert env[contract.KMS_KEY_ENV] == "${{ vars.IAC_ENCRYPTION_KMS_KEY_ID }}"
            else:
                text = json.dumps(job)
                assert "IAC_ENCRYPTION" not in text, f"{workflow}: job {name} gets the key"
