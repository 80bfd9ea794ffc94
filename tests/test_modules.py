"""Table tests for module sources, versions and byte-exact ref edits (model.sources, model.versions, core.bump.upgrades, core.refs)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import NamedTuple

import pytest

from tooling.core.bump.upgrades import Skip, Upgrade, is_branch_name, pick_upgrades
from tooling.core.refs import bump_text, find_source_lines
from tooling.core.refs.resolve import ResolvedSource, Unresolvable, resolve_local_source
from tooling.errors import ToolingError
from tooling.model.sources import ModuleSource, is_commit_sha, parse_source
from tooling.model.versions import Version, format_like, parse_version

LIVE = Path(__file__).resolve().parents[1] / "live"

OLD_SHA = "0123456789abcdef0123456789abcdef01234567"
NEW_SHA = "fedcba9876543210fedcba9876543210fedcba98"

GX = "git.example.com"
PROXMOX = f"git::https://{GX}/platform-modules/terraform-proxmox.git"


def unit(line: str, eol: str = "\n") -> str:
    """A small terragrunt.hcl with ``line`` as the only line of its terraform block."""
    return (
        f'include "root" {{{eol}  path = find_in_parent_folders("root.hcl"){eol}}}{eol}{eol}'
        f"terraform {{{eol}  {line}{eol}}}{eol}{eol}"
        f'inputs = {{{eol}  name = "x"{eol}}}{eol}'
    )


class Exp(NamedTuple):
    kind: str | None  # None: the source could not be resolved to a module
    host: str | None
    path: str | None
    subdir: str | None
    ref: str | None
    identity: str | None


def git(host: str, path: str, subdir: str | None, ref: str | None) -> Exp:
    return Exp("git", host, path, subdir, ref, f"{host}/{path}")


LOCALS_BASE = f'locals {{\n  base = "git::https://{GX}/platform-modules"\n}}\n\n'

# (terragrunt.hcl text, expected parse, new ref, expected text after bump_text(old=ref, new))
SOURCE_CASES = [
    pytest.param(
        unit(f'source = "{PROXMOX}//modules/vm?ref=v1.1.0"'),
        git(GX, "platform-modules/terraform-proxmox", "modules/vm", "v1.1.0"),
        "v1.2.0",
        unit(f'source = "{PROXMOX}//modules/vm?ref=v1.2.0"'),
        id="git-https-subdir",
    ),
    pytest.param(
        unit(f'source = "git::https://{GX}/platform-modules/terraform-flux.git?ref=v1.1.0"'),
        git(GX, "platform-modules/terraform-flux", None, "v1.1.0"),
        "v1.1.1",
        unit(f'source = "git::https://{GX}/platform-modules/terraform-flux.git?ref=v1.1.1"'),
        id="git-https-no-subdir",
    ),
    pytest.param(
        unit(f'source = "git::https://{GX}:8443/org/repo.git?ref=v1.0.0"'),
        git(GX, "org/repo", None, "v1.0.0"),
        "v1.0.1",
        unit(f'source = "git::https://{GX}:8443/org/repo.git?ref=v1.0.1"'),
        id="git-https-port",
    ),
    pytest.param(
        unit(f'source = "git::https://oauth2@{GX}/org/repo.git//a/b?ref=v1.0.0"'),
        git(GX, "org/repo", "a/b", "v1.0.0"),
        "v1.1.0",
        unit(f'source = "git::https://oauth2@{GX}/org/repo.git//a/b?ref=v1.1.0"'),
        id="git-https-userinfo",
    ),
    pytest.param(
        unit('source = "git::https://Git.Example.COM/Org/Repo.git?ref=v1.0.0"'),
        git(GX, "Org/Repo", None, "v1.0.0"),
        "v1.0.1",
        unit('source = "git::https://Git.Example.COM/Org/Repo.git?ref=v1.0.1"'),
        id="host-lowercased-path-kept",
    ),
    pytest.param(
        unit(f'source = "git::ssh://git@{GX}:2222/org/repo.git//modules/x?ref=v1.0.0"'),
        git(GX, "org/repo", "modules/x", "v1.0.0"),
        "v1.4.0",
        unit(f'source = "git::ssh://git@{GX}:2222/org/repo.git//modules/x?ref=v1.4.0"'),
        id="git-ssh-port-subdir",
    ),
    pytest.param(
        unit('source = "git::ssh://git@github.com/org/repo.git?ref=v3.0.0"'),
        git("github.com", "org/repo", None, "v3.0.0"),
        "v4.0.0",
        unit('source = "git::ssh://git@github.com/org/repo.git?ref=v4.0.0"'),
        id="git-ssh-no-port",
    ),
    pytest.param(
        unit('source = "git@github.com:org/repo.git//modules/x?ref=v1.0.0"'),
        git("github.com", "org/repo", "modules/x", "v1.0.0"),
        "v1.0.1",
        unit('source = "git@github.com:org/repo.git//modules/x?ref=v1.0.1"'),
        id="scp-github",
    ),
    pytest.param(
        unit('source = "git@git.internal.example:platform/infra/repo.git?ref=v2.3.4"'),
        git("git.internal.example", "platform/infra/repo", None, "v2.3.4"),
        "v2.4.0",
        unit('source = "git@git.internal.example:platform/infra/repo.git?ref=v2.4.0"'),
        id="scp-any-host-nested-group",
    ),
    pytest.param(
        unit('source = "git::git@bitbucket.org:org/repo.git?ref=v0.4.0"'),
        git("bitbucket.org", "org/repo", None, "v0.4.0"),
        "v0.5.0",
        unit('source = "git::git@bitbucket.org:org/repo.git?ref=v0.5.0"'),
        id="forced-git-scp",
    ),
    pytest.param(
        unit('source = "github.com/org/repo//modules/x?ref=v1.0.0"'),
        git("github.com", "org/repo", "modules/x", "v1.0.0"),
        "v1.2.0",
        unit('source = "github.com/org/repo//modules/x?ref=v1.2.0"'),
        id="github-shorthand",
    ),
    pytest.param(
        unit('source = "github.com/org/repo.git?ref=1.0.0"'),
        git("github.com", "org/repo", None, "1.0.0"),
        "1.1.0",
        unit('source = "github.com/org/repo.git?ref=1.1.0"'),
        id="github-shorthand-dotgit-no-v",
    ),
    pytest.param(
        unit('source = "bitbucket.org/org/repo?ref=v1.0.0"'),
        git("bitbucket.org", "org/repo", None, "v1.0.0"),
        "v1.0.1",
        unit('source = "bitbucket.org/org/repo?ref=v1.0.1"'),
        id="bitbucket-shorthand",
    ),
    pytest.param(
        unit('source = "gitlab.com/group/sub/repo//mod?ref=v1.0.0"'),
        git("gitlab.com", "group/sub/repo", "mod", "v1.0.0"),
        "v1.0.1",
        unit('source = "gitlab.com/group/sub/repo//mod?ref=v1.0.1"'),
        id="gitlab-shorthand",
    ),
    pytest.param(
        unit(f'source = "https://{GX}/org/repo.git//sub?ref=v1.0.0"'),
        git(GX, "org/repo", "sub", "v1.0.0"),
        "v1.1.0",
        unit(f'source = "https://{GX}/org/repo.git//sub?ref=v1.1.0"'),
        id="https-dotgit-without-git-prefix",
    ),
    pytest.param(
        unit(f'source = "{PROXMOX}?depth=1&ref=v1.1.0"'),
        git(GX, "platform-modules/terraform-proxmox", None, "v1.1.0"),
        "v1.2.0",
        unit(f'source = "{PROXMOX}?depth=1&ref=v1.2.0"'),
        id="query-depth-first",
    ),
    pytest.param(
        unit(f'source = "{PROXMOX}//modules/vm?ref=v1.1.0&depth=1"'),
        git(GX, "platform-modules/terraform-proxmox", "modules/vm", "v1.1.0"),
        "v1.2.0",
        unit(f'source = "{PROXMOX}//modules/vm?ref=v1.2.0&depth=1"'),
        id="query-ref-first",
    ),
    pytest.param(
        unit(
            'source = "git::ssh://git@github.com/org/repo.git?ref=v1.0.0&sshkey=AAAAB3Nz+aC1y/c2E="'
        ),
        git("github.com", "org/repo", None, "v1.0.0"),
        "v1.0.1",
        unit(
            'source = "git::ssh://git@github.com/org/repo.git?ref=v1.0.1&sshkey=AAAAB3Nz+aC1y/c2E="'
        ),
        id="query-sshkey",
    ),
    pytest.param(
        unit('source = "tfr:///terraform-aws-modules/vpc/aws?version=5.1.0"'),
        Exp(
            "registry",
            "registry.opentofu.org",
            "terraform-aws-modules/vpc/aws",
            None,
            "5.1.0",
            "registry.opentofu.org/terraform-aws-modules/vpc/aws",
        ),
        "5.2.0",
        unit('source = "tfr:///terraform-aws-modules/vpc/aws?version=5.2.0"'),
        id="tfr-default-registry",
    ),
    pytest.param(
        unit('source = "tfr://registry.example.com/ns/name/aws//modules/x?version=1.0.0"'),
        Exp(
            "registry",
            "registry.example.com",
            "ns/name/aws",
            "modules/x",
            "1.0.0",
            "registry.example.com/ns/name/aws",
        ),
        "2.0.0",
        unit('source = "tfr://registry.example.com/ns/name/aws//modules/x?version=2.0.0"'),
        id="tfr-private-registry-subdir",
    ),
    pytest.param(
        unit('source = "../../modules/network"'),
        Exp("local", None, "../../modules/network", None, None, None),
        None,
        None,
        id="local-relative",
    ),
    pytest.param(
        unit('source = "/srv/modules/network"'),
        Exp("local", None, "/srv/modules/network", None, None, None),
        None,
        None,
        id="local-absolute",
    ),
    pytest.param(
        unit('source = "s3::https://s3.amazonaws.com/bucket/module.zip"'),
        Exp("unknown", None, None, None, None, None),
        None,
        None,
        id="unknown-s3",
    ),
    pytest.param(
        unit('source = "https://example.com/module.zip?archive=zip"'),
        Exp("unknown", None, None, None, None, None),
        None,
        None,
        id="unknown-http-archive",
    ),
    pytest.param(
        unit(f'source = "git::https://{GX}/org/repo.git"'),
        git(GX, "org/repo", None, None),
        None,
        None,
        id="git-unpinned",
    ),
    pytest.param(
        unit(f'source="{PROXMOX}?ref=v1.1.0"'),
        git(GX, "platform-modules/terraform-proxmox", None, "v1.1.0"),
        "v1.2.0",
        unit(f'source="{PROXMOX}?ref=v1.2.0"'),
        id="no-spaces",
    ),
    pytest.param(
        unit(f'source    =   "{PROXMOX}?ref=v1.1.0"'),
        git(GX, "platform-modules/terraform-proxmox", None, "v1.1.0"),
        "v1.2.0",
        unit(f'source    =   "{PROXMOX}?ref=v1.2.0"'),
        id="aligned-spaces",
    ),
    pytest.param(
        f'terraform {{ source = "{PROXMOX}?ref=v1.1.0" }}\n',
        git(GX, "platform-modules/terraform-proxmox", None, "v1.1.0"),
        "v1.2.0",
        f'terraform {{ source = "{PROXMOX}?ref=v1.2.0" }}\n',
        id="one-line-block",
    ),
    pytest.param(
        f'terraform {{source="{PROXMOX}?ref=v1.1.0&depth=1"}}',
        git(GX, "platform-modules/terraform-proxmox", None, "v1.1.0"),
        "v1.2.0",
        f'terraform {{source="{PROXMOX}?ref=v1.2.0&depth=1"}}',
        id="one-line-block-tight-no-eol",
    ),
    pytest.param(
        unit(f'source = "{PROXMOX}//modules/vm?depth=1&ref=v1.1.0"', eol="\r\n"),
        git(GX, "platform-modules/terraform-proxmox", "modules/vm", "v1.1.0"),
        "v1.2.0",
        unit(f'source = "{PROXMOX}//modules/vm?depth=1&ref=v1.2.0"', eol="\r\n"),
        id="crlf",
    ),
    pytest.param(
        unit(f'source = "{PROXMOX}?ref=v1.1.0" # keep in step with network', eol="\r\n"),
        git(GX, "platform-modules/terraform-proxmox", None, "v1.1.0"),
        "v1.2.0",
        unit(f'source = "{PROXMOX}?ref=v1.2.0" # keep in step with network', eol="\r\n"),
        id="crlf-hash-comment",
    ),
    pytest.param(
        unit(f'source = "{PROXMOX}?ref=v1.1.0" // v1.1.0 is pinned on purpose'),
        git(GX, "platform-modules/terraform-proxmox", None, "v1.1.0"),
        "v1.2.0",
        unit(f'source = "{PROXMOX}?ref=v1.2.0" // v1.1.0 is pinned on purpose'),
        id="slash-comment-with-version-untouched",
    ),
    pytest.param(
        unit(f'source = "{PROXMOX}?ref=v1.1.0" /* pinned */'),
        git(GX, "platform-modules/terraform-proxmox", None, "v1.1.0"),
        "v1.2.0",
        unit(f'source = "{PROXMOX}?ref=v1.2.0" /* pinned */'),
        id="block-comment",
    ),
    pytest.param(
        unit(f'source = "git::https://{GX}/org/tools-v1.1.0.git//v1.1.0?ref=v1.1.0"'),
        git(GX, "org/tools-v1.1.0", "v1.1.0", "v1.1.0"),
        "v1.2.0",
        unit(f'source = "git::https://{GX}/org/tools-v1.1.0.git//v1.1.0?ref=v1.2.0"'),
        id="version-text-elsewhere-untouched",
    ),
    pytest.param(
        unit(f'source = "git::https://{GX}/org/monorepo.git//dns?ref=dns-v1.2.3"'),
        git(GX, "org/monorepo", "dns", "dns-v1.2.3"),
        "dns-v1.3.0",
        unit(f'source = "git::https://{GX}/org/monorepo.git//dns?ref=dns-v1.3.0"'),
        id="monorepo-dash-prefix",
    ),
    pytest.param(
        unit(f'source = "git::https://{GX}/org/monorepo.git//dns?ref=dns/v1.2.3"'),
        git(GX, "org/monorepo", "dns", "dns/v1.2.3"),
        "dns/v1.3.0",
        unit(f'source = "git::https://{GX}/org/monorepo.git//dns?ref=dns/v1.3.0"'),
        id="monorepo-slash-prefix",
    ),
    pytest.param(
        unit(f'source = "{PROXMOX}?ref=v2.0"'),
        git(GX, "platform-modules/terraform-proxmox", None, "v2.0"),
        "v2.1",
        unit(f'source = "{PROXMOX}?ref=v2.1"'),
        id="two-component-ref",
    ),
    pytest.param(
        LOCALS_BASE + unit('source = "${local.base}/terraform-talos.git?ref=v1.0.0"'),
        git(GX, "platform-modules/terraform-talos", None, "v1.0.0"),
        "v1.1.0",
        LOCALS_BASE + unit('source = "${local.base}/terraform-talos.git?ref=v1.1.0"'),
        id="interpolated-local-prefix",
    ),
    pytest.param(
        unit('source = "${include.root.locals.module_base}/terraform-talos.git?ref=v1.0.0"'),
        Exp(None, None, None, None, "v1.0.0", None),
        "v1.1.0",
        unit('source = "${include.root.locals.module_base}/terraform-talos.git?ref=v1.1.0"'),
        id="interpolated-include-prefix",
    ),
]


@pytest.mark.parametrize(("hcl", "exp", "new_ref", "expected"), SOURCE_CASES)
def test_source_line_parse(hcl: str, exp: Exp, new_ref: str | None, expected: str | None) -> None:
    [line] = find_source_lines(hcl)
    assert line.ref == exp.ref
    if line.ref_span is not None:
        assert hcl[line.ref_span[0] : line.ref_span[1]] == exp.ref
    if exp.kind is None:
        assert line.source is None
        assert line.unresolved
        return
    src = line.source
    assert src is not None
    assert (src.kind, src.host, src.path, src.subdir, src.ref, src.identity) == tuple(exp)
    if not line.interpolated:
        # the line's value parsed on its own gives the same answer, spans included
        assert parse_source(line.value) == src
        if src.ref_span is not None:
            assert line.value[src.ref_span[0] : src.ref_span[1]] == exp.ref


@pytest.mark.parametrize(("hcl", "exp", "new_ref", "expected"), SOURCE_CASES)
def test_source_line_bump(hcl: str, exp: Exp, new_ref: str | None, expected: str | None) -> None:
    if new_ref is None or exp.ref is None:
        # nothing to bump: any bump leaves the bytes alone
        assert bump_text(hcl, "v1.0.0", "v9.9.9") == hcl
        return
    assert expected is not None
    assert bump_text(hcl, exp.ref, new_ref) == expected
    if exp.identity is not None:
        assert bump_text(hcl, exp.ref, new_ref, identity=exp.identity) == expected
    # another module, or another ref, is left alone
    assert bump_text(hcl, exp.ref, new_ref, identity="git.example.com/org/other") == hcl
    assert bump_text(hcl, exp.ref + "9", new_ref) == hcl


def test_source_cases_cover_enough_forms() -> None:
    assert len(SOURCE_CASES) >= 30


class PSExp(NamedTuple):
    kind: str
    host: str | None
    port: int | None
    path: str | None
    subdir: str | None
    ref: str | None
    query: tuple[tuple[str, str], ...]
    short_name: str | None


@pytest.mark.parametrize(
    ("text", "exp"),
    [
        pytest.param(
            f"{PROXMOX}//modules/vm?ref=v1.1.0",
            PSExp(
                "git",
                GX,
                None,
                "platform-modules/terraform-proxmox",
                "modules/vm",
                "v1.1.0",
                (("ref", "v1.1.0"),),
                "terraform-proxmox",
            ),
            id="https",
        ),
        pytest.param(
            "git::ssh://git@host.example:7999/org/repo.git//sub?depth=1&ref=v1.0.0&sshkey=a=b",
            PSExp(
                "git",
                "host.example",
                7999,
                "org/repo",
                "sub",
                "v1.0.0",
                (("depth", "1"), ("ref", "v1.0.0"), ("sshkey", "a=b")),
                "repo",
            ),
            id="ssh-port-query-order",
        ),
        pytest.param(
            "tfr://registry.example.com/ns/vpc/aws?version=1.0.0",
            PSExp(
                "registry",
                "registry.example.com",
                None,
                "ns/vpc/aws",
                None,
                "1.0.0",
                (("version", "1.0.0"),),
                "vpc",
            ),
            id="registry-short-name-is-module-name",
        ),
        pytest.param(
            "tfr:///ns/vpc?version=1.0.0",
            PSExp("unknown", None, None, None, None, None, (("version", "1.0.0"),), None),
            id="registry-missing-provider",
        ),
        pytest.param(
            "hg::https://example.com/repo?rev=1",
            PSExp("unknown", None, None, None, None, None, (), None),
            id="hg-forced",
        ),
        pytest.param(
            "modules/vpc",
            PSExp("unknown", None, None, None, None, None, (), None),
            id="bare-relative-is-unknown",
        ),
        pytest.param(
            "./modules/vpc",
            PSExp("local", None, None, "./modules/vpc", None, None, (), "vpc"),
            id="dot-relative",
        ),
        pytest.param(
            "git::https://example.com/?ref=v1",
            PSExp("unknown", None, None, None, None, None, (("ref", "v1"),), None),
            id="git-without-repo-path",
        ),
    ],
)
def test_parse_source(text: str, exp: PSExp) -> None:
    src = parse_source(text)
    got = (src.kind, src.host, src.port, src.path, src.subdir, src.ref, src.query, src.short_name)
    assert got == tuple(exp)
    if src.kind == "unknown":
        assert src.note


def test_identity_ignores_scheme_port_user_and_dotgit() -> None:
    spellings = [
        f"{PROXMOX}//modules/vm?ref=v1.1.0",
        f"git::ssh://git@{GX}:2222/platform-modules/terraform-proxmox.git?ref=v1.0.0",
        f"git@{GX}:platform-modules/terraform-proxmox.git//modules/network?ref=v1.1.0",
        f"https://{GX.upper()}/platform-modules/terraform-proxmox.git",
    ]
    identities = {parse_source(s).identity for s in spellings}
    assert identities == {f"{GX}/platform-modules/terraform-proxmox"}


def test_module_key_has_tag_prefix() -> None:
    dns = parse_source(f"git::https://{GX}/org/mono.git//dns?ref=dns-v1.2.3")
    api = parse_source(f"git::https://{GX}/org/mono.git//api?ref=api-v9.0.0")
    plain = parse_source(f"{PROXMOX}?ref=v1.1.0")
    assert dns.module_key == (f"{GX}/org/mono", "dns-")
    assert api.module_key == (f"{GX}/org/mono", "api-")
    assert plain.module_key == (f"{GX}/platform-modules/terraform-proxmox", "")
    assert parse_source("../x").module_key is None


def test_ref_span_replaces_exactly() -> None:
    text = f"{PROXMOX}?depth=1&ref=v1.1.0&x=v1.1.0"
    src = parse_source(text)
    assert src.ref_span is not None
    a, b = src.ref_span
    assert text[:a] + "v2.0.0" + text[b:] == f"{PROXMOX}?depth=1&ref=v2.0.0&x=v1.1.0"


# --------------------------------------------------------------------------- versions


@pytest.mark.parametrize(
    ("text", "prefix", "v", "numbers", "pre", "build"),
    [
        pytest.param("v1.2.3", "", "v", (1, 2, 3), (), None, id="v-full"),
        pytest.param("1.2.3", "", "", (1, 2, 3), (), None, id="bare-full"),
        pytest.param("v2", "", "v", (2,), (), None, id="v-major-only"),
        pytest.param("v2.0", "", "v", (2, 0), (), None, id="v-major-minor"),
        pytest.param("2.0", "", "", (2, 0), (), None, id="bare-major-minor"),
        pytest.param("V3.1.4", "", "V", (3, 1, 4), (), None, id="upper-v"),
        pytest.param("dns-v1.2.3", "dns-", "v", (1, 2, 3), (), None, id="dash-prefix"),
        pytest.param("dns/v1.2.3", "dns/", "v", (1, 2, 3), (), None, id="slash-prefix"),
        pytest.param("dns-1.2.3", "dns-", "", (1, 2, 3), (), None, id="dash-prefix-no-v"),
        pytest.param(
            "modules/dns/v1.0.0", "modules/dns/", "v", (1, 0, 0), (), None, id="nested-prefix"
        ),
        pytest.param("my-dns-v1.0.0", "my-dns-", "v", (1, 0, 0), (), None, id="prefix-with-dash"),
        pytest.param("v1.0.0-rc.1", "", "v", (1, 0, 0), ("rc", "1"), None, id="rc"),
        pytest.param("v1.0.0-beta.2", "", "v", (1, 0, 0), ("beta", "2"), None, id="beta"),
        pytest.param(
            "v1.2.3-1", "", "v", (1, 2, 3), ("1",), None, id="numeric-prerelease-not-prefix"
        ),
        pytest.param(
            "dns-v1.0.0-rc.1+build.7",
            "dns-",
            "v",
            (1, 0, 0),
            ("rc", "1"),
            "build.7",
            id="everything",
        ),
        pytest.param("v1.2.3+20240105", "", "v", (1, 2, 3), (), "20240105", id="build-only"),
    ],
)
def test_parse_version(
    text: str,
    prefix: str,
    v: str,
    numbers: tuple[int, ...],
    pre: tuple[str, ...],
    build: str | None,
) -> None:
    version = parse_version(text)
    assert version is not None
    assert (
        version.text,
        version.prefix,
        version.v,
        version.numbers,
        version.prerelease,
        version.build,
    ) == (
        text,
        prefix,
        v,
        numbers,
        pre,
        build,
    )


@pytest.mark.parametrize(
    "text",
    [
        "main",
        "master",
        "feature/x",
        "2024-01-05",
        "20240105",
        "2",
        "2024.01.05",
        "v1.2.3.4",
        OLD_SHA,
        "",
        "v",
        "1.02.3",
    ],
)
def test_parse_version_rejects(text: str) -> None:
    assert parse_version(text) is None


def _v(text: str) -> Version:
    version = parse_version(text)
    assert version is not None, text
    return version


def test_semver_precedence() -> None:
    ordered = [
        "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
        "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "v1.0.1", "v1.1", "2.0.0", "v10.0.0",
    ]  # fmt: skip
    versions = [_v(t) for t in ordered]
    assert sorted(reversed(versions)) == versions
    for a, b in itertools.pairwise(versions):
        assert a < b and b > a and a <= b and b >= a


def test_precision_and_build_do_not_change_precedence() -> None:
    assert not _v("v2") < _v("2.0.0") and not _v("2.0.0") < _v("v2")
    assert _v("v2") <= _v("v2.0.0") <= _v("v2.0.0+build.1") <= _v("v2")
    assert _v("v2") != _v("v2.0.0")  # == is structural


@pytest.mark.parametrize(
    ("new", "template", "expected"),
    [
        pytest.param("v2.1.0", "v2.0", "v2.1", id="keep-two-components"),
        pytest.param("v2.1.3", "v2.0", "v2.1.3", id="two-would-lose-patch"),
        pytest.param("v3.0.0", "v2", "v3", id="keep-major-only"),
        pytest.param("v3.1.0", "v2", "v3.1.0", id="major-only-would-lose-minor"),
        pytest.param("v1.3.0", "1.2.0", "1.3.0", id="drop-v"),
        pytest.param("1.3.0", "v1.2.0", "v1.3.0", id="add-v"),
        pytest.param("dns-v1.3.0", "dns-v1.2.3", "dns-v1.3.0", id="keep-prefix"),
        pytest.param("v2.0.0-rc.2", "v2.0.0-rc.1", "v2.0.0-rc.2", id="prerelease"),
        pytest.param("v2.1.0-rc.1", "v2.0", "v2.1.0-rc.1", id="prerelease-full-precision"),
        pytest.param("v1.2.4+build.5", "v1.2.3", "v1.2.4+build.5", id="build-kept"),
    ],
)
def test_format_like(new: str, template: str, expected: str) -> None:
    assert format_like(_v(new), _v(template)) == expected


def test_format_like_falls_back_to_an_existing_tag() -> None:
    tags = {"v2.0", "v2.1.0"}
    assert format_like(_v("v2.1.0"), _v("v2.0"), existing=tags) == "v2.1.0"
    assert format_like(_v("v2.1.0"), _v("v2.0"), existing={"v2.1", *tags}) == "v2.1"


MONO_TAGS = [
    "dns-v1.2.3",
    "dns-v1.2.4",
    "dns-v1.3.0",
    "dns-v2.0.0",
    "api-v1.0.0",
    "api-v9.0.0",
    "v5.0.0",
    "dns-api-v7.0.0",
]


@pytest.mark.parametrize(
    ("current", "tags", "in_major", "major"),
    [
        pytest.param("dns-v1.2.3", MONO_TAGS, "dns-v1.3.0", "dns-v2.0.0", id="prefix-dns"),
        pytest.param("api-v1.0.0", MONO_TAGS, None, "api-v9.0.0", id="prefix-api"),
        pytest.param("dns-api-v7.0.0", MONO_TAGS, None, None, id="prefix-overlapping-name"),
        pytest.param("v4.0.0", MONO_TAGS, None, "v5.0.0", id="no-prefix-ignores-prefixed"),
        pytest.param(
            "dns/v1.0.0",
            ["dns/v1.1.0", "dns-v1.5.0"],
            "dns/v1.1.0",
            None,
            id="separator-is-part-of-prefix",
        ),
        pytest.param(
            "v1.4.2",
            ["v1.4.3", "v1.5.0", "v2.0.0", "v2.3.1", "v3.0.0-rc.1", "v1.4.1"],
            "v1.5.0",
            "v2.3.1",
            id="major-separated-from-minor-patch",
        ),
        pytest.param(
            "v1.2.3",
            ["v1.2.4-rc.1", "v1.3.0-beta.1", "v1.2.4"],
            "v1.2.4",
            None,
            id="release-skips-prereleases",
        ),
        pytest.param(
            "v1.2.3", ["v1.2.4-rc.1", "v2.0.0-rc.1"], None, None, id="only-prereleases-newer"
        ),
        pytest.param(
            "v2.0.0-rc.1",
            ["v2.0.0-rc.2", "v2.0.0-rc.3", "v2.0.1-rc.1", "v1.9.0"],
            "v2.0.0-rc.3",
            None,
            id="prerelease-to-newer-prerelease-same-core",
        ),
        pytest.param(
            "v2.0.0-rc.1", ["v2.0.0-rc.2", "v2.0.0"], "v2.0.0", None, id="prerelease-to-final"
        ),
        pytest.param(
            "v2.0.0-rc.1",
            ["v2.0.0-rc.2", "v2.1.0"],
            "v2.1.0",
            None,
            id="prerelease-to-later-release",
        ),
        pytest.param(
            "v2.0.0-rc.1",
            ["v2.0.0-rc.2", "v3.0.0-rc.1"],
            "v2.0.0-rc.2",
            None,
            id="other-core-prerelease-not-candidate",
        ),
        pytest.param("v1.5.0", ["v1.4.0", "v1.5.0"], None, None, id="up-to-date"),
        pytest.param("v2.0", ["v2.0.0", "v2.1.0"], "v2.1.0", None, id="two-component-current"),
        pytest.param("v2.0", ["v2.1.0", "v2.1"], "v2.1", None, id="tie-prefers-current-style"),
        pytest.param("1.0.0", ["v1.1.0", "1.1.0"], "1.1.0", None, id="tie-prefers-current-v-style"),
        pytest.param(
            "v1.0.0",
            ["latest", "main", "v1.1.0", "nightly-2024-01-05", "v1.2"],
            "v1.2",
            None,
            id="non-version-tags-ignored",
        ),
        pytest.param("v0.4.0", ["v0.4.1", "v0.5.0", "v1.0.0"], "v0.5.0", "v1.0.0", id="zero-major"),
    ],
)
def test_pick_upgrades(
    current: str, tags: list[str], in_major: str | None, major: str | None
) -> None:
    result = pick_upgrades(current, tags)
    assert isinstance(result, Upgrade), result
    assert result.current.text == current
    assert (result.latest_in_major.text if result.latest_in_major else None) == in_major
    assert (result.latest_major.text if result.latest_major else None) == major
    assert result.up_to_date == (in_major is None and major is None)


@pytest.mark.parametrize(
    ("current", "tags", "reason"),
    [
        pytest.param("main", ["v1.0.0"], "branch", id="branch-main"),
        pytest.param("feature/new-disks", ["v1.0.0"], "branch", id="branch-feature"),
        pytest.param("develop", ["v1.0.0"], "branch", id="branch-develop"),
        pytest.param("my-branch", ["v1.0.0"], "branch name", id="branch-other"),
        pytest.param("2024-01-05", ["v1.0.0"], "date", id="date-dashes"),
        pytest.param("20240105", ["v1.0.0"], "date", id="date-compact"),
        pytest.param("release-2024-01-05", ["v1.0.0"], "date", id="date-prefixed"),
        pytest.param(OLD_SHA, ["v1.0.0"], "commit SHA", id="full-sha"),
        pytest.param("a1b2c3d", ["v1.0.0"], "abbreviated commit SHA", id="short-sha"),
        pytest.param("v1.2.3.4", ["v1.0.0"], "not a semantic version", id="four-components"),
        pytest.param(None, ["v1.0.0"], "no ?ref=", id="unpinned"),
        pytest.param(
            "dns-v1.0.0", ["api-v1.0.0", "v2.0.0"], "prefix 'dns-'", id="no-tag-with-prefix"
        ),
        pytest.param("v1.0.0", [], "none of the 0 available tags", id="no-tags"),
    ],
)
def test_pick_upgrades_skips_with_reason(current: str | None, tags: list[str], reason: str) -> None:
    result = pick_upgrades(current, tags)
    assert isinstance(result, Skip), result
    assert result.ref == current
    assert reason in result.reason


# --------------------------------------------------------------------------- SHA pins


SHA_CASES = [
    pytest.param(
        unit(f'source = "{PROXMOX}?ref={OLD_SHA}" # v1.2.3'),
        unit(f'source = "{PROXMOX}?ref={NEW_SHA}" # v1.3.0'),
        id="hash-comment",
    ),
    pytest.param(
        unit(
            f'source = "{PROXMOX}//modules/vm?ref={OLD_SHA}&depth=1"  # tag=v1.2.3 (renovate)',
            eol="\r\n",
        ),
        unit(
            f'source = "{PROXMOX}//modules/vm?ref={NEW_SHA}&depth=1"  # tag=v1.3.0 (renovate)',
            eol="\r\n",
        ),
        id="crlf-renovate-style",
    ),
    pytest.param(
        f'terraform {{ source = "{PROXMOX}?ref={OLD_SHA}" }} // v1.2.3\n',
        f'terraform {{ source = "{PROXMOX}?ref={NEW_SHA}" }} // v1.3.0\n',
        id="one-line-block-slash-comment",
    ),
]


@pytest.mark.parametrize(("hcl", "expected"), SHA_CASES)
def test_sha_pin_with_version_comment(hcl: str, expected: str) -> None:
    [line] = find_source_lines(hcl)
    assert line.pinned_by_sha and line.ref == OLD_SHA
    assert line.comment_version == "v1.2.3"
    assert line.current_ref == "v1.2.3"
    upgrade = pick_upgrades(line.current_ref, ["v1.2.3", "v1.3.0"])
    assert isinstance(upgrade, Upgrade) and upgrade.latest_in_major is not None
    new_ref = format_like(upgrade.latest_in_major, upgrade.current)
    assert bump_text(hcl, "v1.2.3", new_ref, new_sha_comment=NEW_SHA) == expected
    identity = f"{GX}/platform-modules/terraform-proxmox"
    assert bump_text(hcl, "v1.2.3", new_ref, identity=identity, new_sha_comment=NEW_SHA) == expected


def test_sha_pin_needs_the_new_sha() -> None:
    hcl = unit(f'source = "{PROXMOX}?ref={OLD_SHA}" # v1.2.3')
    with pytest.raises(ToolingError, match=r"commit SHA of v1\.3\.0"):
        bump_text(hcl, "v1.2.3", "v1.3.0")
    with pytest.raises(ToolingError, match="40-hex"):
        bump_text(hcl, "v1.2.3", "v1.3.0", new_sha_comment="abc123")


def test_sha_pin_without_comment_is_a_skip_and_bumps_by_sha() -> None:
    hcl = unit(f'source = "{PROXMOX}?ref={OLD_SHA}" # pinned by hand')
    [line] = find_source_lines(hcl)
    assert line.comment_version is None and line.current_ref == OLD_SHA
    skip = pick_upgrades(line.current_ref, ["v1.0.0"])
    assert isinstance(skip, Skip) and "'# vX.Y.Z' comment" in skip.reason
    assert bump_text(hcl, OLD_SHA, NEW_SHA) == hcl.replace(OLD_SHA, NEW_SHA)


def test_version_comment_on_a_tag_line_is_not_a_sha_pin() -> None:
    hcl = unit(f'source = "{PROXMOX}?ref=v1.1.0" # v1.1.0')
    [line] = find_source_lines(hcl)
    assert not line.pinned_by_sha and line.comment_version is None
    assert bump_text(hcl, "v1.1.0", "v1.2.0", new_sha_comment=NEW_SHA) == unit(
        f'source = "{PROXMOX}?ref=v1.2.0" # v1.1.0'
    )


def test_is_commit_sha() -> None:
    assert is_commit_sha(OLD_SHA) and is_commit_sha(OLD_SHA.upper())
    assert not is_commit_sha(OLD_SHA[:39])
    assert not is_commit_sha(None) and not is_commit_sha("v1.0.0")


# --------------------------------------------------------------------------- locals


LOCALS_FULL = f"""locals {{
  # the module and its version, in one place
  vm_source = "{PROXMOX}//modules/vm?ref=v1.1.0" # bumped by the tool
  other     = "unrelated v1.1.0"
}}

