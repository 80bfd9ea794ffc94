"""The pure parts of the bump tooling, as tables: no process, no network.

tooling.core.bump (inventory, selection, plans, edits, changelog, texts),
tooling.io.tags (ls-remote parsing, URLs, token scoping) and the small parsers
of tooling.commands.bump.
"""

from __future__ import annotations

from typing import Any

import pytest

from tooling.core.bump import changelog, texts
from tooling.core.bump.changelog import Changelog
from tooling.core.bump.pins import (
    Pin,
    UnitText,
    inventory,
    match_units,
    nearest_tags,
    select_module,
    select_pins,
    split_globs,
)
from tooling.core.bump.plans import (
    BumpPlan,
    apply_changes,
    branch_name,
    changed_lines,
    plan_all,
    plan_bump,
)
from tooling.engine.bump.pull_requests import dirty_message
from tooling.errors import ToolingError
from tooling.io import tags
from tooling.io.forge import github_repository
from tooling.io.git import Identity, parse_ident, parse_tag_messages
from tooling.io.tags import Token
from tooling.model.sources import RepoTags, Tag, parse_source, remote_url
from tooling.model.units import Change

SHA_A = "a" * 40
SHA_B = "b" * 40
HOST = "https://git.example.com/platform-modules"


def _unit(path: str, source_line: str, *, extra: str = "", tier: str = "cloud") -> UnitText:
    text = f"{extra}terraform {{\n  {source_line}\n}}\n"
    return UnitText(path, tier, ((f"{path}/terragrunt.hcl", text),))


def _pin(unit: str, source: str, *, tier: str = "cloud") -> Pin:
    found = inventory([_unit(unit, f'source = "{source}"', tier=tier)])
    assert found.pins, found.skipped
    return found.pins[0]


def _repo(*names: str, annotated: bool = True) -> RepoTags:
    return RepoTags("u", {n: Tag(n, f"{i:040x}", annotated) for i, n in enumerate(names, 1)})


# --------------------------------------------------------------------------- tags.py


def test_parse_ls_remote_peels_annotated_tags() -> None:
    text = (
        f"{SHA_A}\trefs/tags/v1.0.0\n"
        f"{SHA_B}\trefs/tags/v1.0.0^{{}}\n"
        f"{'c' * 40}\trefs/tags/v1.1.0\n"
        f"{'d' * 40}\trefs/heads/main\n"
    )
    assert tags.parse_ls_remote(text) == {
        "v1.0.0": Tag("v1.0.0", SHA_B, True),
        "v1.1.0": Tag("v1.1.0", "c" * 40, False),
    }


@pytest.mark.parametrize(
    ("source", "url"),
    [
        (
            f"git::{HOST}/terraform-proxmox.git//modules/vm?ref=v1.1.0",
            f"{HOST}/terraform-proxmox.git",
        ),
        (f"git::{HOST}/terraform-proxmox.git?ref=v1.1.0&depth=1", f"{HOST}/terraform-proxmox.git"),
        (f"{HOST}/terraform-proxmox.git?depth=1&ref=v1", f"{HOST}/terraform-proxmox.git"),
        (
            "git::ssh://git@git.example.com:2222/org/repo.git//sub?ref=v1",
            "ssh://git@git.example.com:2222/org/repo.git",
        ),
        (
            "git@gitlab.internal:group/sub/repo.git//mod?ref=dns-v1.2.3",
            "git@gitlab.internal:group/sub/repo.git",
        ),
        ("git::git@github.com:org/repo.git?ref=v1", "git@github.com:org/repo.git"),
        ("github.com/org/repo//modules/x?ref=v1.0.0", "https://github.com/org/repo.git"),
    ],
)
def test_remote_url(source: str, url: str) -> None:
    assert remote_url(parse_source(source)) == url


@pytest.mark.parametrize(
    "source", ["tfr:///ns/name/aws?version=1.0.0", "../modules/x", "s3::https://b/k.zip"]
)
def test_remote_url_is_none_for_other_sources(source: str) -> None:
    assert remote_url(parse_source(source)) is None


