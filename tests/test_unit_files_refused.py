"""A unit file that is not UTF-8, or that HCL refuses (an attribute set twice), is refused
alone, with its file:line, by ``invoke check`` and by every planner (one process per
unit, the batch, drift); the other units go on, with the real pinned tools.

The finding behind these tests: invalid UTF-8 in one unit's comment passed ``check`` and
stopped ``invoke plan`` of a dirty tree ("unexpected UnicodeDecodeError ... bug"); a
``gate`` given twice made ``invoke units`` show the second value while ``check`` passed.
Terragrunt reads a comment that is not UTF-8 and takes the last of two ``dependency``
blocks of one name: the tooling's reader refuses both, so nothing it shows or checks
differs from what Terragrunt would run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from infra_fixtures import commit_all, edit, git, invoke, read_summary, units_by_path

pytestmark = pytest.mark.e2e

DNS = "live/cloud/dns"
DNS_FILE = f"{DNS}/terragrunt.hcl"
IAM = "live/cloud/iam"
IAM_FILE = f"{IAM}/terragrunt.hcl"
#: the example's second line; a Latin-1 byte in it is on line 2, column 20
COMMENT = b"# Configuration only"
LATIN1 = b"# Configuration caf\xe9 only"


def _bytes(repo: Path, rel: str, old: bytes, new: bytes) -> None:
    path = repo / rel
    data = path.read_bytes()
    assert old in data, f"{old!r} not in {rel}"
    path.write_bytes(data.replace(old, new))


def _gate_twice(repo: Path) -> None:
    edit(
        repo,
        IAM_FILE,
        "terraform {",
        'locals {\n  gate = "manual"\n  gate = "auto"\n}\n\nterraform {',
    )


def test_check_names_a_unit_file_that_is_not_utf8_and_the_others_pass(
    example_repo: Path,
) -> None:
    _bytes(example_repo, DNS_FILE, COMMENT, LATIN1)
    ran = invoke(example_repo, "check", "--json")
    assert ran.returncode == 1, ran.output
    found = json.loads(ran.stdout)["violations"]
    assert [(v["file"], v["line"], v["rule"]) for v in found] == [(DNS_FILE, 2, "hcl-syntax")]
    assert "not UTF-8: byte 0xE9" in found[0]["message"]


PLANS = {
    # two units named: one is refused, the other planned alone (one process per unit)
    "per-unit plan": ("plan", "--unit", DNS, "--unit", IAM),
    # every unit: the batch plans the five the refused one does not reach
    "batch plan": ("plan", "--all"),
}


@pytest.mark.parametrize("args", list(PLANS.values()), ids=list(PLANS))
@pytest.mark.parametrize("committed", [True, False], ids=["committed", "uncommitted"])
def test_a_unit_file_that_is_not_utf8_is_refused_alone_by_the_plan(
    example_repo: Path, tmp_path: Path, args: tuple[str, ...], committed: bool
) -> None:
    git(example_repo, "checkout", "--quiet", "-b", "latin1")
    _bytes(example_repo, DNS_FILE, COMMENT, LATIN1)
    if committed:
        commit_all(example_repo, "a comment in Latin-1")
    out = tmp_path / "out"
    ran = invoke(example_repo, *args, "--out", str(out))
    assert "Traceback" not in ran.output and "UnicodeDecodeError" not in ran.output
    assert ran.returncode == 1, ran.output
    units = units_by_path(read_summary(out))
    assert units[DNS]["status"] == "error"
    assert f"{DNS_FILE}:2:20: HCL syntax error (not UTF-8: byte 0xE9)" in str(units[DNS]["error"])
    assert units[IAM]["status"] == "changes"
    if "--all" in args:
        # Terragrunt parses dns for gitops (a dependency): gitops is refused with it
        gitops = units["live/cluster/gitops"]
        assert gitops["status"] == "error" and DNS in str(gitops["error"])
        planned = {p for p, u in units.items() if u["status"] == "changes"}
        assert planned == {
            IAM,
            "live/cloud/registry",
            "live/cluster/network",
            "live/cluster/vms",
            "live/cluster/os",
        }
    assert not (example_repo / DNS / ".terragrunt-cache").exists()


def test_drift_reports_the_unit_file_that_is_not_utf8_and_checks_the_others(
    example_repo: Path, tmp_path: Path
) -> None:
    _bytes(example_repo, DNS_FILE, COMMENT, LATIN1)
    commit_all(example_repo, "a comment in Latin-1")
    out = tmp_path / "drift"
    ran = invoke(example_repo, "drift", "--out", str(out))
    assert "Traceback" not in ran.output, ran.output
    report = json.loads((out / "drift.json").read_text())
    units = {u["path"]: u for u in report["units"]}
    assert units[DNS]["status"] == "error"
    assert f"{DNS_FILE}:2:20" in str(units[DNS].get("error"))
    assert units[IAM]["status"] != "error", units[IAM]


def test_an_attribute_given_twice_is_not_shown_as_its_second_value(example_repo: Path) -> None:
    _gate_twice(example_repo)
    commit_all(example_repo, "gate given twice")
    listed = invoke(example_repo, "units", "--json")
    assert listed.returncode == 1, listed.output
    iam = next(u for u in json.loads(listed.stdout)["units"] if u["path"] == IAM)
    assert iam["gate"] != "auto"  # never the second value, nor the first, as if it held
    assert "the attribute 'gate' is set twice, first at line 12" in iam["error"]
    checked = invoke(example_repo, "check", "--json")
    assert checked.returncode == 1
    found = json.loads(checked.stdout)["violations"]
    assert (IAM_FILE, 13, "hcl-syntax") in [(v["file"], v["line"], v["rule"]) for v in found]


@pytest.mark.parametrize("args", list(PLANS.values()), ids=list(PLANS))
def test_an_attribute_given_twice_is_refused_alone_by_the_plan(
    example_repo: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    _gate_twice(example_repo)
    commit_all(example_repo, "gate given twice")
    out = tmp_path / "out"
    ran = invoke(example_repo, *args, "--out", str(out))
    assert ran.returncode == 1, ran.output
    units = units_by_path(read_summary(out))
    assert units[IAM]["status"] == "error"
    assert f"{IAM_FILE}:13:3: HCL syntax error (the attribute 'gate' is set twice" in str(
        units[IAM]["error"]
    )
    assert units[DNS]["status"] == "changes"
    if "--all" in args:  # registry reads iam's outputs: Terragrunt would parse iam for it
        assert units["live/cloud/registry"]["status"] == "error"


# --------------------------------------------------------------------------- siblings


def test_a_block_given_twice_is_refused_where_terragrunt_would_take_the_second(
    example_repo: Path, tmp_path: Path
) -> None:
    """Terragrunt takes the last ``dependency "iam"``; the model took the first."""
    registry = "live/cloud/registry/terragrunt.hcl"
    edit(
        example_repo,
        registry,
        "inputs = {",
        'dependency "iam" {\n  config_path = "../../cluster/os"\n'
        '  mock_outputs = { role_arns = { registry = "x" } }\n'
        '  mock_outputs_allowed_terraform_commands = ["validate", "plan"]\n}\n\ninputs = {',
    )
    commit_all(example_repo, "a second dependency of the same name")
    checked = invoke(example_repo, "check", "--json")
    found = json.loads(checked.stdout)["violations"]
    assert (registry, 24, "hcl-syntax") in [(v["file"], v["line"], v["rule"]) for v in found]
    assert any('dependency "iam" is given twice' in v["message"] for v in found)
    out = tmp_path / "out"
    ran = invoke(
        example_repo, "plan", "--unit", "live/cloud/registry", "--unit", IAM, "--out", str(out)
    )
    units = units_by_path(read_summary(out))
    assert units["live/cloud/registry"]["status"] == "error"
    assert units[IAM]["status"] == "changes", ran.output


def test_a_file_with_a_bom_reads_as_terragrunt_reads_it(example_repo: Path, tmp_path: Path) -> None:
    """A UTF-8 byte order mark is UTF-8: Terragrunt reads the file, so does every rule; a
    command after it is found like any other."""
    path = example_repo / DNS_FILE
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    commit_all(example_repo, "a byte order mark")
    assert invoke(example_repo, "check").returncode == 0
    out = tmp_path / "out"
    ran = invoke(example_repo, "plan", "--unit", DNS, "--out", str(out))
    assert ran.returncode == 0, ran.output
    assert units_by_path(read_summary(out))[DNS]["status"] == "changes"
    marker = tmp_path / "ran.txt"
    edit(
        example_repo,
        DNS_FILE,
        '  zone_name = "example.net"',
        f'  zone_name = run_cmd("sh", "-c", "echo ran >> {marker}; echo example.net")',
    )
    refused = invoke(example_repo, "plan", "--unit", DNS, "--out", str(tmp_path / "o2"))
    assert refused.returncode == 1 and f"{DNS_FILE}:17: run-at-parse" in refused.stderr
    assert not marker.exists()


def test_a_nul_byte_hides_no_command_in_a_dependency_terragrunt_parses(
    example_repo: Path, tmp_path: Path
) -> None:
    """Terragrunt reads on after a NUL byte in a comment; a syntax tree would end there.
    dns (refused: a NUL byte) is gitops' dependency: gitops' plan would make Terragrunt
    parse dns, so the command after the NUL is found before any Terragrunt process."""
    marker = tmp_path / "ran.txt"
    _bytes(
        example_repo,
        DNS_FILE,
        COMMENT,
        b'# \x00\nlocals {\n  x = run_cmd("sh", "-c", "echo ran >> '
        + str(marker).encode()
        + b'")\n}\n#',
    )
    commit_all(example_repo, "a NUL byte, then a command")
    checked = invoke(example_repo, "check")
    assert checked.returncode == 1
    assert f"{DNS_FILE}:2: hcl-syntax: HCL syntax error (a NUL byte)" in checked.output
    ran = invoke(
        example_repo, "plan", "--unit", "live/cluster/gitops", "--out", str(tmp_path / "out")
    )
    assert ran.returncode == 1, ran.output
    assert f"{DNS_FILE}:4: run-at-parse: run_cmd()" in ran.stderr
    assert not marker.exists(), "Terragrunt parsed dns: its command ran"


def test_a_tier_file_that_is_not_utf8_refuses_every_unit_including_it(
    example_repo: Path, tmp_path: Path
) -> None:
    _bytes(example_repo, "live/cloud/tier.hcl", b"# Runs on a hosted", b"# Runs on \xff hosted")
    commit_all(example_repo, "a tier file in another encoding")
    out = tmp_path / "out"
    invoke(example_repo, "plan", "--all", "--out", str(out))
    units = units_by_path(read_summary(out))
    for path in (DNS, IAM, "live/cloud/registry"):
        assert units[path]["status"] == "error"
        assert "live/cloud/tier.hcl:7:" in str(units[path]["error"]), units[path]
    assert units["live/cluster/network"]["status"] == "changes"
