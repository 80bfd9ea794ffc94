"""Bad input fails early and clearly: the pure parts as tables, then each finding end to end
(a broken unit, an unusable state backend, a destroy that cannot be planned, odd unit names)."""

from __future__ import annotations

import json
import tomllib

import pytest

from tooling.commands import plan
from tooling.core.plan.targets import check_options, unit_arg
from tooling.core.rules import names
from tooling.engine.rules import preflight
from tooling.errors import ToolingError, UsageError
from tooling.io import config
from tooling.model.hcl import HclSyntaxError, parse
from tooling.model.policy import DEFAULT_PATTERN, policy_from

# --------------------------------------------------------------------------- tables


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        ("live/cloud/dns", "live/cloud/dns"),
        ("./live/cloud/dns/", "live/cloud/dns"),  # what tab completion writes
        ("live//cloud/./dns", "live/cloud/dns"),
    ],
)
def test_unit_arguments_accept_tab_completed_paths(raw: str, path: str) -> None:
    assert unit_arg(raw) == path


@pytest.mark.parametrize("raw", ["", "/", "./", "/live/cloud/dns", "../live/dns", "live/../x"])
def test_unit_arguments_outside_the_repository_are_usage_errors(raw: str) -> None:
    with pytest.raises(UsageError) as err:
        unit_arg(raw)
    assert err.value.code == 2 and "--unit" in str(err.value)


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"all_units": True, "units": ["live/a"], "executor": None}, "--all and --unit"),
        ({"all_units": False, "units": [], "executor": "nope"}, "--executor nope"),
    ],
)
def test_plan_options_that_cannot_mean_what_they_say_are_usage_errors(
    options: dict[str, object], fragment: str
) -> None:
    with pytest.raises(UsageError, match=fragment):
        check_options(**options, executors={"hosted", "lan"})  # type: ignore[arg-type]


def test_plan_options_that_make_sense_pass() -> None:
    check_options(all_units=True, units=[], executor="lan", executors={"hosted", "lan"})
    check_options(all_units=False, units=["live/a"], executor=None, executors=set())


@pytest.mark.parametrize(("text", "jobs"), [("", None), ("1", 1), ("8", 8)])
def test_jobs_is_a_whole_number_of_one_or_more(text: str, jobs: int | None) -> None:
    assert plan.parse_jobs(text) == jobs


@pytest.mark.parametrize("text", ["0", "-1", "abc", "1.5", " "])
def test_jobs_otherwise_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError, match="--jobs"):
        plan.parse_jobs(text)


@pytest.mark.parametrize(
    ("paths", "bad"),
    [
        (["live/cloud/dns", "live/cluster/vms-2"], {}),
        (["live/apps/.terragrunt-stack/web"], {}),  # what `terragrunt stack generate` writes
        (["live/cloud/dns x"], {"live/cloud/dns x": "does not match"}),
        (["live/cloud/$(touch x)"], {"live/cloud/$(touch x)": "does not match"}),
        (["live/cloud/dnś"], {"live/cloud/dnś": "non-ASCII"}),
        (["live/cloud/-dns"], {"live/cloud/-dns": "does not match"}),
        (["live/cloud/Dns"], {"live/cloud/Dns": "does not match"}),
        (["live/Cloud/dns"], {"live/Cloud/dns": "does not match"}),
        (
            ["live/cloud/DNS", "live/cloud/dns"],
            {"live/cloud/DNS": "does not match", "live/cloud/dns": "differs only by case"},
        ),
        (
            ["live/Cloud/a", "live/cloud/b"],
            {"live/Cloud/a": "does not match", "live/cloud/b": "differs only by case"},
        ),
    ],
)
def test_unit_folder_names_are_lowercase_segments_without_case_twins(
    paths: list[str], bad: dict[str, str]
) -> None:
    found = {b.path: b.why for b in names.bad_unit_names(paths)}
    assert set(found) == set(bad)
    for path, why in bad.items():
        assert why in found[path]


def test_case_twins_are_caught_with_a_pattern_that_allows_capitals() -> None:
    found = names.bad_unit_names(["live/a/DNS", "live/a/dns"], pattern="[A-Za-z]+")
    assert [b.path for b in found] == ["live/a/DNS", "live/a/dns"]


