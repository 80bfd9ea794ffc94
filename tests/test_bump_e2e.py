"""invoke bump-module / outdated / bump-all, end to end.

Real parts only: the example tree in a throwaway git repository with a bare
``origin``, the sandbox catalog's tagged module repositories (and fixture
module repositories built here with real git), the real ``invoke`` CLI in a
separate process. Only GitHub's API is replaced, by the local test server.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from infra_fixtures import GIT_ENV, commit_all, git, invoke

from tooling.io import sandbox
from tooling.model.sources import parse_source
from tooling.model.versions import parse_version

MODULE = "terraform-proxmox"


# --------------------------------------------------------------------------- helpers


def _units(repo: Path) -> list[dict[str, Any]]:
    result = invoke(repo, "units", "--json")
    assert result.returncode == 0, result.output
    units: list[dict[str, Any]] = json.loads(result.stdout)["units"]
    return units


def _pinning(repo: Path, module: str) -> dict[str, str]:
    """unit path -> ref, for the units whose source is the repository ``module``."""
    out = {}
    for unit in _units(repo):
        source = parse_source(unit["source"] or "")
        if source.short_name == module:
            out[unit["path"]] = unit["ref"]
    return out


def _catalog_tags(module: str) -> list[str]:
    return [r.tag for r in sandbox.releases(sandbox.CATALOG / module)]


def _catalog_message(module: str, tag: str) -> str:
    return next(r.message for r in sandbox.releases(sandbox.CATALOG / module) if r.tag == tag)


def _origin(repo: Path) -> Path:
    return repo.parent / f"{repo.name}-origin.git"


def _origin_sha(repo: Path, branch: str) -> str | None:
    out = git(
        _origin(repo), "for-each-ref", "--format=%(objectname)", f"refs/heads/{branch}"
    ).strip()
    return out or None


def _head_branch(repo: Path) -> str:
    return git(repo, "symbolic-ref", "--short", "HEAD").strip()


def _pulls(api: Any) -> dict[str, dict[str, Any]]:
    """Pull requests on the test server by head branch."""
    with api.state.lock:
        return {
            pr["head"]: {**api.state.issues[n], **pr, "number": n}
            for n, pr in api.state.pulls.items()
        }


def _posts(api: Any, suffix: str = "/pulls") -> list[Any]:
    return [r for r in api.requests if r.method == "POST" and r.path.endswith(suffix)]


def _patches(api: Any) -> list[Any]:
    return [r for r in api.requests if r.method == "PATCH" and "/pulls/" in r.path]


def _assert_no_token(api: Any, *outputs: str) -> None:
    for text in outputs:
        assert api.token not in text


def _numstat(repo: Path, rev: str) -> dict[str, tuple[int, int]]:
    out = git(repo, "show", "--numstat", "--format=", rev)
    stats = {}
    for line in out.splitlines():
        added, removed, path = line.split("\t")
        stats[path] = (int(added), int(removed))
    return stats


def _diff_pairs(repo: Path, rev: str) -> list[tuple[str, str]]:
    """(removed line, added line) pairs of a commit's diff."""
    out = git(repo, "show", "--format=", "--unified=0", rev)
    minus = [
        line[1:] for line in out.splitlines() if line.startswith("-") and not line.startswith("---")
    ]
    plus = [
        line[1:] for line in out.splitlines() if line.startswith("+") and not line.startswith("+++")
    ]
    assert len(minus) == len(plus)
    return list(zip(minus, plus, strict=True))


def _precedence(tag: str) -> tuple[object, ...]:
    version = parse_version(tag)
    assert version is not None, tag
    return version.precedence()


def _next_minor(module: str, current: str) -> str:
    """The newest catalog tag with ``current``'s major, computed independently of the tooling."""

    def key(tag: str) -> tuple[int, ...]:
        return tuple(int(n) for n in tag.lstrip("v").split("."))

    same = [
        t for t in _catalog_tags(module) if key(t)[0] == key(current)[0] and key(t) > key(current)
    ]
    return max(same, key=key)