terraform {{
  source = local.vm_source
}}
"""

LOCALS_SPLIT = f"""locals {{
  repo    = "{PROXMOX}"
  version = "v1.1.0"
  src     = "${{local.repo}}//modules/vm?ref=${{local.version}}&depth=1"
}}

terraform {{
  source = "${{local.src}}"
}}
"""

LOCALS_ALIAS = f"""locals {{
  pinned = "{PROXMOX}?ref=v1.1.0"
  alias  = local.pinned
}}
terraform {{
  source = local.alias
}}
"""


@pytest.mark.parametrize(
    ("hcl", "local", "expected"),
    [
        pytest.param(
            LOCALS_FULL,
            "vm_source",
            LOCALS_FULL.replace("vm?ref=v1.1.0", "vm?ref=v1.2.0"),
            id="whole-source-in-local",
        ),
        pytest.param(
            LOCALS_SPLIT,
            "src",
            LOCALS_SPLIT.replace('version = "v1.1.0"', 'version = "v1.2.0"'),
            id="ref-in-its-own-local",
        ),
        pytest.param(
            LOCALS_ALIAS,
            "alias",
            LOCALS_ALIAS.replace("?ref=v1.1.0", "?ref=v1.2.0"),
            id="local-alias",
        ),
    ],
)
def test_locals_resolution(hcl: str, local: str, expected: str) -> None:
    resolved = resolve_local_source(hcl, local)
    assert isinstance(resolved, ResolvedSource), resolved
    assert resolved.ref == "v1.1.0"
    assert hcl[resolved.ref_span[0] : resolved.ref_span[1]] == "v1.1.0"
    assert resolved.source is not None
    assert resolved.source.identity == f"{GX}/platform-modules/terraform-proxmox"

    [line] = find_source_lines(hcl)
    assert line.local == local
    assert line.ref_span == resolved.ref_span
    assert line.source is not None and line.source.identity == resolved.source.identity
    identity = f"{GX}/platform-modules/terraform-proxmox"
    assert bump_text(hcl, "v1.1.0", "v1.2.0", identity=identity) == expected


def test_local_shared_by_two_sources_is_edited_once() -> None:
    hcl = LOCALS_FULL + "\nterraform {\n  source = local.vm_source\n}\n"
    assert len(find_source_lines(hcl)) == 2
    assert bump_text(hcl, "v1.1.0", "v1.2.0") == hcl.replace("vm?ref=v1.1.0", "vm?ref=v1.2.0")


@pytest.mark.parametrize(
    ("hcl", "local", "reason"),
    [
        pytest.param(
            "locals {\n  version = include.root.locals.proxmox_version\n"
            f'  src = "{PROXMOX}?ref=${{local.version}}"\n}}\n',
            "src",
            "local.version is the expression `include.root.locals.proxmox_version`",
            id="ref-from-include",
        ),
        pytest.param(
            f'locals {{\n  src = "{PROXMOX}?ref=${{get_env("PROXMOX_REF", "v1.0.0")}}"\n}}\n',
            "src",
            'get_env("PROXMOX_REF", "v1.0.0")',
            id="ref-from-function",
        ),
        pytest.param(
            'locals {\n  src = format("%s?ref=%s", local.base, local.v)\n}\n',
            "src",
            "local.src is the expression `format(",
            id="source-from-format",
        ),
        pytest.param(
            f'locals {{\n  src = "{PROXMOX}?ref=v${{local.major}}.0.0"\n  major = "1"\n}}\n',
            "src",
            "split across several strings",
            id="ref-assembled-from-pieces",
        ),
        pytest.param(
            "locals {\n  a = local.b\n  b = local.a\n}\n", "a", "refers to itself", id="cycle"
        ),
        pytest.param(
            'locals {\n  a = "x"\n}\n', "missing", "not defined in this file", id="missing-local"
        ),
        pytest.param(f'locals {{\n  src = "{PROXMOX}"\n}}\n', "src", "not pinned", id="unpinned"),
    ],
)
def test_unresolvable_local(hcl: str, local: str, reason: str) -> None:
    result = resolve_local_source(hcl, local)
    assert isinstance(result, Unresolvable), result
    assert reason in result.reason


def test_unresolvable_source_line_is_reported_not_bumped() -> None:
    hcl = (
        "locals {\n  v = include.root.locals.v\n}\n"
        'terraform {\n  source = "git::https://h.example/o/r.git?ref=${local.v}"\n}\n'
    )
    [line] = find_source_lines(hcl)
    assert line.interpolated and line.ref is None and line.ref_span is None
    assert line.unresolved is not None and "include.root.locals.v" in line.unresolved
    assert [s.text for s in line.segments] == ["git::https://h.example/o/r.git?ref="]
    assert bump_text(hcl, "v1.0.0", "v2.0.0") == hcl


def test_function_source_is_reported() -> None:
    hcl = 'terraform {\n  source = format("%s?ref=%s", local.base, "v1")\n}\n'
    [line] = find_source_lines(hcl)
    assert line.value == 'format("%s?ref=%s", local.base, "v1")'
    assert not line.interpolated and line.source is None and line.segments == ()
    assert line.unresolved is not None and "not a string literal" in line.unresolved


# --------------------------------------------------------------------------- scanner


NOISY_UNIT = f"""# terraform {{ source = "{PROXMOX}?ref=v0.0.1" }}
/* terraform {{
  source = "{PROXMOX}?ref=v0.0.2"
}} */
generate "provider" {{
  path     = "provider.tf"
  contents = <<EOF
terraform {{
  source = "{PROXMOX}?ref=v0.0.3"
}}
EOF
}}
dependency "net" {{
  config_path = "../network"
  source      = "not a terraform block"
}}
inputs = {{
  terraform = {{ source = "{PROXMOX}?ref=v0.0.4" }}
  note      = "terraform {{ source = \\"x\\" }}"
}}
terraform {{
  extra_arguments "vars" {{
    commands = ["plan"]
    source   = "nested block, not the unit's source"
  }}
  source = "{PROXMOX}//modules/vm?ref=v1.1.0"

  before_hook "x" {{
    commands = ["apply"]
    execute  = ["echo", "}}"]
  }}
}}
"""


def test_find_source_lines_only_in_terraform_blocks() -> None:
    lines = find_source_lines(NOISY_UNIT)
    assert [(sl.line, sl.ref) for sl in lines] == [(26, "v1.1.0")]
    expected = NOISY_UNIT.replace("vm?ref=v1.1.0", "vm?ref=v1.2.0")
    assert bump_text(NOISY_UNIT, "v1.1.0", "v1.2.0") == expected
    for old in ("v0.0.1", "v0.0.2", "v0.0.3", "v0.0.4"):
        assert bump_text(NOISY_UNIT, old, "v9.0.0") == NOISY_UNIT


def test_segments_and_value_span() -> None:
    hcl = LOCALS_BASE + unit('source = "${local.base}/terraform-talos.git?ref=v1.0.0"')
    [line] = find_source_lines(hcl)
    assert line.interpolated and line.local is None
    assert line.value == "${local.base}/terraform-talos.git?ref=v1.0.0"
    assert hcl[line.value_span[0] : line.value_span[1]] == line.value
    [segment] = line.segments
    assert segment.text == "/terraform-talos.git?ref=v1.0.0"
    assert hcl[segment.start : segment.end] == segment.text


@pytest.mark.parametrize(
    "hcl",
    [
        pytest.param(
            'terraform {\n  source = "git::https://h/o/r.git?ref=v1\n}\n', id="unterminated-string"
        ),
        pytest.param("terraform {\n  /* never closed\n}\n", id="unterminated-comment"),
        pytest.param("locals {\n  x = <<EOF\nno end\n}\n", id="unterminated-heredoc"),
    ],
)
def test_malformed_hcl_raises(hcl: str) -> None:
    with pytest.raises(ToolingError, match="fix the HCL first"):
        find_source_lines(hcl)


@pytest.mark.parametrize("bad", ["", "v1 .0", 'v1"', "v1&x=y", "-v1"])
def test_bump_refuses_unsafe_refs(bad: str) -> None:
    with pytest.raises(ToolingError, match="refusing to write ref"):
        bump_text(unit(f'source = "{PROXMOX}?ref=v1.1.0"'), "v1.1.0", bad)


def test_bump_keeps_every_other_byte() -> None:
    line = f'source = "{PROXMOX}?ref=v1.1.0"\t# tab before comment'
    hcl = "\ufeff" + unit(line, eol="\r\n") + "\r\n\r\n"
    out = bump_text(hcl, "v1.1.0", "v1.10.0")
    assert out == hcl.replace("?ref=v1.1.0", "?ref=v1.10.0")
    assert len(out) == len(hcl) + 1


def test_live_units_parse() -> None:
    units = sorted(LIVE.glob("**/terragrunt.hcl"))
    if not units:
        pytest.skip("no live units in this checkout")
    for path in units:
        text = path.read_bytes().decode()
        lines = find_source_lines(text)
        assert lines, path
        for line in lines:
            assert line.source is not None and line.source.kind == "git", path
            current = line.current_ref
            assert current is not None and parse_version(current) is not None, path
            assert isinstance(pick_upgrades(current, [current]), Upgrade)
            assert "?ref=v99.0.0" in bump_text(text, current, "v99.0.0"), path


def test_module_source_is_frozen() -> None:
    src = parse_source(f"{PROXMOX}?ref=v1.1.0")
    assert isinstance(src, ModuleSource)
    with pytest.raises(AttributeError):
        src.ref = "v2"  # type: ignore[misc]


def test_offsets_are_characters_when_the_file_holds_non_ascii_text() -> None:
    # tree-sitter reports byte offsets; an edit after "ü" or "☕" must not shift
    hcl = "# Zürich café ☕\n" + unit(f'source = "{PROXMOX}?ref={OLD_SHA}" # née v1.2.3')
    [line] = find_source_lines(hcl)
    assert line.ref_span is not None and hcl[line.ref_span[0] : line.ref_span[1]] == OLD_SHA
    assert line.comment_version == "v1.2.3"
    out = bump_text(hcl, "v1.2.3", "v1.3.0", new_sha_comment=NEW_SHA)
    assert out == hcl.replace(OLD_SHA, NEW_SHA).replace("née v1.2.3", "née v1.3.0")


def test_a_labelled_terraform_block_is_not_the_units_source() -> None:
    hcl = f'terraform "x" {{\n  source = "{PROXMOX}?ref=v1.1.0"\n}}\n'
    assert find_source_lines(hcl) == []
    assert bump_text(hcl, "v1.1.0", "v1.2.0") == hcl


@pytest.mark.parametrize(
    "ref", ["main", "development", "release", "Release", "feature/x", "hotfix/y"]
)
def test_one_branch_classifier_for_check_and_bump(ref: str) -> None:
    assert is_branch_name(ref)
    skip = pick_upgrades(ref, ["v1.0.0"])
    assert isinstance(skip, Skip) and "is a branch" in skip.reason


@pytest.mark.parametrize("ref", ["v1.0.0", "dns-v1.2.3", "releases-2", "mainline"])
def test_versions_and_other_names_are_not_branches(ref: str) -> None:
    assert not is_branch_name(ref)
