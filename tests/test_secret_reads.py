"""A variable the ``[secrets]`` rule names is never read with ``get_env`` in Terragrunt
configuration (a unit, an included file, a file it reads, a stack file), whatever is
done with it: refused by ``check`` and before any Terragrunt process starts, with the
real pinned tools.

The finding behind these tests: ``inputs = { note = join(".", split("",
get_env("IAC_ENCRYPTION_PASSPHRASE", ""))) }`` or ``upper(get_env("IAC_RUNNERS_TOKEN"))``
put the transformed secret in comment.md and plan.txt; only the plain value is redacted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from infra_fixtures import commit_all, edit, invoke, read_summary, units_by_path

pytestmark = pytest.mark.e2e

DNS = "live/cloud/dns"
DNS_FILE = f"{DNS}/terragrunt.hcl"
ZONE = '  zone_name = "example.net"'
PASSPHRASE = "correct-horse-battery-staple-42"
TOKEN = "ghs-runner-token-7f3a9c1e"

TRANSFORMS = {
    "split-join": (
        'join(".", split("", get_env("IAC_ENCRYPTION_PASSPHRASE", "")))',
        ".".join(PASSPHRASE),
    ),
    "upper": ('upper(get_env("IAC_RUNNERS_TOKEN", ""))', TOKEN.upper()),
}
SECRETS = {"IAC_ENCRYPTION_PASSPHRASE": PASSPHRASE, "IAC_RUNNERS_TOKEN": TOKEN}

RUNS = {
    "per-unit plan": ("plan", "--unit", DNS),
    "batch plan": ("plan", "--all"),
    "drift": ("drift",),
}


def _everything(out: Path, ran: object) -> str:
    text = getattr(ran, "output", "")
    if out.is_dir():
        for path in out.rglob("*"):
            if path.is_file() and path.suffix != ".tfplan":
                text += path.read_text(errors="replace")
    return text


@pytest.mark.parametrize("args", list(RUNS.values()), ids=list(RUNS))
@pytest.mark.parametrize("transform", list(TRANSFORMS), ids=list(TRANSFORMS))
def test_a_transformed_secret_is_refused_before_terragrunt_and_never_printed(
    example_repo: Path, tmp_path: Path, args: tuple[str, ...], transform: str
) -> None:
    expr, shown = TRANSFORMS[transform]
    edit(example_repo, DNS_FILE, ZONE, f"{ZONE}\n  note      = {expr}")
    commit_all(example_repo, "a secret, transformed, in an input")
    out = tmp_path / "out"
    ran = invoke(example_repo, *args, "--out", str(out), env=SECRETS)
    assert ran.returncode == 1, ran.output
    assert f"{DNS_FILE}:18: secret-read: get_env(" in ran.stderr
    assert not (out / "summary.json").exists()
    assert shown not in _everything(out, ran)


def test_check_names_a_transformed_secret(example_repo: Path) -> None:
    edit(example_repo, DNS_FILE, ZONE, f"{ZONE}\n  note      = {TRANSFORMS['upper'][0]}")
    ran = invoke(example_repo, "check", "--json")
    assert ran.returncode == 1, ran.output
    found = [(v["file"], v["line"], v["rule"]) for v in json.loads(ran.stdout)["violations"]]
    assert found == [(DNS_FILE, 18, "secret-read")]


# --------------------------------------------------------------------------- siblings


def test_a_secret_read_in_an_included_file_is_refused_for_every_unit_including_it(
    example_repo: Path, tmp_path: Path
) -> None:
    tier = "live/cloud/tier.hcl"
    edit(
        example_repo,
        tier,
        "  plan_on_pr = true\n",
        '  plan_on_pr = true\n  token      = lower(get_env("IAC_RUNNERS_TOKEN", "x"))\n',
    )
    commit_all(example_repo, "a tier file reading a secret")
    ran = invoke(example_repo, "plan", "--unit", DNS, "--out", str(tmp_path / "out"))
    assert ran.returncode == 1 and f"{tier}:13: secret-read" in ran.stderr, ran.output


def test_sops_decrypt_file_in_an_included_file_is_refused(
    example_repo: Path, tmp_path: Path
) -> None:
    tier = "live/cloud/tier.hcl"
    edit(
        example_repo,
        tier,
        "  plan_on_pr = true\n",
        '  plan_on_pr = true\n  creds      = try(jsondecode(sops_decrypt_file("creds.json")), {})\n',
    )
    commit_all(example_repo, "a tier file decrypting a secret")
    checked = invoke(example_repo, "check")
    assert f"{tier}:13: secret-read: sops_decrypt_file()" in checked.output
    ran = invoke(example_repo, "plan", "--all", "--out", str(tmp_path / "out"))
    assert ran.returncode == 1 and f"{tier}:13: secret-read" in ran.stderr, ran.output


def test_a_secret_read_in_a_file_read_with_read_terragrunt_config_is_refused(
    example_repo: Path, tmp_path: Path
) -> None:
    (example_repo / "live/cloud/dns/shared.hcl").write_text(
        'locals {\n  t = base64encode(get_env("IAC_RUNNERS_TOKEN", ""))\n}\n'
    )
    edit(
        example_repo,
        DNS_FILE,
        "inputs = {",
        'locals {\n  shared = read_terragrunt_config("shared.hcl")\n}\n\ninputs = {',
    )
    commit_all(example_repo, "a read configuration that reads a secret")
    ran = invoke(example_repo, "plan", "--unit", DNS, "--out", str(tmp_path / "out"), env=SECRETS)
    assert ran.returncode == 1 and "live/cloud/dns/shared.hcl:2: secret-read" in ran.stderr
    assert TOKEN not in ran.output


def test_a_secret_read_in_a_dependency_is_refused_for_its_dependent(
    example_repo: Path, tmp_path: Path
) -> None:
    """Terragrunt parses dns (its outputs, or mocks) for gitops: a secret read there is
    evaluated in gitops' plan too."""
    edit(example_repo, DNS_FILE, ZONE, f"{ZONE}\n  note      = {TRANSFORMS['upper'][0]}")
    commit_all(example_repo, "a dependency reads a secret")
    ran = invoke(
        example_repo, "plan", "--unit", "live/cluster/gitops", "--out", str(tmp_path / "out")
    )
    assert ran.returncode == 1 and f"{DNS_FILE}:18: secret-read" in ran.stderr, ran.output