def _newest_major(module: str, current: str) -> str | None:
    def key(tag: str) -> tuple[int, ...]:
        return tuple(int(n) for n in tag.lstrip("v").split("."))

    higher = [t for t in _catalog_tags(module) if key(t)[0] > key(current)[0]]
    return max(higher, key=key) if higher else None


# --------------------------------------------------------------------------- bump-module


def test_bump_module_branch_commit_push_and_pull_request(
    example_repo: Path, github_api: Any
) -> None:
    pinning = _pinning(example_repo, MODULE)
    assert len(pinning) >= 2, "the example pins terraform-proxmox in several units"
    current = set(pinning.values())
    target = _next_minor(MODULE, min(current))
    branch = f"bump/{MODULE}-{target}"
    main_before = git(example_repo, "rev-parse", "main").strip()

    result = invoke(example_repo, "bump-module", MODULE, target, env=github_api.env())
    assert result.returncode == 0, result.output
    _assert_no_token(github_api, result.output)

    # pushed: the branch exists in the bare origin, one commit on the default branch
    sha = _origin_sha(example_repo, branch)
    assert sha is not None, f"{branch} not pushed"
    assert git(example_repo, "rev-parse", f"{sha}^").strip() == main_before
    # back where the user was
    assert _head_branch(example_repo) == "main"
    assert git(example_repo, "status", "--porcelain").strip() == ""

    # exactly one line per unit, and only the ref changed on it
    unit_files = {f"{unit}/terragrunt.hcl" for unit in pinning}
    assert _numstat(example_repo, sha) == dict.fromkeys(unit_files, (1, 1))
    for old, new in _diff_pairs(example_repo, sha):
        ref = parse_source(re.search(r'"(.*)"', old).group(1)).ref  # type: ignore[union-attr]
        assert ref in current
        assert new == old.replace(f"ref={ref}", f"ref={target}")
    message = git(example_repo, "log", "-1", "--format=%s%n%ae", sha).splitlines()
    assert message == [f"chore(deps): bump {MODULE} to {target}", GIT_ENV["GIT_AUTHOR_EMAIL"]]

    # one pull request, with the unit table and the changelog
    assert len(_posts(github_api)) == 1
    pull = _pulls(github_api)[branch]
    assert pull["base"] == "main" and pull["state"] == "open"
    assert pull["title"] == f"chore(deps): bump {MODULE} to {target}"
    tiers = {u["path"]: u["tier"] for u in _units(example_repo)}
    for unit, ref in pinning.items():
        assert f"| `{unit}` | {tiers[unit]} | {ref} -> {target} |" in pull["body"]
    assert _catalog_message(MODULE, target) in pull["body"]  # the annotated tag's message
    assert f"[{target.lstrip('v')}]" in pull["body"]  # the CHANGELOG.md section of the new version
    assert "Major version bump" not in pull["body"]
    assert "dependencies" in pull["labels"]

    # a second run updates the same pull request: PATCH, no second POST
    again = invoke(example_repo, "bump-module", MODULE, target, env=github_api.env())
    assert again.returncode == 0, again.output
    assert len(_posts(github_api)) == 1
    assert [r.path for r in _patches(github_api)] == [
        f"/repos/example-org/infrastructure/pulls/{pull['number']}"
    ]
    assert _patches(github_api)[0].body["title"] == pull["title"]
    assert len(_pulls(github_api)) == 1
    _assert_no_token(github_api, again.output)

    # on the branch, `affected` reports exactly the bumped units
    git(example_repo, "checkout", "--quiet", branch)
    affected = invoke(example_repo, "affected", "--base", "main", "--json")
    assert affected.returncode == 0, affected.output
    units = json.loads(affected.stdout)["units"]
    assert sorted(u["path"] for u in units) == sorted(pinning)
    assert {u["change"] for u in units} == {"modified"}