TOKEN = Token("tok_value", "github.com")
# base64("x-access-token:tok_value")
HEADER = "Authorization: Basic eC1hY2Nlc3MtdG9rZW46dG9rX3ZhbHVl"


def _auth(origin: str) -> list[tuple[str, str]]:
    """A reset of the headers inherited for ``origin``, then ours."""
    return [(f"http.{origin}.extraHeader", ""), (f"http.{origin}.extraHeader", HEADER)]


@pytest.mark.parametrize(
    ("url", "rewrites", "expected"),
    [
        ("https://github.com/org/repo.git", (), _auth("https://github.com/")),
        ("https://GitHub.com/org/repo.git", (), _auth("https://github.com/")),
        (
            "https://github.com:8443/org/repo.git",
            (),
            _auth("https://github.com:8443/"),
        ),
        ("http://github.com/org/repo.git", (), []),  # never in clear text
        ("https://gitlab.com/org/repo.git", (), []),  # another host
        ("https://github.com.evil.example/org/repo.git", (), []),
        ("git@github.com:org/repo.git", (), []),  # ssh: the user's keys
        ("ssh://git@github.com/org/repo.git", (), []),
        # rewritten to a local mirror: no header; rewritten onto the token's host: header
        ("https://github.com/org/repo.git", (("https://github.com/", "file:///mirror/"),), []),
        (
            "https://git.example.com/org/repo.git",
            (("https://git.example.com/", "https://github.com/acme-"),),
            _auth("https://github.com/"),
        ),
    ],
)
def test_auth_config_only_for_https_on_the_token_host(
    url: str, rewrites: tuple[tuple[str, str], ...], expected: list[tuple[str, str]]
) -> None:
    assert tags.auth_config(url, TOKEN, rewrites) == expected
    assert tags.auth_config(url, None, rewrites) == []


def test_effective_url_longest_prefix_wins() -> None:
    rewrites = (("https://h/", "file:///a/"), ("https://h/org/", "file:///b/"))
    assert tags.effective_url("https://h/org/r.git", rewrites) == "file:///b/r.git"
    assert tags.effective_url("https://h/x/r.git", rewrites) == "file:///a/x/r.git"
    assert tags.effective_url("ssh://h/x", rewrites) == "ssh://h/x"


def test_with_git_config_appends_after_existing_entries_and_rewrites_round_trip() -> None:
    env = {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "url.file:///m/.insteadOf",
        "GIT_CONFIG_VALUE_0": "https://h/",
    }
    out = tags.with_git_config(env, [("http.https://h/.extraHeader", "X: y")])
    assert out["GIT_CONFIG_COUNT"] == "2"
    assert (out["GIT_CONFIG_KEY_1"], out["GIT_CONFIG_VALUE_1"]) == (
        "http.https://h/.extraHeader",
        "X: y",
    )
    assert tags.rewrites_from_env(out) == (("https://h/", "file:///m/"),)
    assert tags.with_git_config(env, []) == env


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, None),
        ({"GITHUB_TOKEN": "g"}, ("g", "github.com")),
        ({"GH_TOKEN": "h"}, ("h", "github.com")),
        ({"IAC_GIT_TOKEN": "i", "GITHUB_TOKEN": "g"}, ("i", "github.com")),
        (
            {"GITHUB_TOKEN": "g", "GITHUB_SERVER_URL": "https://ghe.corp.example"},
            ("g", "ghe.corp.example"),
        ),
        ({"IAC_GIT_TOKEN": "i", "IAC_GIT_TOKEN_HOST": "Git.Example.com"}, ("i", "git.example.com")),
    ],
)
def test_token_from_env(env: dict[str, str], expected: tuple[str, str] | None) -> None:
    token = tags.token_from_env(env)
    assert (None if token is None else (token.value, token.host)) == expected


def test_token_is_never_shown() -> None:
    token = Token("sekrit", "github.com")
    assert "sekrit" not in repr(token)
    assert token.redact("a sekrit b eC1hY2Nlc3MtdG9rZW46c2Vrcml0") == "a *** b ***"
    with pytest.raises(ToolingError) as err:
        tags.token_from_env({"IAC_GIT_TOKEN": "bad token"})
    assert "bad token" not in str(err.value)