def test_the_name_pattern_is_a_policy_setting_and_a_bad_one_is_named() -> None:
    assert policy_from({}).check.unit_name_pattern == DEFAULT_PATTERN
    found = policy_from({"check": {"unit_name_pattern": "[a-z_]+"}}).check.unit_name_pattern
    assert found == "[a-z_]+"
    with pytest.raises(ToolingError, match="unit_name_pattern"):
        policy_from({"check": {"unit_name_pattern": "[a-"}})


def test_an_hcl_file_ending_in_an_open_block_names_file_line_and_column() -> None:
    with pytest.raises(HclSyntaxError) as err:
        parse(b"inputs = {}\nlocals {\n", "live/a/terragrunt.hcl")
    assert str(err.value).startswith("live/a/terragrunt.hcl:3:1: HCL syntax error")


def test_a_toml_error_names_file_line_and_column() -> None:
    with pytest.raises(tomllib.TOMLDecodeError) as err:
        tomllib.loads("[gates]\nx = 1\n[gates\n")
    assert config.toml_error("policy.toml", err.value).startswith("policy.toml:3:7: ")


@pytest.mark.parametrize(
    ("kind", "code", "fragment"),
    [
        ("credentials", "", "no AWS credentials"),
        ("unreachable", "", "cannot reach"),
        ("client", "404", "does not exist"),
        ("client", "NoSuchBucket", "does not exist"),
        ("client", "InvalidAccessKeyId", "refused these AWS credentials"),
        ("client", "403", "refused these AWS credentials"),
        ("client", "PermanentRedirect", "IAC_STATE_REGION"),
    ],
)
def test_each_state_backend_problem_says_what_to_do(kind: str, code: str, fragment: str) -> None:
    message = preflight.backend_problem("b", "http://127.0.0.1:1", kind=kind, code=code, detail="d")
    assert fragment in message and "s3://b" in message


# --------------------------------------------------------------------------- end to end

from pathlib import Path  # noqa: E402

from infra_fixtures import (  # noqa: E402
    apply_unit,
    commit_all,
    git,
    invoke,
    read_summary,
    s3_state_bucket,
    units_by_path,
)


def test_a_tab_completed_unit_path_plans_that_unit(example_repo: Path, tmp_path: Path) -> None:
    ran = invoke(example_repo, "plan", "--unit", "./live/cloud/dns/", "--out", str(tmp_path / "o"))
    assert ran.returncode == 0, ran.output
    assert list(units_by_path(read_summary(tmp_path / "o"))) == ["live/cloud/dns"]


def _plan_s3(repo: Path, out: Path) -> object:
    return invoke(repo, "plan", "--unit", "live/cloud/dns", "--out", str(out))


def _nothing_ran(repo: Path, out: Path) -> None:
    assert not (repo / "live/cloud/dns/.terragrunt-cache").exists()  # terragrunt never started
    assert not (out / "summary.json").exists()