def test_bump_module_opens_a_new_pull_request_after_a_closed_one(
    example_repo: Path, github_api: Any
) -> None:
    pinning = _pinning(example_repo, MODULE)
    target = _next_minor(MODULE, min(pinning.values()))
    branch = f"bump/{MODULE}-{target}"
    closed = github_api.state.add_pull(head=branch, state="closed")

    result = invoke(example_repo, "bump-module", MODULE, target, env=github_api.env())
    assert result.returncode == 0, result.output
    assert [r.body["head"] for r in _posts(github_api)] == [branch]  # asked by name: a new one
    numbers = sorted(n for n, pr in github_api.state.pulls.items() if pr["head"] == branch)
    assert numbers[0] == closed["number"] and len(numbers) == 2
    assert github_api.state.issues[numbers[1]]["state"] == "open"
    assert _origin_sha(example_repo, branch) is not None


def test_a_missing_tag_is_refused_with_the_nearest_tags(
    example_repo: Path, github_api: Any
) -> None:
    tags = _catalog_tags(MODULE)
    newest = max(tags, key=lambda t: parse_version(t).precedence())  # type: ignore[union-attr]
    major = parse_version(newest).major  # type: ignore[union-attr]
    missing = f"v{major}.9.0"
    assert missing not in tags

    result = invoke(example_repo, "bump-module", MODULE, missing, env=github_api.env())
    assert result.returncode == 1
    assert f"has no tag '{missing}'" in result.stderr
    listed = result.stderr.split("nearest tags are:")[1].split()
    assert newest in [t.strip(",") for t in listed]
    assert all(t.strip(",") in tags for t in listed)
    assert "Traceback" not in result.output
    assert _origin_sha(example_repo, f"bump/{MODULE}-{missing}") is None
    assert git(example_repo, "branch", "--list", "bump/*").strip() == ""
    assert [r for r in github_api.requests if r.method != "GET"] == []


def test_without_a_token_it_stops_after_the_local_commit(example_repo: Path) -> None:
    pinning = _pinning(example_repo, MODULE)
    target = _next_minor(MODULE, min(pinning.values()))
    branch = f"bump/{MODULE}-{target}"

    result = invoke(example_repo, "bump-module", MODULE, target)
    assert result.returncode == 0, result.output
    assert _head_branch(example_repo) == branch  # left checked out
    assert _origin_sha(example_repo, branch) is None  # not pushed
    assert (
        git(example_repo, "log", "-1", "--format=%s").strip()
        == f"chore(deps): bump {MODULE} to {target}"
    )
    assert f"title: chore(deps): bump {MODULE} to {target}" in result.stdout
    for unit in pinning:
        assert f"| `{unit}` |" in result.stdout
    assert f"git push origin {branch}" in result.stderr


def test_dry_run_touches_nothing(example_repo: Path, github_api: Any) -> None:
    pinning = _pinning(example_repo, MODULE)
    target = _newest_major(MODULE, min(pinning.values()))
    assert target is not None
    refs = git(example_repo, "for-each-ref").strip()
    origin_refs = git(_origin(example_repo), "for-each-ref").strip()

    result = invoke(example_repo, "bump-module", MODULE, target, "--dry-run", env=github_api.env())
    assert result.returncode == 0, result.output
    assert git(example_repo, "for-each-ref").strip() == refs
    assert git(_origin(example_repo), "for-each-ref").strip() == origin_refs
    assert git(example_repo, "status", "--porcelain").strip() == ""
    assert github_api.requests == []
    for unit in pinning:  # the dry run's listing is its result: stdout
        assert f"{unit}/terragrunt.hcl:" in result.stdout
    assert f"?ref={target}" in result.stdout
    # a major bump: flagged in the title and warned about in the body
    assert f"title: chore(deps)!: bump {MODULE} to {target} (major)" in result.stdout
    assert "Major version bump" in result.stdout


