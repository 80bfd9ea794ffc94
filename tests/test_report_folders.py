"""Report folders that cannot be written say so: a folder inside ``.git`` is refused,
and every OS error on a report folder (a file where a folder should be, a full
disk, a read-only file system) is one line naming the folder and the cause,
exit 1, never the catch-all's "bug" line.

Real tofu and terragrunt; the full and read-only file systems are real tmpfs
mounts (skipped, saying why, where mounting is not allowed).
"""

from __future__ import annotations

import errno
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from infra_fixtures import Invoked, git, invoke

pytestmark = pytest.mark.e2e

UNIT = "live/cloud/dns"


def _errors(ran: Invoked) -> list[str]:
    return [line for line in ran.stderr.splitlines() if line.startswith("error:")]


def _one_line_naming(ran: Invoked, folder: Path, cause: str) -> None:
    assert "Traceback" not in ran.output, ran.output
    assert "bug in the tooling" not in ran.output, ran.output
    assert ran.returncode == 1, ran.output
    (line,) = _errors(ran)
    assert str(folder) in line and cause in line, line


@contextmanager
def tmpfs(where: Path, *options: str) -> Iterator[Path]:
    """A real tmpfs mounted at ``where`` (``options`` as ``mount -o`` takes them)."""
    where.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", ",".join(options or ("size=1m",)), "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, check=False)


def _fill(folder: Path) -> None:
    """Write into ``folder`` until its file system is full."""
    try:
        with (folder / "filler").open("wb") as fh:
            while True:
                fh.write(b"\0" * 4096)
                fh.flush()
    except OSError as exc:
        assert exc.errno == errno.ENOSPC, exc


# --------------------------------------------------------------------------- inside .git


@pytest.mark.parametrize(
    "argv",
    [
        ("plan", "--unit", UNIT),
        ("drift",),
        ("app-plan", "--app", "sample", "--dir", "APP"),
    ],
    ids=["plan", "drift", "app-plan"],
)
@pytest.mark.parametrize("out", [".git/refs/tags", ".git", ".git/new/reports"])
def test_a_report_folder_inside_git_is_refused_and_git_is_left_alone(
    example_repo: Path, tmp_path: Path, argv: tuple[str, ...], out: str
) -> None:
    app = tmp_path / "app"
    app.mkdir()
    (app / "main.tf").write_text('resource "terraform_data" "x" {\n  input = "x"\n}\n')
    argv = tuple(str(app) if a == "APP" else a for a in argv)
    refs = git(example_repo, "for-each-ref")
    listing = sorted(p.relative_to(example_repo) for p in (example_repo / ".git").rglob("*"))
    ran = invoke(example_repo, *argv, "--out", out)
    assert ran.returncode == 2, ran.output
    (line,) = _errors(ran)
    assert ".git" in line and "name a new or empty folder" in line, line
    assert git(example_repo, "for-each-ref") == refs
    # nothing created or left behind under .git (the index may be refreshed by git itself)
    after = sorted(p.relative_to(example_repo) for p in (example_repo / ".git").rglob("*"))
    assert [p for p in after if p.name != "index"] == [p for p in listing if p.name != "index"]
    assert "warning" not in git(example_repo, "tag", "--list")


def test_apply_refuses_a_plans_folder_inside_git(example_repo: Path) -> None:
    out = example_repo / ".git" / "plans"
    assert invoke(example_repo, "plan", "--unit", UNIT, "--out", ".iac/plans").returncode == 0
    # a plan report copied inside .git by hand: apply would write apply.json there
    subprocess.run(["cp", "-a", str(example_repo / ".iac/plans"), str(out)], check=True)
    ran = invoke(example_repo, "apply", "--plans", str(out))
    assert ran.returncode == 2, ran.output
    (line,) = _errors(ran)
    assert ".git" in line, line
    assert not (out / "apply.json").exists()


# --------------------------------------------------------------------------- OS errors


def test_a_report_folder_below_a_regular_file_is_one_line_naming_it(
    example_repo: Path, tmp_path: Path
) -> None:
    blocker = tmp_path / "regular-file"
    blocker.write_text("not a folder\n")
    out = blocker / "sub"
    ran = invoke(example_repo, "plan", "--unit", UNIT, "--out", str(out))
    _one_line_naming(ran, out, "Not a directory")
    assert blocker.read_text() == "not a folder\n"


def test_a_full_disk_is_one_line_naming_the_report_folder(
    example_repo: Path, tmp_path: Path
) -> None:
    with tmpfs(tmp_path / "disk", "size=256k") as disk:
        out = disk / "plans"
        out.mkdir()
        _fill(disk)
        ran = invoke(example_repo, "plan", "--unit", UNIT, "--out", str(out))
    _one_line_naming(ran, out, "No space left on device")


def test_a_read_only_report_folder_is_one_line_naming_it(
    example_repo: Path, tmp_path: Path
) -> None:
    with tmpfs(tmp_path / "ro", "ro", "size=64k") as ro:
        out = ro / "plans"
        ran = invoke(example_repo, "plan", "--unit", UNIT, "--out", str(out))
    _one_line_naming(ran, out, "Read-only file system")


def test_apply_into_a_plans_folder_made_read_only_is_one_line_naming_it(
    example_repo: Path, tmp_path: Path
) -> None:
    with tmpfs(tmp_path / "media", "size=4m") as media:
        out = media / "plans"
        assert invoke(example_repo, "plan", "--unit", UNIT, "--out", str(out)).returncode == 0
        subprocess.run(["mount", "-o", "remount,ro", str(media)], check=True)
        ran = invoke(example_repo, "apply", "--plans", str(out))
        assert not (out / "apply.json").exists()
    _one_line_naming(ran, out, "Read-only file system")


@pytest.mark.parametrize(
    "argv",
    [("units",), ("affected",), ("check",), ("plan", "--unit", UNIT)],
    ids=["units", "affected", "check", "plan"],
)
def test_a_read_only_tool_folder_is_one_line_naming_it_for_every_task(
    example_repo: Path, argv: tuple[str, ...]
) -> None:
    # .iac/ holds the model cache, the local state and the default report folders
    with tmpfs(example_repo / ".iac", "ro", "size=64k"):
        ran = invoke(example_repo, *argv)
    _one_line_naming(ran, example_repo / ".iac" / "cache", "Read-only file system")