# --------------------------------------------------------------------------- inventory


@pytest.mark.parametrize(
    ("line", "extra", "module", "current", "ref"),
    [
        (
            f'source = "git::{HOST}/terraform-proxmox.git//modules/vm?ref=v1.1.0"',
            "",
            "terraform-proxmox",
            "v1.1.0",
            "v1.1.0",
        ),
        (
            f'source="git::{HOST}/terraform-proxmox.git?ref=v1.1.0"',
            "",
            "terraform-proxmox",
            "v1.1.0",
            "v1.1.0",
        ),
        (
            'source = "git::ssh://git@git.example.com:2222/org/mod.git?ref=2.0"',
            "",
            "mod",
            "2.0",
            "2.0",
        ),
        (
            'source = "git@gitlab.internal:grp/mono.git//dns?depth=1&ref=dns-v1.2.3"',
            "",
            "mono",
            "dns-v1.2.3",
            "dns-v1.2.3",
        ),
        ('source = "github.com/org/mod//x?ref=v3"', "", "mod", "v3", "v3"),
        (f'source = "git::{HOST}/m.git?ref={SHA_A}" # v1.4.0', "", "m", "v1.4.0", SHA_A),
        (
            'source = "${local.base}//vm?ref=v1.0.0"',
            f'locals {{\n  base = "git::{HOST}/p.git"\n}}\n',
            "p",
            "v1.0.0",
            "v1.0.0",
        ),
        (
            "source = local.src",
            f'locals {{\n  src = "git::{HOST}/q.git?ref=v0.3.0"\n}}\n',
            "q",
            "v0.3.0",
            "v0.3.0",
        ),
    ],
)
def test_inventory_pins(line: str, extra: str, module: str, current: str, ref: str) -> None:
    inv = inventory([_unit("live/a/u", line, extra=extra)])
    assert inv.skipped == ()
    (pin,) = inv.pins
    assert (pin.module, pin.current.text, pin.ref, pin.unit) == (module, current, ref, "live/a/u")
    text = dict(_unit("live/a/u", line, extra=extra).files)["live/a/u/terragrunt.hcl"]
    assert text.splitlines()[pin.line - 1].count(ref) == 1
    assert text[pin.span[0] : pin.span[1]] == ref


@pytest.mark.parametrize(
    ("line", "extra", "reason"),
    [
        (f'source = "git::{HOST}/m.git?ref=main"', "", "branch"),
        (f'source = "git::{HOST}/m.git"', "", "no ?ref="),
        (f'source = "git::{HOST}/m.git?ref=20240105"', "", "date"),
        (f'source = "git::{HOST}/m.git?ref={SHA_A}"', "", "commit SHA with no version"),
        (
            'source = "tfr:///terraform-aws-modules/vpc/aws?version=5.0.0"',
            "",
            "tfr:// registry sources are not bumped",
        ),
        ('source = "../../modules/x"', "", "local module path"),
        ('source = "s3::https://bucket/mod.zip"', "", "not a versioned module source"),
        ('source = "${get_env("BASE")}?ref=v1.0.0"', "", "unresolvable"),
        (
            'source = "${local.base}?ref=v1"',
            'locals {\n  base = get_env("B", "x")\n}\n',
            "local.base",
        ),
    ],
)
def test_inventory_skips_with_a_reason(line: str, extra: str, reason: str) -> None:
    inv = inventory([_unit("live/a/u", line, extra=extra)])
    assert inv.pins == ()
    (skipped,) = inv.skipped
    assert reason in skipped.reason
    assert skipped.unit == "live/a/u"


def test_inventory_reads_one_line_blocks_and_keeps_them_byte_exact() -> None:
    text = f'terraform {{ source="git::{HOST}/m.git?ref=v1.0.0&depth=1" }}\n'
    unit = UnitText("live/a", "t", (("live/a/terragrunt.hcl", text),))
    (pin,) = inventory([unit]).pins
    assert (pin.line, pin.current.text) == (1, "v1.0.0")
    plan = plan_bump([pin], _repo("v1.0.0", "v1.1.0"), "v1.1.0")
    assert apply_changes({"live/a/terragrunt.hcl": text}, plan.changes) == {
        "live/a/terragrunt.hcl": text.replace("ref=v1.0.0", "ref=v1.1.0")
    }