def test_a_dirty_working_tree_is_refused_naming_the_files(example_repo: Path) -> None:
    pinning = _pinning(example_repo, MODULE)
    target = _next_minor(MODULE, min(pinning.values()))
    (example_repo / "live/cluster/vms/terragrunt.hcl").write_text("# edited\n", encoding="utf-8")
    (example_repo / "notes.txt").write_text("scratch\n", encoding="utf-8")

    result = invoke(example_repo, "bump-module", MODULE, target)
    assert result.returncode == 1
    assert "live/cluster/vms/terragrunt.hcl (modified)" in result.stderr
    assert "notes.txt" in result.stderr
    assert git(example_repo, "branch", "--list", "bump/*").strip() == ""


def test_units_glob_limits_the_bump(example_repo: Path, github_api: Any) -> None:
    pinning = _pinning(example_repo, MODULE)
    chosen = sorted(pinning)[0]
    target = _next_minor(MODULE, pinning[chosen])

    result = invoke(
        example_repo, "bump-module", MODULE, target, "--units", chosen, env=github_api.env()
    )
    assert result.returncode == 0, result.output
    sha = _origin_sha(example_repo, f"bump/{MODULE}-{target}")
    assert sha is not None
    assert list(_numstat(example_repo, sha)) == [f"{chosen}/terragrunt.hcl"]


# --------------------------------------------------------------------------- outdated


def _add_unit(repo: Path, path: str, source: str, extra: str = "") -> None:
    unit = repo / path
    unit.mkdir(parents=True, exist_ok=True)
    (unit / "terragrunt.hcl").write_text(
        'include "root" {\n  path = find_in_parent_folders("root.hcl")\n}\n\n'
        f"{extra}terraform {{\n  source = {source}\n}}\n",
        encoding="utf-8",
    )


def test_outdated_json_reports_modules_skips_and_failing_repositories(
    example_repo: Path, tmp_path: Path
) -> None:
    _add_unit(
        example_repo,
        "live/cloud/branch",
        '"git::https://git.example.com/platform-modules/terraform-flux.git?ref=main"',
    )
    _add_unit(
        example_repo,
        "live/cloud/registry-mod",
        '"tfr:///terraform-aws-modules/vpc/aws?version=5.0.0"',
    )
    _add_unit(
        example_repo,
        "live/cloud/interp",
        '"${local.base}?ref=v1.0.0"',
        extra='locals {\n  base = get_env("MODULE_BASE", "git::https://git.example.com/x/y.git")\n}\n\n',
    )
    (example_repo / "modules/local-mod").mkdir(parents=True)
    (example_repo / "modules/local-mod/main.tf").write_text("", encoding="utf-8")
    _add_unit(example_repo, "live/cloud/local", '"../../../modules/local-mod"')
    _add_unit(
        example_repo,
        "live/cloud/gone",
        '"git::https://git.example.com/platform-modules/terraform-gone.git?ref=v1.0.0"',
    )
    commit_all(example_repo, "more units")
    missing = tmp_path / "nowhere" / "terraform-gone.git"
    env = {
        "IAC_MODULE_REWRITE": f"https://git.example.com/platform-modules/terraform-gone.git={missing}"
    }

    result = invoke(example_repo, "outdated", "--json", env=env)
    assert result.returncode == 1, result.output  # a repository could not be queried
    doc = json.loads(result.stdout)

    # every sandbox module pinned by the example, with the catalog's newest tags
    expected: dict[str, dict[str, Any]] = {}
    for unit in _units(example_repo):
        source = parse_source(unit["source"] or "")
        name = source.short_name
        if source.kind != "git" or name not in sandbox.catalog_repos() or unit["ref"] == "main":
            continue
        entry = expected.setdefault(name, {"current": unit["ref"], "units": []})
        entry["units"].append(unit["path"])
        if parse_version(unit["ref"]) < parse_version(entry["current"]):  # type: ignore[operator]
            entry["current"] = unit["ref"]
    got = {m["module"]: m for m in doc["modules"]}
    assert set(got) == set(expected)
    for name, exp in expected.items():
        module = got[name]
        assert module["current"] == exp["current"]
        assert module["latest"] == _next_minor(name, exp["current"])
        assert module["latest_major"] == _newest_major(name, exp["current"])
        assert module["outdated"] is True
        assert sorted(u["path"] for u in module["units"]) == sorted(exp["units"])

    skipped = {s["unit"]: s["reason"] for s in doc["skipped"]}
    assert set(skipped) == {
        "live/cloud/branch",
        "live/cloud/registry-mod",
        "live/cloud/interp",
        "live/cloud/local",
    }
    assert "branch" in skipped["live/cloud/branch"]
    assert (
        "tfr://" in skipped["live/cloud/registry-mod"]
        and "not bumped" in skipped["live/cloud/registry-mod"]
    )
    assert (
        "unresolvable" in skipped["live/cloud/interp"]
        and "local.base" in skipped["live/cloud/interp"]
    )
    assert "local module path" in skipped["live/cloud/local"]

    assert [e["module"] for e in doc["errors"]] == ["terraform-gone"]
    assert doc["errors"][0]["units"] == ["live/cloud/gone"]
    assert doc["errors"][0]["error"]

    human = invoke(example_repo, "outdated", env=env)
    assert human.returncode == 1
    assert "terraform-gone" in human.stderr and "could not list tags" in human.stderr


