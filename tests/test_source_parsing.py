"""Module sources read as go-getter reads them: the ref shown is the ref fetched, the
repository the allowlist checks is the one cloned, and an ambiguous source is refused.

Pure tables on :func:`tooling.model.sources.parse_source`, plus the model: the unit's
``ref`` (what `invoke units` and the report show) and its fail-closed mark.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tooling.core.plan.targets import model_refusal
from tooling.model.repo import load
from tooling.model.sources import parse_source, remote_url, support
from tooling.model.trees import WorkTree
from tooling.model.units import Unit

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


#: every source form go-getter and Terragrunt accept: (source, kind, scheme, URL git
#: clones, subdir, ref, (pins, outdated, bump), why not); the table in docs/bumps.md
SOURCE_FORMS = [
    (
        f"git::https://{GX}/org/repo.git//modules/vm?ref=v1.1.0",
        "git",
        "https",
        f"https://{GX}/org/repo.git",
        "modules/vm",
        "v1.1.0",
        (True, True, True),
        "",
    ),
    (
        f"git::ssh://git@{GX}:2222/org/repo.git//sub?ref=v1.0.0",
        "git",
        "ssh",
        f"ssh://git@{GX}:2222/org/repo.git",
        "sub",
        "v1.0.0",
        (True, True, True),
        "",
    ),
    (
        f"git@{GX}:group/sub/repo.git//mod?ref=v1.0.0",
        "git",
        "ssh",
        f"git@{GX}:group/sub/repo.git",
        "mod",
        "v1.0.0",
        (True, True, True),
        "",
    ),
    (
        f"git::git@{GX}:org/repo.git?ref=v1.0.0",
        "git",
        "ssh",
        f"git@{GX}:org/repo.git",
        None,
        "v1.0.0",
        (True, True, True),
        "",
    ),
    (
        "github.com/org/repo//mod?ref=v1.0.0",
        "git",
        "https",
        "https://github.com/org/repo.git",
        "mod",
        "v1.0.0",
        (True, True, True),
        "",
    ),
    (
        f"https://{GX}/org/repo.git?depth=1&ref=v1",
        "git",
        "https",
        f"https://{GX}/org/repo.git",
        None,
        "v1",
        (True, True, True),
        "",
    ),
    (
        "git::file:///srv/modules/repo.git//mod?ref=v1.0.0",
        "git",
        "file",
        "file:///srv/modules/repo.git",
        "mod",
        "v1.0.0",
        (True, True, True),
        "",
    ),
    (
        "git::file:///srv/modules/repo.git?ref=v1.0.0",
        "git",
        "file",
        "file:///srv/modules/repo.git",
        None,
        "v1.0.0",
        (True, True, True),
        "",
    ),
    (
        "tfr:///terraform-aws-modules/vpc/aws?version=5.0.0",
        "registry",
        "tfr",
        None,
        None,
        "5.0.0",
        (True, False, False),
        "registry protocol",
    ),
    (
        "s3::https://s3-eu-west-1.amazonaws.com/bucket/vpc.zip",
        "unknown",
        "s3",
        None,
        None,
        None,
        (False, False, False),
        "s3:: sources are not versioned",
    ),
    (
        "gcs::https://www.googleapis.com/storage/v1/bucket/vpc.zip",
        "unknown",
        "gcs",
        None,
        None,
        None,
        (False, False, False),
        "gcs:: sources are not versioned",
    ),
    (
        "hg::http://hg.example.com/repo",
        "unknown",
        "hg",
        None,
        None,
        None,
        (False, False, False),
        "hg:: sources are not versioned",
    ),
    (
        "https://example.com/vpc.zip",
        "unknown",
        "https",
        None,
        None,
        None,
        (False, False, False),
        "archive",
    ),
    (
        "git::file://modules/repo.git?ref=v1",
        "unknown",
        "file",
        None,
        None,
        None,
        (False, False, False),
        "absolute path",
    ),
    ("../modules/x", "local", None, None, None, None, (False, False, False), "local path"),
    ("/abs/modules/x", "local", None, None, None, None, (False, False, False), "local path"),
    ("file:///abs/modules/x", "local", None, None, None, None, (False, False, False), "local path"),
]


@pytest.mark.parametrize(
    ("text", "kind", "scheme", "url", "subdir", "ref", "supported", "why"),
    SOURCE_FORMS,
    ids=[row[0] for row in SOURCE_FORMS],
)
def test_every_source_form_says_its_scheme_url_subdir_ref_and_what_is_supported(
    text: str,
    kind: str,
    scheme: str | None,
    url: str | None,
    subdir: str | None,
    ref: str | None,
    supported: tuple[bool, bool, bool],
    why: str,
) -> None:
    src = parse_source(text)
    assert (src.kind, src.scheme, remote_url(src), src.subdir, src.ref) == (
        kind,
        scheme,
        url,
        subdir,
        ref,
    )
    found = support(src)
    assert (found.pins, found.outdated, found.bump) == supported
    assert why in found.reason
    if kind != "git":
        return
    assert src.identity is not None and src.ref_span is not None
    assert text[src.ref_span[0] : src.ref_span[1]] == ref  # where a bump edits


def test_the_doc_table_lists_every_scheme_the_parser_names() -> None:
    doc = (Path(__file__).parents[1] / "docs" / "bumps.md").read_text()
    for text, _kind, scheme, *_rest in SOURCE_FORMS:
        if scheme is not None:
            assert f"| {scheme} |" in doc or f" {scheme}," in doc, text
    assert "git::file:///" in doc


def test_a_local_git_repository_has_a_file_identity_that_https_and_ssh_do_not_share() -> None:
    local = parse_source("git::file:///srv/modules/terraform-proxmox.git?ref=v1.0.0")
    remote = parse_source(f"{PROXMOX}?ref=v1.0.0")
    assert local.identity == "file:///srv/modules/terraform-proxmox"
    assert local.short_name == remote.short_name == "terraform-proxmox"
    assert local.identity != remote.identity