def test_inventory_follows_an_included_file_and_reports_ambiguity() -> None:
    shared = f'terraform {{\n  source = "git::{HOST}/common.git?ref=v1.0.0"\n}}\n'
    unit = UnitText(
        "live/a/u",
        "cloud",
        (("live/a/u/terragrunt.hcl", "inputs = {}\n"), ("live/_common/x.hcl", shared)),
    )
    (pin,) = inventory([unit]).pins
    assert (pin.file, pin.line, pin.module) == ("live/_common/x.hcl", 2, "common")
    both = UnitText("live/a/u", "cloud", (*unit.files, ("live/_common/y.hcl", shared)))
    (skipped,) = inventory([both]).skipped
    assert "several included files" in skipped.reason
    own = UnitText(
        "live/a/u",
        "cloud",
        (("live/a/u/terragrunt.hcl", shared.replace("common", "own")), *unit.files[1:]),
    )
    assert inventory([own]).pins[0].module == "own"


# --------------------------------------------------------------------------- selection


@pytest.mark.parametrize(
    ("path", "patterns", "expected"),
    [
        ("live/cluster/vms", (), True),
        ("live/cluster/vms", ("live/cluster/*",), True),
        ("live/cluster/vms", ("live/cluster",), True),
        ("live/cluster/vms", ("live/cluster/",), True),
        ("live/clusterx/vms", ("live/cluster",), False),
        ("live/cloud/dns", ("live/cluster/*",), False),
        ("live/cloud/dns", ("live/cluster/*", "live/cloud/d*"), True),
        ("live/a/b/c", ("live/*/c",), True),  # * crosses /
        ("live/cloud/dns", ("live/cloud/dns",), True),
    ],
)
def test_match_units(path: str, patterns: tuple[str, ...], expected: bool) -> None:
    assert match_units(path, patterns) is expected


def test_split_globs() -> None:
    assert split_globs(" live/a/*, live/b ,,") == ("live/a/*", "live/b")
    assert split_globs(None) == ()


def test_select_module_by_name_url_or_identity() -> None:
    pins = [
        _pin("live/a", f"git::{HOST}/terraform-proxmox.git//vm?ref=v1.0.0"),
        _pin("live/b", "git@git.example.com:platform-modules/terraform-proxmox.git?ref=v1.1.0"),
        _pin("live/c", f"git::{HOST}/terraform-talos.git?ref=v1.0.0"),
    ]
    for query in (
        "terraform-proxmox",
        f"{HOST}/terraform-proxmox.git",
        "git@git.example.com:platform-modules/terraform-proxmox.git",
        "git.example.com/platform-modules/terraform-proxmox",
    ):
        assert [p.unit for p in select_module(pins, query)] == ["live/a", "live/b"]
    with pytest.raises(ToolingError, match="pinned modules: terraform-proxmox, terraform-talos"):
        select_module(pins, "terraform-nope")
    twins = [*pins, _pin("live/d", "git::https://github.com/other/terraform-talos.git?ref=v1.0.0")]
    with pytest.raises(ToolingError, match="several repositories") as err:
        select_module(twins, "terraform-talos")
    assert err.value.code == 2


def test_select_pins_keeps_units_sharing_a_literal() -> None:
    shared = ("live/_c.hcl", f'terraform {{\n  source = "git::{HOST}/c.git?ref=v1.0.0"\n}}\n')
    units = [
        UnitText("live/a/x", "a", (("live/a/x/terragrunt.hcl", "inputs = {}\n"), shared)),
        UnitText("live/b/y", "b", (("live/b/y/terragrunt.hcl", "inputs = {}\n"), shared)),
    ]
    pins = inventory(units).pins
    assert [p.unit for p in select_pins(pins, ("live/a/*",))] == ["live/a/x", "live/b/y"]