# --------------------------------------------------------------------------- bump-all


def test_bump_all_majors_apart_and_idempotent(example_repo: Path, github_api: Any) -> None:
    cluster: dict[str, str] = {
        unit["path"]: str(parse_source(unit["source"]).short_name)
        for unit in _units(example_repo)
        if unit["path"].startswith("live/cluster/")
    }
    refs: dict[str, str] = {unit["path"]: unit["ref"] for unit in _units(example_repo)}
    expected_branches: dict[str, bool] = {}  # branch -> major
    for module in sorted(set(cluster.values())):
        current = min((refs[u] for u, m in cluster.items() if m == module), key=_precedence)
        expected_branches[f"bump/{module}-{_next_minor(module, current)}"] = False
        newest_major = _newest_major(module, current)
        if newest_major:
            expected_branches[f"bump/{module}-{newest_major}"] = True

    result = invoke(
        example_repo,
        "bump-all",
        "--units",
        "live/cluster/*",
        env={**github_api.env(), "IAC_ECHO_COMMANDS": "1"},
    )
    assert result.returncode == 0, result.output
    _assert_no_token(github_api, result.output)
    # tags listed (and history fetched for the changelogs) once per repository
    modules = set(cluster.values())
    listed = re.findall(r"^\+ git ls-remote --tags (\S+)$", result.stderr, re.MULTILINE)
    assert sorted(listed) == sorted(set(listed)) and len(listed) == len(modules)
    fetched = re.findall(
        r"^\+ git (?:-c \S+ )*fetch .* (\S+) '\+refs/tags/", result.stderr, re.MULTILINE
    )
    assert sorted(fetched) == sorted(listed)
    pulls = _pulls(github_api)
    assert set(pulls) == set(expected_branches)  # nothing for the cloud tier: staged rollout
    for branch, major in expected_branches.items():
        pull = pulls[branch]
        assert ("(major)" in pull["title"]) is major
        assert ("chore(deps)!:" in pull["title"]) is major
        assert ("Major version bump" in pull["body"]) is major
        assert ("major-update" in pull["labels"]) is major
        sha = _origin_sha(example_repo, branch)
        assert sha is not None
        assert all(stat == (1, 1) for stat in _numstat(example_repo, sha).values())
    assert _head_branch(example_repo) == "main"
    first_shas = {b: _origin_sha(example_repo, b) for b in expected_branches}
    posts = len(_posts(github_api))
    assert posts == len(expected_branches)

    # again, nothing changed: no new pull request, no push; each one is updated
    again = invoke(example_repo, "bump-all", "--units", "live/cluster/*", env=github_api.env())
    assert again.returncode == 0, again.output
    assert len(_posts(github_api)) == posts
    assert {b: _origin_sha(example_repo, b) for b in expected_branches} == first_shas
    patched = {r.path.rsplit("/", 1)[-1] for r in _patches(github_api)}
    assert patched == {str(p["number"]) for p in pulls.values()}

    # the default branch moves: every branch is rebased onto it, still one pull request each
    (example_repo / "README.md").write_text("moved on\n", encoding="utf-8")
    main_sha = commit_all(example_repo, "docs: readme")
    git(example_repo, "push", "--quiet", "origin", "main")
    third = invoke(example_repo, "bump-all", "--units", "live/cluster/*", env=github_api.env())
    assert third.returncode == 0, third.output
    assert len(_posts(github_api)) == posts
    assert len(_pulls(github_api)) == len(expected_branches)
    for branch in expected_branches:
        sha = _origin_sha(example_repo, branch)
        assert sha != first_shas[branch]
        assert git(example_repo, "rev-parse", f"{sha}^").strip() == main_sha


