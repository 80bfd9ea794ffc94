"""What the benchmark scripts share: a git identity for the trees they build, one runner,
and a committed copy of the example tree."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}


def cpu() -> float:
    """CPU seconds (user + system) of this process and of every child process it waited
    for, so far."""
    return sum(
        r.ru_utime + r.ru_stime
        for r in (
            resource.getrusage(resource.RUSAGE_SELF),
            resource.getrusage(resource.RUSAGE_CHILDREN),
        )
    )


def sh(
    cwd: Path, *args: str, env: dict[str, str] | None = None, check: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run ``args`` in ``cwd`` with the bench identity; with ``check``, stop the benchmark on failure."""
    result = subprocess.run(
        args,
        cwd=cwd,
        env={**os.environ, **GIT_ENV, **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )
    if check and result.returncode != 0:
        raise SystemExit(
            f"{' '.join(args)} failed ({result.returncode}):\n"
            f"{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
        )
    return result


def example_tree(dest: Path) -> Path:
    """A git repository at ``dest`` holding the example (root.hcl, live/, policy.toml and
    what the tasks need), committed once, no working copies."""
    dest.mkdir(parents=True)
    for name in ("root.hcl", ".tool-versions", "policy.toml", "tasks.py", ".gitignore"):
        shutil.copy2(REPO / name, dest / name)
    shutil.copytree(
        REPO / "live", dest / "live", ignore=shutil.ignore_patterns(".terragrunt-cache")
    )
    sh(dest, "git", "init", "--quiet", "--initial-branch=main", check=True)
    sh(dest, "git", "add", "--all", check=True)
    sh(dest, "git", "commit", "--quiet", "-m", "example", check=True)
    return dest


#: the real provider the benchmarks' "time" variant plans with: the one the lock file
#: tests build from its Go module (tests/infra_fixtures.py), cached by version
TIME_PROVIDER = ("registry.opentofu.org/hashicorp/time", "0.14.2", "linux_amd64")


def time_provider_mirror(dest: Path) -> dict[str, str]:
    """A filesystem mirror at ``dest`` holding the ``hashicorp/time`` provider, and the
    environment that installs every provider from it only (offline)."""
    from tooling.io.config import cache_root

    address, version, platform = TIME_PROVIDER
    name = f"terraform-provider-{address.rsplit('/', 1)[1]}"
    built = cache_root() / "providers-src" / name / version / platform / name
    if not built.is_file():
        raise SystemExit(
            f"{built}: the {name} provider is not built yet; build it once with "
            "`.venv/bin/python -m pytest tests/test_bump_locks_e2e.py -p no:xdist` "
            "(needs the Go toolchain), or run the benchmark with --variants builtin"
        )
    folder = dest / address / version / platform
    folder.mkdir(parents=True)
    shutil.copy2(built, folder / f"{name}_v{version}")
    cli_config = dest.parent / f"{dest.name}.tfrc"
    cli_config.write_text(
        f'provider_installation {{\n  filesystem_mirror {{\n    path = "{dest}"\n  }}\n}}\n',
        encoding="utf-8",
    )
    return {"TF_CLI_CONFIG_FILE": str(cli_config), "IAC_PROVIDER_MIRROR": str(dest)}