@pytest.mark.parametrize(
    ("requested", "available", "expected"),
    [
        (
            "v1.3.0",
            ["v1.0.0", "v1.1.0", "v1.2.0", "v2.0.0", "v2.1.0", "v3.0.0"],
            ["v1.1.0", "v1.2.0", "v2.0.0", "v2.1.0", "v3.0.0"],
        ),
        ("v9.0.0", ["v1.0.0", "v1.1.0"], ["v1.0.0", "v1.1.0"]),
        (
            "dns-v1.5.0",
            ["dns-v1.0.0", "api-v1.4.0", "dns-v1.4.0", "dns-v2.0.0"],
            ["dns-v1.0.0", "dns-v1.4.0", "dns-v2.0.0"],
        ),
        ("main", ["v1.0.0", "v2.0.0", "latest"], ["v1.0.0", "v2.0.0"]),
    ],
)
def test_nearest_tags(requested: str, available: list[str], expected: list[str]) -> None:
    assert nearest_tags(requested, available) == expected


# --------------------------------------------------------------------------- plans


def test_plan_bump_refuses_a_missing_tag_and_a_wrong_prefix() -> None:
    pins = [_pin("live/a", f"git::{HOST}/m.git?ref=v1.0.0")]
    with pytest.raises(
        ToolingError, match=r"has no tag 'v1\.3\.0'; the nearest tags are: v1\.0\.0, v1\.2\.0"
    ):
        plan_bump(pins, _repo("v1.0.0", "v1.2.0"), "v1.3.0")
    with pytest.raises(ToolingError, match="prefix"):
        plan_bump(pins, _repo("v1.0.0", "dns-v1.2.0"), "dns-v1.2.0")


def test_plan_bump_moves_every_pin_not_already_there() -> None:
    pins = [
        _pin("live/a", f"git::{HOST}/m.git?ref=v1.0.0"),
        _pin("live/b", f"git::{HOST}/m.git?ref=v1.2"),
        _pin("live/c", f"git::{HOST}/m.git?ref=v2.0.0"),
    ]
    plan = plan_bump(pins, _repo("v1.0.0", "v1.2.0", "v2.0.0"), "v1.2.0")
    assert [(c.pin.unit, c.old, c.new_version, c.is_downgrade) for c in plan.changes] == [
        ("live/a", "v1.0.0", "v1.2.0", False),
        ("live/c", "v2.0.0", "v1.2.0", True),
    ]
    assert plan.branch == "bump/m-v1.2.0" and not plan.major


def test_plan_all_separates_minor_and_major_per_stream() -> None:
    pins = [
        _pin("live/a", f"git::{HOST}/m.git?ref=v1.0.0"),
        _pin("live/b", f"git::{HOST}/m.git?ref=v1.1.0"),
        _pin("live/c", f"git::{HOST}/m.git?ref=v2.0.0"),
        _pin("live/d", f"git::{HOST}/mono.git//dns?ref=dns-v1.0.0"),
        _pin("live/e", f"git::{HOST}/ok.git?ref=v1.0.0"),
    ]
    repos = {
        "git.example.com/platform-modules/m": _repo(
            "v1.0.0", "v1.1.0", "v1.2.0", "v2.0.0", "v2.1.0-rc.1", "v2.1.0", "v3.0.0"
        ),
        "git.example.com/platform-modules/mono": _repo("dns-v1.0.0", "dns-v1.1.0", "api-v9.0.0"),
        "git.example.com/platform-modules/ok": _repo("v1.0.0"),
    }
    plans = {(p.module, p.target.name): p for p in plan_all(pins, repos)}
    assert set(plans) == {("m", "v1.2.0"), ("m", "v2.1.0"), ("m", "v3.0.0"), ("mono", "dns-v1.1.0")}
    assert [c.pin.unit for c in plans[("m", "v1.2.0")].changes] == ["live/a", "live/b"]
    assert [c.pin.unit for c in plans[("m", "v2.1.0")].changes] == ["live/c"]
    assert [c.pin.unit for c in plans[("m", "v3.0.0")].changes] == ["live/a", "live/b", "live/c"]
    assert {k: p.major for k, p in plans.items()} == {
        ("m", "v1.2.0"): False,
        ("m", "v2.1.0"): False,
        ("m", "v3.0.0"): True,
        ("mono", "dns-v1.1.0"): False,
    }
    assert plan_all(pins, {}) == []  # unqueried repositories are left out