def test_bump_all_never_reopens_a_closed_pull_request_nor_force_pushes_foreign_work(
    example_repo: Path, github_api: Any
) -> None:
    refs = {unit["path"]: unit["ref"] for unit in _units(example_repo)}
    talos = f"bump/terraform-talos-{_next_minor('terraform-talos', refs['live/cluster/os'])}"
    flux = f"bump/terraform-flux-{_next_minor('terraform-flux', refs['live/cluster/gitops'])}"
    closed = github_api.state.add_pull(head=talos, state="closed", title="closed by a human")

    # someone pushed their own commit to the flux bump branch
    git(example_repo, "checkout", "--quiet", "-b", flux)
    (example_repo / "live/cluster/gitops/NOTES.md").write_text("wip\n", encoding="utf-8")
    git(example_repo, "add", "--all")
    git(
        example_repo,
        "commit",
        "--quiet",
        "-m",
        "my own work",
        env={"GIT_AUTHOR_EMAIL": "human@example.invalid", "GIT_AUTHOR_NAME": "Human"},
    )
    git(example_repo, "push", "--quiet", "origin", flux)
    git(example_repo, "checkout", "--quiet", "main")
    git(example_repo, "branch", "--quiet", "-D", flux)
    foreign_sha = _origin_sha(example_repo, flux)

    result = invoke(
        example_repo,
        "bump-all",
        "--units",
        "live/cluster/os,live/cluster/gitops",
        env=github_api.env(),
    )
    assert result.returncode == 0, result.output
    assert "closed without merging" in result.stderr
    assert "human@example.invalid" in result.stderr

    pulls = _pulls(github_api)
    assert pulls[talos]["number"] == closed["number"] and pulls[talos]["state"] == "closed"
    assert not [r for r in _posts(github_api) if r.body["head"] in (talos, flux)]
    assert _origin_sha(example_repo, talos) is None  # not even pushed
    assert _origin_sha(example_repo, flux) == foreign_sha  # not force-pushed
    # the other targets of those modules (the majors) went ahead
    opened = {r.body["head"] for r in _posts(github_api)}
    assert opened and all(
        b.startswith(("bump/terraform-talos-", "bump/terraform-flux-")) for b in opened
    )


# --------------------------------------------------------------------------- fixture module repositories


def _module_repo(path: Path, tags: list[tuple[str, str]], *, annotated: bool) -> dict[str, str]:
    """A module repository with one commit per tag; returns tag -> commit."""
    path.mkdir(parents=True)
    git(path, "init", "--quiet", "--initial-branch=main")
    out = {}
    for tag, subject in tags:
        folder = path / tag.split("-v")[0] if "-v" in tag else path
        folder.mkdir(exist_ok=True)
        (folder / "main.tf").write_text(f"# {tag}\n", encoding="utf-8")
        out[tag] = commit_all(path, subject)
        if annotated:
            git(path, "tag", "-a", tag, "-m", f"release {tag}")
        else:
            git(path, "tag", tag)
    return out


