"""Module sources read as go-getter reads them: the ref shown is the ref fetched, the
repository the allowlist checks is the one cloned, and an ambiguous source is refused.

Pure tables on :func:`tooling.model.sources.parse_source`, plus the model: the unit's
``ref`` (what `invoke units` and the report show) and its fail-closed mark.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tooling.core.targets import model_refusal
from tooling.model.repo import Unit, WorkTree, load
from tooling.model.sources import parse_source

GX = "git.example.com"
PROXMOX = f"git::https://{GX}/platform-modules/terraform-proxmox.git"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        pytest.param(
            f"{PROXMOX}//modules/vm?re%66=main&ref=v1.1.0", "'ref' twice", id="encoded-key-first"
        ),
        pytest.param(
            f"{PROXMOX}//modules/vm?ref=v1.1.0&re%66=main", "'ref' twice", id="encoded-key-second"
        ),
        pytest.param(f"{PROXMOX}//modules/vm?ref=v1.1.0&ref=main", "'ref' twice", id="plain-twice"),
        pytest.param(
            f"{PROXMOX}//modules/vm?%72%65%66=main&ref=v1.1.0", "'ref' twice", id="all-encoded-key"
        ),
        pytest.param(f"{PROXMOX}?ref=v1.1.0;ref=main", "';'", id="semicolon"),
        pytest.param(f"{PROXMOX}?ref=v1.1.0&r%zzef=main", "malformed", id="bad-escape-key"),
        pytest.param(f"{PROXMOX}?ref=v1.1%2", "malformed", id="bad-escape-value"),
        pytest.param(f"{PROXMOX}//modules/../../evil?ref=v1.1.0", "climbs out", id="subdir-dotdot"),
        pytest.param(
            f"{PROXMOX}//modules/%2e%2e/%2e%2e/evil?ref=v1.1.0",
            "climbs out",
            id="subdir-encoded-dotdot",
        ),
        pytest.param(
            f"{GX}/platform-modules/x.git?ref=v1&ref=v2", "'ref' twice", id="no-forced-getter"
        ),
        pytest.param(
            f"git@{GX}:platform-modules/x.git?ref=v1&re%66=v2", "'ref' twice", id="scp-form"
        ),
        pytest.param(
            "tfr:///ns/vpc/aws?version=1.0.0&versio%6e=2.0.0",
            "'version' twice",
            id="registry-version-twice",
        ),
    ],
)
def test_a_source_go_getter_could_read_otherwise_is_refused_not_guessed(
    text: str, why: str
) -> None:
    src = parse_source(text)
    assert src.kind == "unknown" and src.ambiguous
    assert src.ref is None and src.identity is None
    assert src.note is not None and why in src.note


@pytest.mark.parametrize(
    ("text", "identity"),
    [
        pytest.param(
            f"git::https://{GX}/platform-modules/../evil-org/backdoor.git?ref=v1.1.0",
            f"{GX}/evil-org/backdoor",
            id="dotdot",
        ),
        pytest.param(
            f"git::https://{GX}/platform-modules/%2e%2e/evil-org/backdoor.git?ref=v1.1.0",
            f"{GX}/evil-org/backdoor",
            id="encoded-dotdot",
        ),
        pytest.param(
            f"git::https://{GX}/platform-modules/%2E%2E/evil-org/backdoor.git?ref=v1.1.0",
            f"{GX}/evil-org/backdoor",
            id="encoded-dotdot-upper",
        ),
        pytest.param(
            f"git::https://{GX}/platform-modules/./../../evil-org/backdoor.git?ref=v1.1.0",
            f"{GX}/evil-org/backdoor",
            id="dot-and-above-root",
        ),
        pytest.param(
            f"git::https://{GX}/platform-modules%2F..%2Fevil-org/backdoor.git?ref=v1.1.0",
            f"{GX}/evil-org/backdoor",
            id="encoded-slashes",
        ),
        pytest.param(
            f"git@{GX}:platform-modules/../evil-org/backdoor.git?ref=v1.1.0",
            f"{GX}/evil-org/backdoor",
            id="scp-dotdot",
        ),
        pytest.param(
            f"git::ssh://git@{GX}/platform-modules/../evil-org/backdoor.git?ref=v1.1.0",
            f"{GX}/evil-org/backdoor",
            id="ssh-url-dotdot",
        ),
        pytest.param(
            f"{GX.replace('git.', 'github.')}/platform-modules/../evil-org/backdoor?ref=v1.1.0",
            None,
            id="not-a-shorthand-host",
        ),
        pytest.param(
            "github.com/platform-modules/../evil-org/backdoor?ref=v1.1.0",
            "github.com/evil-org/backdoor",
            id="github-shorthand-dotdot",
        ),
        pytest.param(
            f"git::https://{GX}@evil.example/platform-modules/terraform-proxmox.git?ref=v1.1.0",
            "evil.example/platform-modules/terraform-proxmox",
            id="allowed-host-as-user",
        ),
        pytest.param(
            f"git::https://{GX}/platform-modules/terraform%2Dproxmox.git?ref=v1.1.0",
            f"{GX}/platform-modules/terraform-proxmox",
            id="encoded-name-is-the-same-repository",
        ),
    ],
)
def test_the_identity_the_allowlist_checks_is_the_path_the_server_resolves(
    text: str, identity: str | None
) -> None:
    assert parse_source(text).identity == identity


def test_the_ref_is_the_decoded_value_with_the_span_where_it_is_written() -> None:
    text = f"{PROXMOX}//modules/vm?depth=1&re%66=v1%2E2.0"
    src = parse_source(text)
    assert (src.kind, src.ref, src.subdir) == ("git", "v1.2.0", "modules/vm")
    assert src.ref_span is not None
    a, b = src.ref_span
    assert text[a:b] == "v1%2E2.0"  # a bump replaces what is written
    # a subdir with .. that stays inside the repository is resolved
    assert parse_source(f"{PROXMOX}//modules/x/../vm?ref=v1.1.0").subdir == "modules/vm"


UNIT = """include "root" {{
  path = find_in_parent_folders("root.hcl")
}}

terraform {{
  source = "{source}"
}}
"""


def _model(tmp_path: Path, units: dict[str, str]) -> dict[str, Unit]:
    (tmp_path / "root.hcl").write_text("")
    for name, source in units.items():
        folder = tmp_path / "live" / "cloud" / name
        folder.mkdir(parents=True)
        (folder / "terragrunt.hcl").write_text(UNIT.format(source=source))
    model = load(WorkTree(tmp_path, ("live",)), None)
    return {p.rsplit("/", 1)[1]: u for p, u in model.units.items()}


def test_units_show_the_ref_go_getter_fetches_and_mark_an_ambiguous_source(
    tmp_path: Path,
) -> None:
    units = _model(
        tmp_path,
        {
            "twice": f"{PROXMOX}//modules/vm?re%66=main&ref=v1.1.0",
            "encoded": f"{PROXMOX}//modules/vm?ref=v1%2E2.0",
            "plain": f"{PROXMOX}//modules/vm?ref=v1.1.0",
        },
    )
    twice, encoded, plain = units["twice"], units["encoded"], units["plain"]
    # before: `units` showed ref=v1.1.0 while Terragrunt fetched main
    assert twice.ref is None
    refusal = model_refusal(twice)
    assert refusal is not None and "'ref' twice" in refusal
    assert encoded.ref == "v1.2.0"
    assert model_refusal(encoded) is None
    assert plain.ref == "v1.1.0" and model_refusal(plain) is None
