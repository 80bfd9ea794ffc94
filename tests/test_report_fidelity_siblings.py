"""Siblings of the class "what the report shows is not what OpenTofu does" (issue findings
8-10): a secret transformed in other ways, text that is not UTF-8 in other forms, an
attribute given twice elsewhere, and state actions reached through drift; with the real
pinned tools on ``check``, the per-unit and batch planners and drift.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from infra_fixtures import commit_all, edit, invoke, read_summary, units_by_path
from test_state_actions_e2e import edge_units

pytestmark = pytest.mark.e2e

DNS = "live/cloud/dns"
DNS_FILE = f"{DNS}/terragrunt.hcl"
IAM = "live/cloud/iam"
ZONE = '  zone_name = "example.net"'
PASSPHRASE = "correct-horse-battery-staple-42"
TOKEN = "ghs-runner-token-7f3a9c1e"
SECRETS = {"IAC_ENCRYPTION_PASSPHRASE": PASSPHRASE, "IAC_RUNNERS_TOKEN": TOKEN}
CLOUD = (DNS, IAM, "live/cloud/registry")
CLUSTER = ("live/cluster/network", "live/cluster/vms", "live/cluster/os", "live/cluster/gitops")

RUNS = {
    "per-unit plan": ("plan", "--unit", DNS),
    "batch plan": ("plan", "--all"),
    "drift": ("drift",),
}

TRANSFORMS = {
    "base64encode": 'base64encode(get_env("IAC_RUNNERS_TOKEN", ""))',
    "sha256": 'sha256(get_env("IAC_ENCRYPTION_PASSPHRASE", ""))',
    "format": 'format("%s", get_env("IAC_RUNNERS_TOKEN", ""))',
    "template": '"t-${get_env("IAC_RUNNERS_TOKEN", "")}"',
}


def _everything(out: Path, output: str) -> str:
    text = output
    if out.is_dir():
        for path in out.rglob("*"):
            if path.is_file() and path.suffix != ".tfplan":
                text += path.read_text(errors="replace")
    return text


def _bytes(repo: Path, rel: str, old: bytes, new: bytes) -> None:
    path = repo / rel
    data = path.read_bytes()
    assert old in data
    path.write_bytes(data.replace(old, new))


def _statuses(repo: Path, out: Path, args: tuple[str, ...]) -> dict[str, dict[str, object]]:
    """Each unit's entry in the report of ``args`` (summary.json, or drift.json)."""
    ran = invoke(repo, *args, "--out", str(out))
    assert "Traceback" not in ran.output and "UnicodeDecodeError" not in ran.output, ran.output
    if args[0] == "drift":
        return {u["path"]: u for u in json.loads((out / "drift.json").read_text())["units"]}
    assert ran.returncode == 1, ran.output
    return units_by_path(read_summary(out))


# --------------------------------------------------------------------------- secrets


@pytest.mark.parametrize("args", list(RUNS.values()), ids=list(RUNS))
@pytest.mark.parametrize("transform", list(TRANSFORMS), ids=list(TRANSFORMS))
def test_a_secret_through_another_function_is_refused_and_never_printed(
    example_repo: Path, tmp_path: Path, args: tuple[str, ...], transform: str
) -> None:
    edit(example_repo, DNS_FILE, ZONE, f"{ZONE}\n  note      = {TRANSFORMS[transform]}")
    commit_all(example_repo, "a secret, transformed, in an input")
    checked = invoke(example_repo, "check", "--json")
    found = [(v["file"], v["line"], v["rule"]) for v in json.loads(checked.stdout)["violations"]]
    assert found == [(DNS_FILE, 18, "secret-read")]
    out = tmp_path / "out"
    ran = invoke(example_repo, *args, "--out", str(out), env=SECRETS)
    assert ran.returncode == 1, ran.output
    assert f"{DNS_FILE}:18: secret-read: get_env(" in ran.stderr
    assert not (out / "summary.json").exists() and not (out / "drift.json").exists()
    seen = _everything(out, ran.output)
    assert PASSPHRASE not in seen and TOKEN not in seen
    assert not (example_repo / DNS / ".terragrunt-cache").exists()