def test_an_unreachable_state_endpoint_stops_the_plan_before_any_unit_runs(
    example_repo: Path, tmp_path: Path, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("IAC_STATE_BUCKET", "state")
    monkeypatch.setenv("IAC_STATE_ENDPOINT", f"http://127.0.0.1:{port}")
    ran = invoke(example_repo, "plan", "--unit", "live/cloud/dns", "--out", str(tmp_path / "o"))
    assert ran.returncode == 1 and "Traceback" not in ran.output, ran.output
    assert f"cannot reach the state bucket s3://state at http://127.0.0.1:{port}" in ran.stderr
    assert "IAC_STATE_ENDPOINT" in ran.stderr
    _nothing_ran(example_repo, tmp_path / "o")


def test_a_missing_state_bucket_stops_the_plan_with_one_message(
    example_repo: Path, tmp_path: Path, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("IAC_STATE_BUCKET", f"missing-{tmp_path.name}".lower().replace("_", "-"))
    monkeypatch.setenv("IAC_STATE_ENDPOINT", aws_env["AWS_ENDPOINT_URL"])
    ran = invoke(example_repo, "plan", "--all", "--out", str(tmp_path / "o"))
    assert ran.returncode == 1 and "Traceback" not in ran.output, ran.output
    assert ran.stderr.count("does not exist") == 1, ran.stderr  # once, not once per unit
    _nothing_ran(example_repo, tmp_path / "o")


def test_state_credentials_the_bucket_refuses_stop_the_plan_before_any_unit_runs(
    example_repo: Path, tmp_path: Path, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import urllib.request

    s3_state_bucket(monkeypatch, aws_env, f"creds-{tmp_path.name}")

    def auth(count: str) -> None:  # moto checks access keys from now on (0), or never (inf)
        request = urllib.request.Request(
            f"{aws_env['AWS_ENDPOINT_URL']}/moto-api/reset-auth",
            data=count.encode(),
            method="POST",
            headers={"Content-Type": "text/plain"},
        )
        urllib.request.urlopen(request, timeout=10).close()

    auth("0")
    try:
        ran = invoke(example_repo, "plan", "--unit", "live/cloud/dns", "--out", str(tmp_path / "o"))
    finally:
        auth("inf")
    assert ran.returncode == 1 and "Traceback" not in ran.output, ran.output
    assert "refused these AWS credentials" in ran.stderr, ran.stderr
    _nothing_ran(example_repo, tmp_path / "o")


def test_no_state_credentials_at_all_are_named_before_any_unit_runs(
    example_repo: Path, tmp_path: Path, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    s3_state_bucket(monkeypatch, aws_env, f"nocreds-{tmp_path.name}")
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(key)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    ran = invoke(example_repo, "plan", "--unit", "live/cloud/dns", "--out", str(tmp_path / "o"))
    assert ran.returncode == 1 and "Traceback" not in ran.output, ran.output
    assert "no AWS credentials" in ran.stderr, ran.stderr
    _nothing_ran(example_repo, tmp_path / "o")


def test_a_deleted_unit_whose_module_nothing_else_pins_is_destroyed(
    example_repo: Path, tmp_path: Path
) -> None:
    # terraform-aws-ecr is pinned by live/cloud/registry alone
    apply_unit(example_repo, "live/cloud/iam", tmp_path / "a1")
    counts = apply_unit(example_repo, "live/cloud/registry", tmp_path / "a2")
    git(example_repo, "checkout", "--quiet", "-b", "retire")
    git(example_repo, "rm", "-r", "--quiet", "live/cloud/registry")
    commit_all(example_repo, "retire the registry")
    plans = tmp_path / "plans"
    ran = invoke(example_repo, "plan", "--base", "main", "--out", str(plans))
    assert ran.returncode == 0, ran.output
    registry = units_by_path(read_summary(plans))["live/cloud/registry"]
    assert registry["destroy"] is True and registry["status"] == "changes", registry
    assert registry["counts"]["delete"] == counts["create"] > 0  # type: ignore[index]
    applied = invoke(example_repo, "apply", "--plans", str(plans), "--approve-manual")
    assert applied.returncode == 0, applied.output
    record = json.loads((plans / "apply.json").read_text())
    assert {u["path"]: u["result"] for u in record["units"]} == {"live/cloud/registry": "applied"}


def test_apply_fails_when_a_destroy_could_not_be_planned(
    example_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    git(example_repo, "checkout", "--quiet", "-b", "retire")
    git(example_repo, "rm", "-r", "--quiet", "live/cloud/registry")
    commit_all(example_repo, "retire the registry")
    monkeypatch.setenv("IAC_MODULE_SOURCES", "remote")  # git.example.com does not resolve here
    plans = tmp_path / "plans"
    ran = invoke(example_repo, "plan", "--base", "main", "--out", str(plans))
    assert ran.returncode == 1, ran.output
    assert units_by_path(read_summary(plans))["live/cloud/registry"]["status"] == "error"
    applied = invoke(example_repo, "apply", "--plans", str(plans), "--approve-manual")
    assert applied.returncode == 1, applied.output
    assert "had no plan to apply (live/cloud/registry)" in applied.stderr


STALE_OVERRIDE = """# Generated by Terragrunt. Sig: nIlQXj57tbuaRZEa
resource "terraform_data" "zone" {
  triggers_replace = ["from-another-branch"]
}
"""


def test_a_generated_override_left_in_the_working_copy_never_reaches_a_plan(
    example_repo: Path, tmp_path: Path
) -> None:
    first = invoke(example_repo, "plan", "--unit", "live/cloud/dns", "--out", str(tmp_path / "a"))
    assert first.returncode == 0, first.output
    # what a branch whose unit generated an override leaves behind (Terragrunt's signature)
    [main] = (example_repo / "live/cloud/dns/.terragrunt-cache").rglob("main.tf")
    (main.parent / "zone_override.tf").write_text(STALE_OVERRIDE)
    ran = invoke(example_repo, "plan", "--unit", "live/cloud/dns", "--out", str(tmp_path / "b"))
    assert ran.returncode == 0, ran.output
    assert "removed zone_override.tf from its working copy" in ran.stderr
    assert "from-another-branch" not in (tmp_path / "b/units/live/cloud/dns/plan.txt").read_text()
    assert not list((example_repo / "live/cloud/dns/.terragrunt-cache").rglob("zone_override.tf"))


def test_switching_a_checkout_from_local_state_to_s3_says_what_to_do(
    example_repo: Path, tmp_path: Path, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    local = invoke(example_repo, "plan", "--unit", "live/cloud/dns", "--out", str(tmp_path / "a"))
    assert local.returncode == 0, local.output
    s3_state_bucket(monkeypatch, aws_env, f"switch-{tmp_path.name}")
    ran = invoke(example_repo, "plan", "--unit", "live/cloud/dns", "--out", str(tmp_path / "b"))
    assert ran.returncode == 1 and "Traceback" not in ran.output, ran.output
    assert "live/cloud/dns: its working copy was initialised with the local state backend" in (
        ran.stderr
    )
    assert "terragrunt init -migrate-state" in ran.stderr
    assert "live/cloud/dns/.terragrunt-cache" in ran.stderr
    assert not (tmp_path / "b" / "summary.json").exists()


@pytest.mark.parametrize(
    ("hcl", "computed"),
    [
        ('source = "git::https://h/o/m.git?ref=v1.1.0"', False),
        ('source = "${local.base}//modules/vm?ref=v1.1.0"', False),
        ("source = local.src", False),
        ('source = "git::https://h/o/m.git?ref=${get_env("X", "v1.1.0")}"', True),
        ('source = "git::https://h/o/m.git?ref=${local.ref}"', True),
        ("source = local.dyn", True),
        ('source = get_env("SRC", "git::https://h/o/m.git?ref=v1")', True),
        ('source = "${include.root.locals.base}?ref=v1"', False),
    ],
)
def test_a_ref_is_computed_when_any_part_after_the_question_mark_is(
    hcl: str, computed: bool
) -> None:
    from tooling.core.rules.review_gaps import computed_query
    from tooling.model.exprs import locals_exprs

    text = (
        'locals {\n  base = "git::https://h/o/m.git"\n'
        '  src = "git::https://h/o/m.git?ref=v1.2.0"\n'
        '  ref = get_env("REF", "v1")\n'
        '  dyn = "git::https://h/o/m.git?ref=${local.ref}"\n}\n'
        f"terraform {{\n  {hcl}\n}}\n"
    )
    body = parse(text.encode(), "t.hcl")
    source = next(b for b in body["b"] if b[0] == "terraform")[2]["a"]["source"][0]
    assert computed_query(source, locals_exprs(body)) is computed


@pytest.mark.parametrize("folder", ["dns zone", "$(touch pwned)", "DNS", "dnś"])
def test_plan_refuses_a_unit_whose_folder_name_breaks_the_rule_before_running_anything(
    example_repo: Path, tmp_path: Path, folder: str
) -> None:
    import shutil

    shutil.copytree(example_repo / "live/cloud/dns", example_repo / "live/cloud" / folder)
    ran = invoke(example_repo, "plan", "--all", "--out", str(tmp_path / "o"))
    assert ran.returncode == 1 and "Traceback" not in ran.output, ran.output
    assert f"live/cloud/{folder}/terragrunt.hcl:1: " in ran.stderr, ran.stderr
    assert "folder name is not allowed" in ran.stderr
    assert not (tmp_path / "o" / "summary.json").exists()
    assert not list((example_repo / "live").rglob(".terragrunt-cache"))  # nothing ran
    assert not (example_repo / "pwned").exists()
