"""Configuration that runs a command, or reads differently, while Terragrunt parses it is
refused before any Terragrunt process starts, on every path that runs Terragrunt
(the per-unit plan, the batch, drift, adopt), with the real pinned tools.

Two findings behind these tests: ``invoke plan`` ran a unit's ``run_cmd`` (the plan
workflow does not wait for ``invoke check``), and ``[run_cmd`` with its parenthesis on
the next line, one call to HCL, passed ``invoke check``'s line-by-line search. And
``get_terraform_command()`` is ``render`` while the verifier renders a unit and
``plan`` while OpenTofu runs, so a unit could show the verifier one role and assume
another.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from infra_fixtures import commit_all, edit, invoke, make_example_repo

pytestmark = pytest.mark.e2e

DNS = "live/cloud/dns"
DNS_FILE = f"{DNS}/terragrunt.hcl"
ZONE = '  zone_name = "example.net"'


def _split_run_cmd(marker: Path) -> str:
    """``run_cmd`` and its parenthesis on two lines, inside brackets: one call to HCL."""
    return f'  zone_name = [run_cmd\n  ("sh", "-c", "echo ran >> {marker}; echo example.net")][0]'


@pytest.fixture
def repo(tmp_path: Path, tools: None) -> Path:
    return make_example_repo(tmp_path / "infra")


RUNS = {
    "per-unit plan": ("plan", "--unit", DNS, "--out"),
    "batch plan": ("plan", "--all", "--out"),
    "drift": ("drift", "--out"),
    "adopt": ("adopt", DNS, "terraform_data.x", "some-id"),
}


@pytest.mark.parametrize("args", list(RUNS.values()), ids=list(RUNS))
def test_a_split_run_cmd_is_refused_before_terragrunt_runs_it(
    repo: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    marker = tmp_path / "ran.txt"
    edit(repo, DNS_FILE, ZONE, _split_run_cmd(marker))
    commit_all(repo, "a unit runs a command at parse")
    out = [str(tmp_path / "out")] if args[-1] == "--out" else []
    ran = invoke(repo, *args, *out)
    assert ran.returncode == 1, ran.output
    assert f"{DNS_FILE}:17: run-at-parse: run_cmd()" in ran.stderr
    assert not marker.exists(), "Terragrunt parsed the file: its command ran"
    assert not (tmp_path / "out" / "summary.json").exists()
    assert not (repo / DNS / ".terragrunt-cache").exists()


def test_check_names_the_split_run_cmd_like_the_plan(repo: Path, tmp_path: Path) -> None:
    edit(repo, DNS_FILE, ZONE, _split_run_cmd(tmp_path / "ran.txt"))
    ran = invoke(repo, "check")
    assert ran.returncode == 1, ran.output
    assert f"{DNS_FILE}:17: run-at-parse:" in ran.output


def test_a_role_that_depends_on_the_command_is_refused_before_the_render(
    repo: Path, tmp_path: Path
) -> None:
    unit = repo / DNS_FILE
    unit.write_text(
        unit.read_text() + '\niam_role = get_terraform_command() == "render" ? "" : '
        '"arn:aws:iam::999999999999:role/OrganizationAccountAccessRole"\n'
    )
    commit_all(repo, "a role the render does not see")
    for args in (("plan", "--unit", DNS), ("plan", "--all")):
        ran = invoke(repo, *args, "--out", str(tmp_path / "out"))
        assert ran.returncode == 1, ran.output
        assert "command-dependent: get_terraform_command() gives `render`" in ran.stderr
        assert not (tmp_path / "out" / "summary.json").exists()
    checked = invoke(repo, "check")
    assert checked.returncode == 1 and "command-dependent" in checked.output


def test_the_cli_args_function_in_an_included_file_is_refused_for_every_unit_reading_it(
    repo: Path, tmp_path: Path
) -> None:
    tier = repo / "live/cloud/tier.hcl"
    tier.write_text(
        tier.read_text() + "\nlocals {\n  n = length(\n    get_terraform_cli_args())\n}\n"
    )
    commit_all(repo, "a tier file that depends on the command")
    ran = invoke(repo, "plan", "--unit", DNS, "--out", str(tmp_path / "out"))
    assert ran.returncode == 1, ran.output
    assert "live/cloud/tier.hcl:" in ran.stderr and "get_terraform_cli_args()" in ran.stderr


def test_a_run_cmd_the_policy_allowlists_runs_and_the_unit_is_planned(
    repo: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "ran.txt"
    edit(repo, DNS_FILE, ZONE, _split_run_cmd(marker))
    edit(
        repo,
        "policy.toml",
        "[check.allowed_run_at_parse]\n",
        f'[check.allowed_run_at_parse]\n"{DNS_FILE}" = "reviewed: prints the zone name"\n',
    )
    commit_all(repo, "an allowlisted command")
    ran = invoke(repo, "plan", "--unit", DNS, "--out", str(tmp_path / "out"))
    assert ran.returncode == 0, ran.output
    assert marker.exists()
    assert (tmp_path / "out" / "summary.json").exists()


def test_a_unit_the_model_cannot_evaluate_has_every_hcl_file_read_for_calls(
    repo: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "ran.txt"
    (repo / "live/cloud/shared.hcl").write_text(
        f'locals {{\n  z = run_cmd("sh", "-c", "echo ran >> {marker}")\n}}\n'
    )
    deep = "[" * 300 + "1" + "]" * 300
    edit(repo, DNS_FILE, ZONE, f"{ZONE}\n  deep = {deep}")
    commit_all(repo, "a unit the model cannot evaluate, and a file with a command")
    ran = invoke(repo, "plan", "--unit", DNS, "--out", str(tmp_path / "out"))
    assert ran.returncode == 1, ran.output
    assert "live/cloud/shared.hcl:2: run-at-parse:" in ran.stderr
    assert not marker.exists()


ENV_ROLE = (
    '\niam_role = get_env("IAC_WORKCOPY_HOOK", "") == "" ? "" : '
    '"arn:aws:iam::999999999999:role/OrganizationAccountAccessRole"\n'
)


@pytest.mark.parametrize(
    "args",
    [("plan", "--unit", DNS), ("plan", "--all"), ("drift",)],
    ids=["per-unit plan", "batch plan", "drift"],
)
def test_a_role_read_from_the_environment_is_refused_before_any_terragrunt_process(
    repo: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    """A role read from the pipeline's own environment (empty in one environment, assumed
    in another): the role a unit assumes is its static form's, and an expression is
    never taken on trust."""
    unit = repo / DNS_FILE
    unit.write_text(unit.read_text() + ENV_ROLE)
    commit_all(repo, "a role only the plan's environment shows")
    out = tmp_path / "out"
    ran = invoke(repo, *args, "--out", str(out))
    assert ran.returncode == 1, ran.output
    assert "preflight refused" in ran.output, ran.output
    assert f"unit {DNS} would run as role <computed when Terragrunt runs> (iam_role)" in ran.output
    assert not (out / "summary.json").exists()


VMS_FILE = "live/cluster/vms/terragrunt.hcl"
STATE_FROM_UPSTREAM = """
remote_state {
  backend = "local"
  config = {
    path = "${get_repo_root()}/.iac/state/${dependency.network.outputs.bridge == "vmbr-mock" ? "live/cluster/vms" : "live/cloud/dns"}/terraform.tfstate"
  }
  generate = { path = "backend.tf", if_exists = "overwrite_terragrunt" }
}
"""


@pytest.mark.parametrize(
    "args",
    [("plan", "--unit", "live/cluster/vms"), ("plan", "--all"), ("drift",)],
    ids=["per-unit plan", "batch plan", "drift"],
)
def test_a_state_path_read_from_a_dependency_is_refused_before_the_render(
    repo: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    """The verifier renders with the mock (its own state), the plan with the real output
    (another unit's state): refused before either runs."""
    unit = repo / VMS_FILE
    unit.write_text(unit.read_text() + STATE_FROM_UPSTREAM)
    commit_all(repo, "a state path that follows an upstream's output")
    out = tmp_path / "out"
    ran = invoke(repo, *args, "--out", str(out))
    assert ran.returncode == 1, ran.output
    assert f"{VMS_FILE}:41: dependency-outside-inputs: remote_state reads" in ran.stderr
    assert not (out / "summary.json").exists()
    assert not (repo / "live/cluster/vms/.terragrunt-cache").exists()