@pytest.mark.parametrize("args", list(RUNS.values())[1:], ids=list(RUNS)[1:])
def test_a_secret_read_in_the_locals_of_another_tier_file_is_refused_for_its_units(
    example_repo: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    tier = "live/cluster/tier.hcl"
    edit(
        example_repo,
        tier,
        "locals {",
        'locals {\n  tok = replace(get_env("IAC_RUNNERS_TOKEN", ""), "-", "_")',
    )
    commit_all(example_repo, "a tier file transforming a secret")
    out = tmp_path / "out"
    ran = invoke(example_repo, *args, "--out", str(out), env=SECRETS)
    assert ran.returncode == 1 and f"{tier}:6: secret-read" in ran.stderr, ran.output
    assert TOKEN.replace("-", "_") not in _everything(out, ran.output)
    # a cloud unit alone does not include it: it plans
    alone = invoke(example_repo, "plan", "--unit", DNS, "--out", str(tmp_path / "dns"), env=SECRETS)
    assert alone.returncode == 0, alone.output
    assert units_by_path(read_summary(tmp_path / "dns"))[DNS]["status"] == "changes"


# --------------------------------------------------------------------------- not UTF-8

ENCODINGS = {
    # "/" written in two bytes: UTF-8 forbids it; a lenient decoder reads a slash
    "overlong": (b"\xc0\xaf", "byte 0xC0"),
    # a UTF-16 surrogate written as UTF-8
    "surrogate": (b"\xed\xa0\x80", "byte 0xED"),
}


@pytest.mark.parametrize(
    "args", [("plan", "--unit", DNS, "--unit", IAM), ("plan", "--all"), ("drift",)]
)
@pytest.mark.parametrize("encoding", list(ENCODINGS), ids=list(ENCODINGS))
def test_text_that_is_not_utf8_in_another_form_is_refused_alone(
    example_repo: Path, tmp_path: Path, args: tuple[str, ...], encoding: str
) -> None:
    raw, named = ENCODINGS[encoding]
    _bytes(example_repo, DNS_FILE, b"# Configuration only", b"# Configuration " + raw + b" only")
    commit_all(example_repo, "a comment that is not UTF-8")
    checked = invoke(example_repo, "check", "--json")
    found = json.loads(checked.stdout)["violations"]
    assert [(v["file"], v["line"], v["rule"]) for v in found] == [(DNS_FILE, 2, "hcl-syntax")]
    assert named in found[0]["message"]
    units = _statuses(example_repo, tmp_path / "out", args)
    assert units[DNS]["status"] == "error"
    assert f"{DNS_FILE}:2:" in str(units[DNS]["error"])
    assert units[IAM]["status"] in ("changes", "drifted"), units[IAM]
    if args[0] == "drift" or "--all" in args:
        for path in ("live/cloud/registry", "live/cluster/network", "live/cluster/os"):
            assert units[path]["status"] in ("changes", "drifted"), units[path]


# --------------------------------------------------------------------------- twice


@pytest.mark.parametrize("args", list(RUNS.values())[1:], ids=list(RUNS)[1:])
def test_an_attribute_given_twice_in_an_included_file_refuses_its_units_alone(
    example_repo: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    """gate twice in the cloud tier file: its units are refused (no gate shown as the
    second value), the cluster tier plans."""
    tier = "live/cloud/tier.hcl"
    edit(example_repo, tier, '  gate = "auto"', '  gate = "manual"\n  gate = "auto"')
    commit_all(example_repo, "gate given twice in a tier file")
    checked = invoke(example_repo, "check", "--json")
    found = [(v["file"], v["line"], v["rule"]) for v in json.loads(checked.stdout)["violations"]]
    assert found == [(tier, 11, "hcl-syntax")]
    units = _statuses(example_repo, tmp_path / "out", args)
    for path in CLOUD:
        assert units[path]["status"] == "error", units[path]
        assert f"{tier}:11:" in str(units[path]["error"])
    for path in CLUSTER[:3]:
        assert units[path]["status"] in ("changes", "drifted"), units[path]


@pytest.mark.parametrize(
    "args", [("plan", "--unit", DNS, "--unit", IAM), ("plan", "--all"), ("drift",)]
)
def test_the_inputs_given_twice_are_refused_alone(
    example_repo: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    """A first ``inputs`` the review reads, a second Terragrunt would take (or refuse)."""
    edit(
        example_repo,
        DNS_FILE,
        "inputs = {",
        'inputs = {\n  zone_name = "evil.example"\n}\n\ninputs = {',
    )
    commit_all(example_repo, "inputs given twice")
    checked = invoke(example_repo, "check", "--json")
    found = [(v["file"], v["line"], v["rule"]) for v in json.loads(checked.stdout)["violations"]]
    assert found == [(DNS_FILE, 20, "hcl-syntax")]
    units = _statuses(example_repo, tmp_path / "out", args)
    assert units[DNS]["status"] == "error"
    assert "the attribute 'inputs' is set twice" in str(units[DNS]["error"])
    assert units[IAM]["status"] in ("changes", "drifted"), units[IAM]


# --------------------------------------------------------------------------- state actions


def test_drift_reports_an_import_and_a_move_the_default_branch_has_not_applied(
    example_repo: Path, tmp_path: Path
) -> None:
    """A merged tag that imports and one that moves, not applied: the scheduled drift check
    counts both (neither is "no changes")."""
    env, (imports, moves) = edge_units(example_repo, tmp_path, "import", "moved")
    out = tmp_path / "drift"
    ran = invoke(example_repo, "drift", "--out", str(out), env=env)
    assert ran.returncode == 0, ran.output
    doc = json.loads((out / "drift.json").read_text())
    units = {u["path"]: u for u in doc["units"]}
    assert {imports, moves} <= set(doc["drifted"])
    assert units[imports]["counts"]["import"] == 1
    assert units[moves]["counts"]["move"] == 1
    md = (out / "drift.md").read_text()
    assert "1 to import" in next(x for x in md.splitlines() if f"`{imports}`" in x)
    assert "1 to move" in next(x for x in md.splitlines() if f"`{moves}`" in x)