def test_plan_all_keeps_the_pins_style() -> None:
    pins = [_pin("live/a", f"git::{HOST}/m.git?ref=v2.0")]
    (plan,) = plan_all(
        pins, {"git.example.com/platform-modules/m": _repo("v2.0", "v2.1.0", "v2.1")}
    )
    assert plan.changes[0].new_version == "v2.1"


@pytest.mark.parametrize(
    ("module", "version", "branch"),
    [
        ("terraform-proxmox", "v1.2.0", "bump/terraform-proxmox-v1.2.0"),
        ("mono", "dns/v1.2.3", "bump/mono-dns/v1.2.3"),
        ("m", "v1..2", "bump/m-v1-2"),
        ("m", "v1 2", "bump/m-v1-2"),
    ],
)
def test_branch_name(module: str, version: str, branch: str) -> None:
    assert branch_name(module, version) == branch


# --------------------------------------------------------------------------- edits


def test_apply_changes_edits_one_line_per_pin_and_keeps_every_other_byte() -> None:
    text = (
        "# header\r\n"
        "terraform {\r\n"
        f'  source="git::{HOST}/m.git//sub?depth=1&ref=v1.0.0"   # pinned\r\n'
        "}\r\n"
    )
    unit = UnitText("live/a", "t", (("live/a/terragrunt.hcl", text),))
    pin = inventory([unit]).pins[0]
    plan = plan_bump([pin], _repo("v1.0.0", "v1.1.0"), "v1.1.0")
    out = apply_changes({"live/a/terragrunt.hcl": text}, plan.changes)
    assert out == {"live/a/terragrunt.hcl": text.replace("ref=v1.0.0", "ref=v1.1.0")}
    assert changed_lines(text, out["live/a/terragrunt.hcl"]) == [3]


def test_apply_changes_moves_a_sha_pin_and_its_comment() -> None:
    text = f'terraform {{\n  source = "git::{HOST}/m.git?ref={SHA_A}" # v1.0.0\n}}\n'
    unit = UnitText("live/a", "t", (("live/a/terragrunt.hcl", text),))
    pin = inventory([unit]).pins[0]
    repo = RepoTags(
        "u", {"v1.0.0": Tag("v1.0.0", SHA_A, True), "v1.1.0": Tag("v1.1.0", SHA_B, True)}
    )
    plan = plan_bump([pin], repo, "v1.1.0")
    new = apply_changes({"live/a/terragrunt.hcl": text}, plan.changes)["live/a/terragrunt.hcl"]
    assert new == text.replace(SHA_A, SHA_B).replace("# v1.0.0", "# v1.1.0")


def test_apply_changes_refuses_a_file_that_moved_on() -> None:
    text = f'terraform {{\n  source = "git::{HOST}/m.git?ref=v1.0.0"\n}}\n'
    unit = UnitText("live/a", "t", (("live/a/terragrunt.hcl", text),))
    plan = plan_bump(inventory([unit]).pins, _repo("v1.0.0", "v1.1.0"), "v1.1.0")
    with pytest.raises(ToolingError, match="changed lines none"):
        apply_changes({"live/a/terragrunt.hcl": text.replace("v1.0.0", "v1.0.1")}, plan.changes)
    with pytest.raises(ToolingError, match="not found"):
        apply_changes({}, plan.changes)


# --------------------------------------------------------------------------- changelog


KEEP_A_CHANGELOG = """# Changelog

Intro text.

## [Unreleased]

- nothing yet

## [2.0.0] - 2025-10-14

### Changed

- **BREAKING:** renamed things.

## [1.2.0] - 2025-07-01

- faster

```
## 9.9.9 inside a code fence is not a heading
```

## v1.1.0

- older

[2.0.0]: https://example.com/compare/v1.2.0...v2.0.0
[1.2.0]: https://example.com/compare/v1.1.0...v1.2.0
"""


