"""Benchmark tag discovery (`invoke outdated`, `invoke bump-all`) over many module repositories.

Builds N tagged module repositories (default 50, each with 20 annotated tags
v1.0.0 ... v4.4.0, one commit per tag, built with `git fast-import`) in a
temporary folder, then times, median of --repeat runs:

- `tooling.io.tags.discover`: one `git ls-remote --tags` per repository, in the
  thread pool, through the URL rewrites a real run uses (the units' https
  URLs mapped onto the local repositories with `url.<base>.insteadOf`), and the
  same with one worker (sequential) for comparison;
- `invoke outdated --json` as a whole command in a fresh process, on a tree of
  N units, each pinning one of the repositories at v1.0.0.

Every run is checked: each repository must answer with all its tags, and
`outdated` must report every module with the expected latest versions.

Usage (from the repository root, with the environment set up by ./dev setup):

    .venv/bin/python benchmarks/bench_tags.py --repos 50 --tags 20 --repeat 5
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tooling import tags  # noqa: E402
from tooling.io.config import git_rewrite_env  # noqa: E402

BASE = "https://git.example.com/bench-modules/"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def version_tags(count: int) -> list[str]:
    """``count`` tags: majors 1.., minors 0..4 (20 -> v1.0.0 ... v4.4.0)."""
    return [f"v{1 + i // 5}.{i % 5}.0" for i in range(count)]


def build_repo(path: Path, tag_names: list[str]) -> None:
    """One repository, one commit and one annotated tag per version, in one fast-import."""
    subprocess.run(
        ["git", "init", "--quiet", "--bare", str(path)], check=True, env={**os.environ, **GIT_ENV}
    )
    stream: list[str] = []
    when = 1_700_000_000
    for mark, tag in enumerate(tag_names, 1):
        content = f'# {path.name} {tag}\nvariable "name" {{}}\n'
        message = f"release {tag}"
        stream += [
            "commit refs/heads/main",
            f"mark :{mark}",
            f"committer bench <bench@example.invalid> {when + mark} +0000",
            f"data {len(message)}",
            message,
        ]
        if mark > 1:
            stream.append(f"from :{mark - 1}")
        stream += ["M 100644 inline main.tf", f"data {len(content.encode())}", content]
        note = f"{path.name} {tag}: generated release"
        stream += [
            f"tag {tag}",
            f"from :{mark}",
            f"tagger bench <bench@example.invalid> {when + mark} +0000",
            f"data {len(note)}",
            note,
        ]
    subprocess.run(
        ["git", "fast-import", "--quiet"],
        cwd=path,
        input="\n".join(stream) + "\n",
        text=True,
        check=True,
        env={**os.environ, **GIT_ENV},
    )


def build_tree(dest: Path, repos: int) -> None:
    """A repository with one unit per module repository, each pinned at v1.0.0."""
    dest.mkdir(parents=True)
    for name in ("root.hcl", ".tool-versions", "policy.toml", "tasks.py", ".gitignore"):
        shutil.copy2(REPO / name, dest / name)
    for i in range(repos):
        unit = dest / "live" / "bench" / f"m{i:02d}"
        unit.mkdir(parents=True)
        (unit / "terragrunt.hcl").write_text(
            'include "root" {\n  path = find_in_parent_folders("root.hcl")\n}\n\n'
            f'terraform {{\n  source = "git::{BASE}terraform-mod-{i:02d}.git?ref=v1.0.0"\n}}\n'
        )
    env = {**os.environ, **GIT_ENV}
    subprocess.run(
        ["git", "init", "--quiet", "--initial-branch=main"], cwd=dest, check=True, env=env
    )
    subprocess.run(["git", "add", "--all"], cwd=dest, check=True, env=env)
    subprocess.run(["git", "commit", "--quiet", "-m", "bench tree"], cwd=dest, check=True, env=env)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repos", type=int, default=50)
    parser.add_argument("--tags", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    tag_names = version_tags(args.tags)
    # what `outdated` must say for a unit at v1.0.0 (the tags are in ascending order)
    in_major = [t for t in tag_names if t.startswith("v1.") and t != "v1.0.0"]
    expected = (
        in_major[-1] if in_major else None,
        None if tag_names[-1].startswith("v1.") else tag_names[-1],
    )

    with tempfile.TemporaryDirectory(prefix="bench-tags-") as tmp:
        root = Path(tmp)
        modules = root / "modules"
        modules.mkdir()
        start = time.perf_counter()
        for i in range(args.repos):
            build_repo(modules / f"terraform-mod-{i:02d}.git", tag_names)
        build_s = time.perf_counter() - start

        rewrite = ((BASE, modules.as_uri() + "/"),)
        env = git_rewrite_env(rewrite)
        urls = {f"mod-{i:02d}": f"{BASE}terraform-mod-{i:02d}.git" for i in range(args.repos)}

        def discover(jobs: int | None) -> float:
            start = time.perf_counter()
            found = tags.discover(urls, env, jobs=jobs)
            seconds = time.perf_counter() - start
            for key, repo in found.items():
                assert repo.ok, f"{key}: {repo.error}"
                assert sorted(repo.tags) == sorted(tag_names), key
                assert all(t.annotated for t in repo.tags.values())
            return seconds

        parallel = [discover(None) for _ in range(args.repeat)]
        sequential = [discover(1) for _ in range(args.repeat)]

        tree = root / "infra"
        build_tree(tree, args.repos)
        command = [sys.executable, "-m", "invoke", "outdated", "--json"]
        cmd_env = {
            **os.environ,
            **GIT_ENV,
            "IAC_MODULE_SOURCES": "remote",
            "IAC_MODULE_REWRITE": f"{BASE}={modules.as_uri()}/",
        }
        whole = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            result = subprocess.run(
                command, cwd=tree, env=cmd_env, capture_output=True, text=True, check=False
            )
            whole.append(time.perf_counter() - start)
            assert result.returncode == 0, result.stderr
            doc = json.loads(result.stdout)
            assert len(doc["modules"]) == args.repos and not doc["errors"], doc["errors"]
            for module in doc["modules"]:
                assert (module["latest"], module["latest_major"]) == expected, module

    row = {
        "repos": args.repos,
        "tags_per_repo": args.tags,
        "repeat": args.repeat,
        "cpus": os.cpu_count(),
        "build_s": round(build_s, 2),
        "discover_parallel_s": round(statistics.median(parallel), 3),
        "discover_sequential_s": round(statistics.median(sequential), 3),
        "outdated_command_s": round(statistics.median(whole), 3),
    }
    print(json.dumps(row), file=sys.stderr)
    print(
        "| repositories | tags each | discovery, thread pool | discovery, one at a time | "
        "`invoke outdated --json` (whole command) |\n"
        "|--:|--:|--:|--:|--:|\n"
        f"| {args.repos} | {args.tags} | {row['discover_parallel_s']:.2f} s | "
        f"{row['discover_sequential_s']:.2f} s | {row['outdated_command_s']:.2f} s |"
    )


if __name__ == "__main__":
    main()