def test_a_computed_variable_name_is_refused(example_repo: Path, tmp_path: Path) -> None:
    edit(
        example_repo,
        DNS_FILE,
        ZONE,
        f'{ZONE}\n  note      = get_env(join("_", ["IAC", "RUNNERS", "TOKEN"]), "")',
    )
    commit_all(example_repo, "a variable whose name is computed")
    ran = invoke(example_repo, "plan", "--unit", DNS, "--out", str(tmp_path / "out"), env=SECRETS)
    assert ran.returncode == 1
    assert f"{DNS_FILE}:18: secret-read: get_env() with a computed variable name" in ran.stderr
    assert TOKEN not in ran.output


def test_testing_whether_a_secret_is_set_is_not_a_read(example_repo: Path, tmp_path: Path) -> None:
    """root.hcl turns encryption on with ``get_env("IAC_ENCRYPTION_PASSPHRASE", "") != ""``:
    the example, encrypted, plans; a comparison with anything but "" is refused."""
    out = tmp_path / "out"
    ran = invoke(
        example_repo,
        "plan",
        "--unit",
        DNS,
        "--out",
        str(out),
        env={"IAC_ENCRYPTION_PASSPHRASE": PASSPHRASE},
    )
    assert ran.returncode == 0, ran.output
    assert units_by_path(read_summary(out))[DNS]["status"] == "changes"
    edit(
        example_repo,
        DNS_FILE,
        ZONE,
        f'{ZONE}\n  note      = get_env("IAC_ENCRYPTION_PASSPHRASE", "") == "correct-horse"',
    )
    checked = invoke(example_repo, "check")
    assert f"{DNS_FILE}:18: secret-read" in checked.output


def test_a_secret_read_in_a_stack_file_keeps_the_stack_from_being_generated(
    example_repo: Path, tmp_path: Path
) -> None:
    stack = "live/cloud/apps/terragrunt.stack.hcl"
    (example_repo / "live/cloud/apps").mkdir(parents=True)
    (example_repo / stack).write_text(
        'unit "w" {\n  source = "../dns"\n  path   = "w"\n'
        '  values = { t = md5(get_env("IAC_RUNNERS_TOKEN", "")) }\n}\n'
    )
    commit_all(example_repo, "a stack passing a secret's digest")
    listed = invoke(example_repo, "units", "--json", env=SECRETS)
    unit = next(
        u
        for u in json.loads(listed.stdout)["units"]
        if u["path"] == "live/cloud/apps/.terragrunt-stack/w"
    )
    assert f"{stack}:4: secret-read" in unit["error"]
