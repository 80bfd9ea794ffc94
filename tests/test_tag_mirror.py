"""The module mirror the working-copy check reads: tags listed on every run, fetched
only when they moved, and a commit's files kept per commit (real git repositories)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from infra_fixtures import git

from tooling.errors import ToolingError
from tooling.io import tags


def _module(tmp_path: Path) -> tuple[Path, str]:
    """A module repository with tag v1.0.0 (annotated) and v1.1.0 (lightweight)."""
    repo = tmp_path / "module"
    repo.mkdir()
    git(repo, "init", "--quiet", "-b", "main")
    (repo / "main.tf").write_text('resource "terraform_data" "a" {}\n')
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "one")
    git(repo, "tag", "-a", "v1.0.0", "-m", "first")
    (repo / "vars.tf").write_text('variable "x" {}\n')
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "two")
    git(repo, "tag", "v1.1.0")
    return repo, repo.as_uri()


def _traced(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment whose git children log the commands they run (``GIT_TRACE``)."""
    trace = tmp_path / "trace.log"
    return {**os.environ, "GIT_TRACE": str(trace)}, trace


def _fetches(trace: Path) -> int:
    if not trace.exists():
        return 0
    return sum(
        1 for line in trace.read_text().splitlines() if "git fetch" in line and "built-in" in line
    )


def test_a_warm_mirror_whose_tags_did_not_move_is_not_fetched_again(tmp_path: Path) -> None:
    repo, url = _module(tmp_path)
    env, trace = _traced(tmp_path)
    cache = tmp_path / "cache"
    _, first = tags.mirror_now(url, cache, env)
    assert _fetches(trace) == 1
    _, second = tags.mirror_now(url, cache, env)
    assert _fetches(trace) == 1
    assert first == second
    assert second["v1.0.0"].commit == git(repo, "rev-parse", "v1.0.0^{commit}").strip()
    assert second["v1.1.0"].commit == git(repo, "rev-parse", "main").strip()


def test_a_tag_moved_upstream_is_seen_and_fetched_with_its_files(tmp_path: Path) -> None:
    repo, url = _module(tmp_path)
    env, trace = _traced(tmp_path)
    cache = tmp_path / "cache"
    mirror, before = tags.mirror_now(url, cache, env)
    (repo / "evil.tf").write_text('resource "terraform_data" "b" {}\n')
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "moved")
    git(repo, "tag", "-f", "v1.1.0")
    _, after = tags.mirror_now(url, cache, env)
    assert _fetches(trace) == 2
    assert after["v1.1.0"].commit != before["v1.1.0"].commit
    tree = tags.tree_of(mirror, after["v1.1.0"].commit)
    assert tree is not None and "evil.tf" in tree


def test_a_tag_deleted_upstream_is_absent_though_the_mirror_keeps_it(tmp_path: Path) -> None:
    repo, url = _module(tmp_path)
    cache = tmp_path / "cache"
    tags.mirror_now(url, cache, os.environ)
    git(repo, "tag", "-d", "v1.0.0")
    mirror, listed = tags.mirror_now(url, cache, os.environ)
    assert "v1.0.0" not in listed and "v1.1.0" in listed
    assert git(mirror, "tag", "--list", "v1.0.0").strip() == "v1.0.0"


def test_a_failed_fetch_records_no_listing_so_the_next_run_fetches(tmp_path: Path) -> None:
    _repo, url = _module(tmp_path)
    cache = tmp_path / "cache"
    mirror = tags.cache_path(cache, url)
    mirror.mkdir(parents=True)
    (mirror / "HEAD").write_text("garbage\n")  # a damaged mirror: the fetch fails
    with pytest.raises(ToolingError, match="cannot fetch"):
        tags.mirror_now(url, cache, os.environ)
    assert not (mirror / tags.LISTED_AT_FETCH).exists()
    (mirror / "HEAD").unlink()
    env, trace = _traced(tmp_path)
    _, listed = tags.mirror_now(url, cache, env)
    assert _fetches(trace) == 1 and "v1.1.0" in listed


def test_a_repository_that_cannot_be_fetched_or_listed_is_named(tmp_path: Path) -> None:
    missing = (tmp_path / "nowhere").as_uri()
    with pytest.raises(ToolingError, match=r"cannot fetch file://.*nowhere"):
        tags.mirror_now(missing, tmp_path / "cache", os.environ)  # no mirror yet: fetched
    with pytest.raises(ToolingError, match=r"cannot list the tags of file://.*nowhere"):
        tags.mirror_now(missing, tmp_path / "cache", os.environ)  # a mirror: listed first


def test_a_fresh_mirror_lists_its_tags_as_ls_remote_does_without_asking_twice(
    tmp_path: Path,
) -> None:
    repo, url = _module(tmp_path)
    git(repo, "tag", "-a", "v1.0.0-wrapped", "v1.0.0", "-m", "a tag of a tag")
    git(repo, "tag", "a-tree", git(repo, "rev-parse", "v1.0.0^{tree}").strip())
    env, trace = _traced(tmp_path)
    cache = tmp_path / "cache"
    mirror, listed = tags.mirror_now(url, cache, env)
    ran = trace.read_text()
    assert "ls-remote" not in ran and _fetches(trace) == 1  # one fetch, no listing before it
    remote = git(repo, "ls-remote", "--tags", url)
    assert (mirror / tags.LISTED_AT_FETCH).read_text() == remote
    assert listed == tags.parse_ls_remote(remote)
    assert listed["v1.0.0-wrapped"].commit == git(repo, "rev-parse", "v1.0.0^{commit}").strip()
    tags.mirror_now(url, cache, env)  # warm: listed, the same, not fetched again
    assert _fetches(trace) == 1


def test_a_commits_files_are_read_once_then_kept_per_commit(tmp_path: Path) -> None:
    _repo, url = _module(tmp_path)
    mirror, listed = tags.mirror_now(url, tmp_path / "cache", os.environ)
    commit = listed["v1.0.0"].commit
    first = tags.tree_of(mirror, commit)
    assert first is not None and set(first) == {"main.tf"}
    assert (mirror / tags.TREES / commit).is_file()
    # the kept listing answers without git: with git's objects gone it still answers
    env_path = os.environ["PATH"]
    os.environ["PATH"] = str(tmp_path / "no-git-here")
    try:
        assert tags.tree_of(mirror, commit) == first
    finally:
        os.environ["PATH"] = env_path


def test_an_object_that_is_no_commit_has_no_tree(tmp_path: Path) -> None:
    repo, url = _module(tmp_path)
    tree_id = git(repo, "rev-parse", "v1.0.0^{tree}").strip()
    git(repo, "tag", "tree-tag", tree_id)
    mirror, listed = tags.mirror_now(url, tmp_path / "cache", os.environ)
    assert listed["tree-tag"].commit == tree_id
    assert tags.tree_of(mirror, tree_id) is None
    assert not (mirror / tags.TREES / tree_id).exists()
    assert tags.tree_of(mirror, "0" * 40) is None


def test_a_mirror_fetch_starts_no_housekeeping_after_it(tmp_path: Path) -> None:
    _, url = _module(tmp_path)
    env, trace = _traced(tmp_path)
    tags.mirror_now(url, tmp_path / "cache", env)
    assert _fetches(trace) == 1
    ran = [line for line in trace.read_text().splitlines() if "built-in: git" in line]
    assert not [line for line in ran if "maintenance" in line or "built-in: git gc" in line], ran