def _v(text: str) -> Any:
    from tooling.model.versions import parse_version

    return parse_version(text)


def test_changelog_sections_between_two_versions() -> None:
    out = changelog.changelog_sections(KEEP_A_CHANGELOG, _v("v1.1.0"), _v("v2.0.0"))
    assert out is not None
    assert out.startswith("#### [2.0.0] - 2025-10-14\n\n##### Changed")
    assert "#### [1.2.0] - 2025-07-01" in out and "inside a code fence" in out
    assert "older" not in out and "Unreleased" not in out and "https://example.com" not in out
    only = changelog.changelog_sections(KEEP_A_CHANGELOG, _v("v1.2.0"), _v("v2.0.0"))
    assert only is not None and "[1.2.0]" not in only


def test_changelog_sections_need_the_new_version_and_ignore_prefixes() -> None:
    assert changelog.changelog_sections(KEEP_A_CHANGELOG, _v("v1.0.0"), _v("v2.1.0")) is None
    assert changelog.changelog_sections("no headings here", None, _v("v1.0.0")) is None
    mono = "## dns-v1.3.0\n\n- new\n\n## dns-v1.2.0\n\n- old\n"
    assert (
        changelog.changelog_sections(mono, _v("dns-v1.2.0"), _v("dns-v1.3.0"))
        == "#### dns-v1.3.0\n\n- new"
    )


def test_render_changelog_forms() -> None:
    tagged = changelog.render_changelog(
        Changelog(tag_messages=(("v1.1.0", "subject\n\nbody line"),))
    )
    assert tagged.splitlines()[2:] == ["- **v1.1.0**: subject", "  body line"]
    assert "- fix a bug" in changelog.render_changelog(Changelog(subjects=("fix a bug",)))
    file = changelog.render_changelog(
        Changelog(changelog="#### [1.1.0]", changelog_path="CHANGELOG.md at v1.1.0")
    )
    assert "<summary>CHANGELOG.md at v1.1.0</summary>" in file
    assert "cannot fetch" in changelog.render_changelog(Changelog(error="cannot fetch x"))
    long = changelog.render_changelog(
        Changelog(subjects=tuple(f"commit {i}" for i in range(5000))), limit=1000
    )
    assert len(long) < 1100 and long.endswith("for the rest)_")


# --------------------------------------------------------------------------- texts


def _plan(target: str, *refs: str) -> BumpPlan:
    pins = [
        _pin(f"live/t{i}/u{i}", f"git::{HOST}/m.git?ref={ref}", tier=f"t{i}")
        for i, ref in enumerate(refs)
    ]
    return plan_bump(pins, _repo("v1.0.0", "v1.1.0", "v2.0.0"), target)


def test_pr_texts_minor() -> None:
    plan = _plan("v1.1.0", "v1.0.0", "v1.0.0")
    body = texts.pr_body(plan, Changelog(tag_messages=(("v1.1.0", "adds things"),)))
    assert texts.pr_title(plan) == "chore(deps): bump m to v1.1.0"
    assert body.startswith(texts.MARKER)
    assert "| `live/t0/u0` | t0 | v1.0.0 -> v1.1.0 |" in body
    assert "| `live/t1/u1` | t1 | v1.0.0 -> v1.1.0 |" in body
    assert "### Changelog (v1.0.0 -> v1.1.0)" in body and "adds things" in body
    assert "WARNING" not in body
    assert texts.commit_message(plan).splitlines() == [
        "chore(deps): bump m to v1.1.0",
        "",
        "live/t0/u0: v1.0.0 -> v1.1.0",
        "live/t1/u1: v1.0.0 -> v1.1.0",
    ]


def test_pr_texts_major_are_flagged() -> None:
    plan = _plan("v2.0.0", "v1.0.0", "v1.1.0")
    body = texts.pr_body(plan, Changelog())
    assert plan.major
    assert texts.pr_title(plan) == "chore(deps)!: bump m to v2.0.0 (major)"
    assert "> [!WARNING]\n> **Major version bump** (v1 -> v2)" in body
    assert "from v1.0.0, v1.1.0 to **v2.0.0**" in body
    assert "BREAKING CHANGE:" in texts.commit_message(plan)


