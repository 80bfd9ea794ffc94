"""A Terragrunt repository adopting the tooling, as a new user meets it.

Real parts only: the example tree copied into throwaway git repositories (with
no .gitignore of their own, as an adopted repository has), the real ``invoke``
CLI in a separate process, the pinned tofu/terragrunt, and for the commands
that must work before the tools exist, a Python environment whose ``bin``
holds no tool with ``PATH`` holding only git.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from infra_fixtures import GIT_ENV, REPO, commit_all, git, invoke

from tooling.io import sandbox

MODULE = "terraform-proxmox"


def adopted_copy(dest: Path, *, commit: bool = True) -> Path:
    """The example tree as an adopted repository: no .gitignore mentioning the tool's folders."""
    dest.mkdir(parents=True)
    for name in ("root.hcl", "policy.toml", ".tool-versions", "tasks.py"):
        shutil.copy2(REPO / name, dest / name)
    shutil.copytree(
        REPO / "live", dest / "live", ignore=shutil.ignore_patterns(".terragrunt-cache")
    )
    # Terragrunt's own folder is the repository's to ignore, as Terragrunt's docs say
    (dest / ".gitignore").write_text(".terragrunt-cache/\n", encoding="utf-8")
    if commit:
        git(dest, "init", "--quiet", "--initial-branch=main")
        commit_all(dest, "adopted foundation")
    return dest


# --------------------------------------------------------------------------- the tool's folder


def _next_minor(module: str, current: str) -> str:
    def key(tag: str) -> tuple[int, ...]:
        return tuple(int(n) for n in tag.lstrip("v").split("."))

    tags = [r.tag for r in sandbox.releases(sandbox.CATALOG / module)]
    return max((t for t in tags if key(t)[0] == key(current)[0] and key(t) > key(current)), key=key)


def test_the_tools_folder_ignores_itself_so_a_bump_finds_a_clean_tree(
    tmp_path: Path, tools: None
) -> None:
    repo = adopted_copy(tmp_path / "infra")
    listed = invoke(repo, "units", "--json")
    assert listed.returncode == 0, listed.output
    assert (repo / ".iac").is_dir()  # the model's cache was written there
    assert (repo / ".iac" / ".gitignore").read_text(encoding="utf-8").splitlines()[-1] == "*"
    assert git(repo, "status", "--porcelain", "--untracked-files=all").strip() == ""

    pins = {u["ref"] for u in json.loads(listed.stdout)["units"] if MODULE in (u["source"] or "")}
    target = _next_minor(MODULE, min(pins))
    bumped = invoke(repo, "bump-module", MODULE, target)

    assert bumped.returncode == 0, bumped.output
    assert (
        git(repo, "log", "-1", "--format=%s").strip() == f"chore(deps): bump {MODULE} to {target}"
    )
    assert git(repo, "status", "--porcelain", "--untracked-files=all").strip() == ""


def test_clean_runner_keeps_the_folders_own_gitignore_beside_local_state(tmp_path: Path) -> None:
    from tooling.engine.apply.safety import clean_runner

    repo = adopted_copy(tmp_path / "infra", commit=False)
    from tooling.io.workspace import mark_private

    iac = mark_private(repo)
    (iac / "state" / "live").mkdir(parents=True)
    (iac / "state" / "live" / "terraform.tfstate").write_text("{}", encoding="utf-8")
    (iac / "plans").mkdir()

    clean_runner(repo, [])

    assert not (iac / "plans").exists()
    assert (iac / "state" / "live" / "terraform.tfstate").is_file()
    assert (iac / ".gitignore").is_file()


# --------------------------------------------------------------------------- no tools installed