def test_monorepo_prefixes_sha_pins_scp_sources_and_superseded_pull_requests(
    example_repo: Path, tmp_path: Path, github_api: Any
) -> None:
    mono = tmp_path / "modules" / "terraform-mono.git"
    commits = _module_repo(
        mono,
        [
            ("dns-v1.0.0", "dns: first"),
            ("api-v1.0.0", "api: first"),
            ("dns-v1.1.0", "dns: add records"),
            ("api-v2.0.0", "api: breaking"),
        ],
        annotated=False,
    )
    scp = "git@git.example.com:platform-modules/terraform-mono.git"
    _add_unit(example_repo, "live/cloud/mono-dns", f'"git::{scp}//dns?ref=dns-v1.0.0"')
    _add_unit(example_repo, "live/cloud/mono-api", f'"{scp}//api?depth=1&ref=api-v1.0.0"')
    _add_unit(
        example_repo,
        "live/cloud/mono-sha",
        f'"git::ssh://git@git.example.com:2222/platform-modules/terraform-mono.git//dns?ref={commits["dns-v1.0.0"]}" # dns-v1.0.0\n',
    )
    commit_all(example_repo, "mono units")
    git(example_repo, "push", "--quiet", "origin", "main")
    env = {
        **github_api.env(),
        # the SCP form without `git::` reaches git as ssh://git@host/path once Terragrunt
        # normalises it (the bump's `providers lock` downloads the module): map that spelling too
        "IAC_MODULE_REWRITE": f"{scp}={mono},ssh://git@git.example.com:2222/platform-modules/terraform-mono.git={mono},"
        f"ssh://git@git.example.com/platform-modules/terraform-mono.git={mono}",
    }

    out = invoke(example_repo, "outdated", "--json", env=env)
    assert out.returncode == 0, out.output
    streams = {
        (m["tag_prefix"], m["current"]): m
        for m in json.loads(out.stdout)["modules"]
        if m["module"] == "terraform-mono"
    }
    assert set(streams) == {("dns-", "dns-v1.0.0"), ("api-", "api-v1.0.0")}
    assert streams[("dns-", "dns-v1.0.0")]["latest"] == "dns-v1.1.0"
    assert streams[("dns-", "dns-v1.0.0")]["latest_major"] is None
    assert sorted(u["path"] for u in streams[("dns-", "dns-v1.0.0")]["units"]) == [
        "live/cloud/mono-dns",
        "live/cloud/mono-sha",
    ]
    assert streams[("api-", "api-v1.0.0")]["latest"] is None
    assert streams[("api-", "api-v1.0.0")]["latest_major"] == "api-v2.0.0"

    result = invoke(example_repo, "bump-all", "--units", "live/cloud/mono-*", env=env)
    assert result.returncode == 0, result.output
    pulls = _pulls(github_api)
    assert set(pulls) == {"bump/terraform-mono-dns-v1.1.0", "bump/terraform-mono-api-v2.0.0"}
    dns = pulls["bump/terraform-mono-dns-v1.1.0"]
    assert "- dns: add records" in dns["body"]  # lightweight tags: the commit subjects
    sha = _origin_sha(example_repo, "bump/terraform-mono-dns-v1.1.0")
    assert _numstat(example_repo, sha) == {  # type: ignore[arg-type]
        "live/cloud/mono-dns/terragrunt.hcl": (1, 1),
        "live/cloud/mono-sha/terragrunt.hcl": (1, 1),
    }
    text = git(example_repo, "show", f"{sha}:live/cloud/mono-sha/terragrunt.hcl")
    assert (
        f'ref={commits["dns-v1.1.0"]}" # dns-v1.1.0' in text
    )  # the SHA and its comment moved together
    api_text = git(
        example_repo,
        "show",
        f"{_origin_sha(example_repo, 'bump/terraform-mono-api-v2.0.0')}:live/cloud/mono-api/terragrunt.hcl",
    )
    assert f'"{scp}//api?depth=1&ref=api-v2.0.0"' in api_text  # depth kept, order kept

    # a newer release supersedes the open pull request of the same stream
    (mono / "dns" / "main.tf").write_text("# dns-v1.2.0\n", encoding="utf-8")
    commit_all(mono, "dns: more")
    git(mono, "tag", "dns-v1.2.0")
    newer = invoke(example_repo, "bump-all", "--units", "live/cloud/mono-*", env=env)
    assert newer.returncode == 0, newer.output
    pulls = _pulls(github_api)
    assert pulls["bump/terraform-mono-dns-v1.2.0"]["state"] == "open"
    assert pulls["bump/terraform-mono-dns-v1.1.0"]["state"] == "closed"
    assert pulls["bump/terraform-mono-api-v2.0.0"]["state"] == "open"
    comments = github_api.state.comments_on(dns["number"])
    assert [c["body"] for c in comments] == [
        f"Superseded by #{pulls['bump/terraform-mono-dns-v1.2.0']['number']} (terraform-mono dns-v1.2.0)."
    ]