def test_outdated_report_streams_skips_and_errors() -> None:
    units = [
        _unit("live/a", f'source = "git::{HOST}/m.git?ref=v1.0.0"'),
        _unit("live/b", f'source = "git::{HOST}/m.git?ref=v1.1"'),
        _unit("live/c", f'source = "git::{HOST}/m.git?ref=v2.0.0"'),
        _unit("live/d", f'source = "git::{HOST}/down.git?ref=v1.0.0"'),
        _unit("live/e", f'source = "git::{HOST}/m.git?ref=main"'),
        _unit("live/f", f'source = "git::{HOST}/other.git?ref=dns-v1.0.0"'),
    ]
    repos = {
        "git.example.com/platform-modules/m": _repo(
            "v1.0.0", "v1.1", "v1.2", "v1.2.0", "v2.0.0", "v2.1.0"
        ),
        "git.example.com/platform-modules/down": RepoTags("u", error="fatal: unreachable"),
        "git.example.com/platform-modules/other": _repo("v1.0.0"),
    }
    doc = texts.outdated_report(inventory(units), repos)
    streams = {(m["module"], m["current"]): m for m in doc["modules"]}
    assert set(streams) == {("m", "v1.0.0"), ("m", "v2.0.0")}
    v1 = streams[("m", "v1.0.0")]
    assert (v1["latest"], v1["latest_major"], v1["outdated"]) == ("v1.2.0", "v2.1.0", True)
    assert [(u["path"], u["latest"]) for u in v1["units"]] == [
        ("live/a", "v1.2.0"),
        ("live/b", "v1.2"),
    ]
    v2 = streams[("m", "v2.0.0")]
    assert (v2["latest"], v2["latest_major"]) == ("v2.1.0", None)
    assert [e["units"] for e in doc["errors"]] == [["live/d"]]
    assert doc["errors"][0]["error"] == "fatal: unreachable"
    reasons = {s["unit"]: s["reason"] for s in doc["skipped"]}
    assert set(reasons) == {"live/e", "live/f"}
    assert "branch" in reasons["live/e"] and "prefix 'dns-'" in reasons["live/f"]


# --------------------------------------------------------------------------- bumpflow parsers


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Test Author <author@example.invalid> 1700000000 +0000",
            Identity("Test Author", "author@example.invalid"),
        ),
        (
            "github-actions[bot] <41898282+github-actions[bot]@users.noreply.github.com> 1 -0500",
            Identity(
                "github-actions[bot]", "41898282+github-actions[bot]@users.noreply.github.com"
            ),
        ),
        ("garbage", None),
    ],
)
def test_parse_ident(text: str, expected: Identity | None) -> None:
    assert parse_ident(text) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://github.com/example-org/infrastructure.git", "example-org/infrastructure"),
        (
            "https://x-access-token:abc@github.com/example-org/infrastructure",
            "example-org/infrastructure",
        ),
        ("git@github.com:example-org/infrastructure.git", "example-org/infrastructure"),
        ("ssh://git@github.com/example-org/infrastructure.git", "example-org/infrastructure"),
        ("https://gitlab.com/example-org/infrastructure.git", None),
        ("/srv/git/infrastructure.git", None),
    ],
)
def test_github_repository(url: str, expected: str | None) -> None:
    assert github_repository(url) == expected


def test_parse_tag_messages_keeps_annotated_tags_only() -> None:
    text = "v1.0.0\x00tag\x00first release\n\n\x1e\nv1.1.0\x00commit\x00a commit subject\n\n\x1e\n"
    assert parse_tag_messages(text) == {"v1.0.0": "first release"}


def test_dirty_message_names_the_files() -> None:
    message = dirty_message([Change("M", "live/a/terragrunt.hcl"), Change("A", "notes.txt")])
    assert (
        "live/a/terragrunt.hcl (modified)" in message and "notes.txt (added/untracked)" in message
    )
    assert "git stash" in message