@pytest.fixture(scope="module")
def toolless_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Python environment that imports this tooling but whose ``bin`` holds no tofu,
    terragrunt or actionlint (the tooling looks there and on PATH)."""
    env_dir = tmp_path_factory.mktemp("toolless") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True)
    python = env_dir / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    ours = sysconfig.get_path("purelib")
    Path(site, "iac-under-test.pth").write_text(
        f"import site; site.addsitedir({ours!r})\n", encoding="utf-8"
    )
    assert not any((env_dir / "bin" / tool).exists() for tool in ("tofu", "terragrunt"))
    return python


def _run_toolless(python: Path, repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    git_only = repo.parent / "git-only"
    git_only.mkdir(exist_ok=True)
    git_exe = shutil.which("git")
    assert git_exe is not None
    if not (git_only / "git").exists():
        (git_only / "git").symlink_to(git_exe)
    env = {
        "HOME": os.environ.get("HOME", str(repo.parent)),
        "PATH": str(git_only),
        "IAC_CACHE_DIR": str(repo.parent / "empty-tool-cache"),
        **GIT_ENV,
    }
    return subprocess.run(
        [str(python), "-m", "invoke", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("units", "--json"), "live/cluster/gitops"),
        (("graph",), "live/cloud/dns"),
        (("affected", "--json"), '"units"'),
        (("matrix",), '"include"'),
        (("check",), "no violations"),
        (("doctor",), "ready to adopt"),
    ],
)
def test_read_only_commands_work_before_the_tools_are_installed(
    tmp_path: Path, toolless_python: Path, args: tuple[str, ...], expected: str
) -> None:
    repo = adopted_copy(tmp_path / "infra")
    result = _run_toolless(toolless_python, repo, *args)
    assert result.returncode == 0, result.stdout + result.stderr
    assert expected in result.stdout + result.stderr


def test_plan_without_the_tools_names_each_missing_one_in_one_line(
    tmp_path: Path, toolless_python: Path
) -> None:
    repo = adopted_copy(tmp_path / "infra")
    result = _run_toolless(toolless_python, repo, "plan", "--all")
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    assert "tofu not found on PATH" in errors[0]
    assert "terragrunt not found on PATH" in errors[0]
    assert "invoke setup" in errors[0]
    assert result.stderr.rstrip().endswith(errors[0])  # nothing after it
    assert not (repo / ".iac" / "plans").exists()


# --------------------------------------------------------------------------- messages


def test_outside_any_git_repository_the_error_is_one_line_saying_what_to_do(
    tmp_path: Path, tools: None
) -> None:
    repo = adopted_copy(tmp_path / "infra", commit=False)
    result = invoke(repo, "affected")
    assert result.returncode == 1
    assert "fatal:" not in result.stderr
    assert "rev-parse" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1
    assert "not inside a git repository" in errors[0]
    assert "git init" in errors[0]


@pytest.mark.parametrize("args", [("affected",), ("plan",), ("affected", "--base", "HEAD")])
def test_a_repository_without_a_commit_is_told_to_commit_first(
    tmp_path: Path, tools: None, args: tuple[str, ...]
) -> None:
    repo = adopted_copy(tmp_path / "infra", commit=False)
    git(repo, "init", "--quiet", "--initial-branch=main")
    result = invoke(repo, *args)
    assert result.returncode == 1
    assert "fetch it" not in result.stderr
    assert "no commit yet" in result.stderr
    assert "git commit" in result.stderr


def test_an_unknown_unit_gets_the_closest_names(tmp_path: Path, tools: None) -> None:
    repo = adopted_copy(tmp_path / "infra")
    typo = invoke(repo, "plan", "--unit", "live/cloud/dsn")
    assert typo.returncode == 2
    assert "no unit at live/cloud/dsn. Did you mean live/cloud/dns?" in typo.stderr
    short = invoke(repo, "plan", "--unit", "cloud/dns")
    assert short.returncode == 2
    assert "Did you mean live/cloud/dns?" in short.stderr
    far = invoke(repo, "plan", "--unit", "live/zzz")
    assert far.returncode == 2
    assert "Did you mean" not in far.stderr
    assert "invoke units" in far.stderr


def test_an_unknown_task_gets_the_closest_names(tmp_path: Path) -> None:
    result = invoke(REPO, "plna")
    assert result.returncode == 2
    assert "Did you mean plan?" in result.stderr
    dashed = invoke(REPO, "bump_modul")
    assert dashed.returncode == 2
    assert "Did you mean bump-module" in dashed.stderr
    far = invoke(REPO, "xyzzy")
    assert far.returncode == 2
    assert "Did you mean" not in far.stderr