@pytest.mark.parametrize("prefix", ["", "v"])
def test_precision_and_style_are_kept(example_repo: Path, tmp_path: Path, prefix: str) -> None:
    repo = tmp_path / "modules" / "terraform-style.git"
    _module_repo(
        repo,
        [(f"{prefix}2.0", "first"), (f"{prefix}2.1", "second"), (f"{prefix}2.1.0", "same")],
        annotated=True,
    )
    url = "https://git.example.com/platform-modules/terraform-style.git"
    _add_unit(example_repo, "live/cloud/style", f'"git::{url}?ref={prefix}2.0"')
    commit_all(example_repo, "style unit")
    git(example_repo, "push", "--quiet", "origin", "main")
    env = {"IAC_MODULE_REWRITE": f"{url}={repo}"}

    out = invoke(example_repo, "outdated", "--json", env=env)
    assert out.returncode == 0, out.output
    style = next(m for m in json.loads(out.stdout)["modules"] if m["module"] == "terraform-style")
    assert style["latest"] == f"{prefix}2.1"  # v2.0 -> v2.1, not v2.1.0

    result = invoke(example_repo, "bump-all", "--units", "live/cloud/style", env=env)
    assert result.returncode == 0, result.output
    assert _head_branch(example_repo) == "main"
    text = git(
        example_repo, "show", f"bump/terraform-style-{prefix}2.1:live/cloud/style/terragrunt.hcl"
    )
    assert f'?ref={prefix}2.1"' in text


def test_a_local_git_file_source_is_pinned_listed_as_outdated_and_bumped(
    example_repo: Path, tmp_path: Path
) -> None:
    repo = tmp_path / "modules" / "terraform-local.git"
    _module_repo(repo, [("v1.0.0", "first"), ("v1.1.0", "second")], annotated=True)
    source = f"git::file://{repo}?ref=v1.0.0"
    _add_unit(example_repo, "live/cloud/local-git", f'"{source}"')
    commit_all(example_repo, "a unit on a local git repository")
    git(example_repo, "push", "--quiet", "origin", "main")
    unit = "live/cloud/local-git/terragrunt.hcl"

    # pins: the ref is read, no pin rule fires
    units = {u["path"]: u for u in _units(example_repo)}
    assert units["live/cloud/local-git"]["ref"] == "v1.0.0"
    checked = invoke(example_repo, "check", "--json")
    pin_rules = [
        v
        for v in json.loads(checked.stdout)["violations"]
        if v["file"] == unit and v["rule"].startswith("pin-")
    ]
    assert pin_rules == []

    out = invoke(example_repo, "outdated", "--json")
    assert out.returncode == 0, out.output
    doc = json.loads(out.stdout)
    mine = [m for m in doc["modules"] if m["module"] == "terraform-local"]
    assert [(m["current"], m["latest"], m["outdated"]) for m in mine] == [
        ("v1.0.0", "v1.1.0", True)
    ]
    assert "live/cloud/local-git" not in {s["unit"] for s in doc["skipped"]}

    bumped = invoke(example_repo, "bump-module", "terraform-local", "v1.1.0")
    assert bumped.returncode == 0, bumped.output
    assert f'"git::file://{repo}?ref=v1.1.0"' in (example_repo / unit).read_text()
    assert (
        git(example_repo, "log", "-1", "--format=%s").strip()
        == "chore(deps): bump terraform-local to v1.1.0"
    )
