"""The one report writer: a guarded, locked folder, atomic redacted writes, the job summary.

Every command that writes a report folder (``invoke plan``, ``drift``, ``apply``,
``app-plan``, ``app-apply``) goes through :class:`ReportDir`:

- **guarded**: before anything is deleted, the folder is checked at every depth
  against what this kind of report writes (a :class:`Layout`); a folder holding
  anything else, the repository, one of its parents, a folder inside ``.git``,
  the home folder or ``/`` is refused;
- **one line for the machine's errors**: a folder that cannot be created or
  written (full disk, read-only file system, a file in the way) is a
  :class:`ToolingError` naming the folder and the cause, never a "bug";
- **emptied late**: :meth:`ReportDir.reset` is called by the command only after
  parsing and preflight succeeded, so a run that fails early keeps the previous
  report;
- **locked**: an OS file lock (``flock``) inside the folder, held for the whole
  run: a second run into the same folder refuses while the first runs. The
  lock dies with its process, so a killed run never leaves it stuck;
- **atomic**: every file is written to a temporary name and renamed;
- **redacted**: every text passes through the process's redaction step
  (:mod:`tooling.io.redacting`, fed by :mod:`tooling.engine.secrets`: secret
  environment variables, and the sensitive values a run learns);
- **job summary**: :meth:`ReportDir.job_summary` appends to
  ``$GITHUB_STEP_SUMMARY``, redacted too.

The same step guards the tooling's own stdout and stderr
(:func:`tooling.io.redacting.guard_streams`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from tooling.errors import ToolingError, UsageError
from tooling.io.redacting import redact, redact_json

LOCK_NAME = ".report.lock"


# --------------------------------------------------------------------------- atomic, redacted writes


def write_text(path: Path, text: str, *, raw: bool = False) -> Path:
    """Write ``text`` (redacted unless ``raw``) to ``path`` atomically: a temporary
    file beside it, then a rename. A crash leaves the old file or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text if raw else redact(text)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise _named(exc, path) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _named(exc: OSError, path: Path) -> OSError:
    """``exc`` with the file it happened on (a failed write of an open file names none)."""
    if exc.filename is not None:
        return exc
    return OSError(exc.errno, exc.strerror, str(path))


def write_json(path: Path, data: Any) -> Path:
    """``data`` as indented JSON, its string values redacted (never its keys or the
    fields that name things: :func:`redact_json`), written atomically."""
    text = json.dumps(redact_json(data, path.name), indent=2, ensure_ascii=False) + "\n"
    return write_text(path, text, raw=True)


def append_text(path: Path, text: str) -> None:
    """Append redacted ``text`` to a log file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with path.open("a", encoding="utf-8") as fh:
            fh.write(redact(text))
    except OSError as exc:
        raise _named(exc, path) from None


def job_summary(markdown: str, environ: Mapping[str, str] | None = None) -> None:
    """Append ``markdown`` (redacted) to the GitHub Actions job summary, when there is one
    (``$GITHUB_STEP_SUMMARY`` of ``environ``, by default the process's environment)."""
    target = (os.environ if environ is None else environ).get("GITHUB_STEP_SUMMARY", "").strip()
    if target:
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(redact(markdown).rstrip("\n") + "\n\n")


def listing(folder: Path, names: Iterable[str], limit: int) -> list[tuple[str, str]]:
    """Every place under ``folder``'s entries ``names`` (those present), at any depth,
    without following a symbolic link: its POSIX path relative to ``folder`` and its kind,
    ``file`` (regular), ``dir``, ``link`` or ``other`` (a pipe, a device, a socket). More
    than ``limit`` places: one-line :class:`ToolingError`."""
    found: list[tuple[str, str]] = []
    stack = [folder / n for n in names if os.path.lexists(folder / n)]
    while stack:
        path = stack.pop()
        if len(found) >= limit:
            raise ToolingError(
                f"{folder}: more than {limit} files and folders under {', '.join(names)}, "
                "more than any plan report holds: pass the folders `invoke plan` wrote"
            )
        try:
            mode = os.lstat(path).st_mode
        except OSError as exc:
            raise ToolingError(os_error_line(folder, _named(exc, path), "read it")) from None
        kind = (
            "link"
            if stat.S_ISLNK(mode)
            else "dir"
            if stat.S_ISDIR(mode)
            else "file"
            if stat.S_ISREG(mode)
            else "other"
        )
        found.append((path.relative_to(folder).as_posix(), kind))
        if kind == "dir":
            try:
                stack.extend(sorted(path.iterdir(), reverse=True))
            except OSError as exc:
                raise ToolingError(os_error_line(folder, _named(exc, path), "read it")) from None
    return found


def copy_regular(source: Path, target: Path) -> None:
    """Copy the regular file ``source`` to the new file ``target`` (its folders made), never
    through a symbolic link at either end: one swapped in since it was listed is refused."""
    target.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        src = os.open(source, os.O_RDONLY | os.O_NONBLOCK | flags)
    except OSError as exc:
        raise ToolingError(
            f"{source}: cannot be copied ({exc.strerror}): it changed while it was merged; "
            "merge again"
        ) from None
    with os.fdopen(src, "rb") as reader:
        if not stat.S_ISREG(os.fstat(reader.fileno()).st_mode):
            raise ToolingError(
                f"{source}: not a regular file any more: it changed while it was merged; merge again"
            )
        try:
            dst = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | flags, 0o600)
        except OSError as exc:
            raise _named(exc, target) from None
        with os.fdopen(dst, "wb") as writer:
            shutil.copyfileobj(reader, writer)


# --------------------------------------------------------------------------- the guarded folder


@dataclass(frozen=True)
class Layout:
    """What one kind of report writes: top-level files, and folders of per-unit
    folders (any depth: unit paths have several parts) holding only ``unit_files``."""

    what: str
    files: frozenset[str]
    unit_dirs: frozenset[str] = frozenset()
    unit_files: frozenset[str] = field(default_factory=frozenset)

    def allows_file(self, rel: Path) -> bool:
        name = rel.name
        if name == LOCK_NAME and len(rel.parts) == 1:
            return True
        if _is_temp_of(name, self.files | self.unit_files):
            return True
        if len(rel.parts) == 1:
            return name in self.files
        return rel.parts[0] in self.unit_dirs and name in self.unit_files

    def allows_dir(self, rel: Path) -> bool:
        return rel.parts[0] in self.unit_dirs


def _is_temp_of(name: str, names: Iterable[str]) -> bool:
    """``NAME.tmp`` (older writers) or ``.NAME.<random>.tmp`` (:func:`write_text`)."""
    return name.endswith(".tmp") and any(
        name == f"{n}.tmp" or name.startswith(f".{n}.") for n in names
    )


def foreign_entries(folder: Path, layout: Layout, limit: int = 4) -> list[str]:
    """Entries under ``folder`` (at any depth) that a ``layout`` report never writes.

    Symbolic links are always foreign: emptying the folder must never follow one.
    """
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        here = Path(dirpath)
        for name in sorted(dirnames):
            full = here / name
            rel = full.relative_to(folder)
            if full.is_symlink() or not layout.allows_dir(rel):
                found.append(rel.as_posix() + ("" if full.is_symlink() else "/"))
                dirnames.remove(name)
        for name in sorted(filenames):
            full = here / name
            rel = full.relative_to(folder)
            if full.is_symlink() or not layout.allows_file(rel):
                found.append(rel.as_posix())
        if len(found) >= limit:
            break
    return found[:limit]


def protected_reason(folder: Path, root: Path) -> str | None:
    """Why ``folder`` may never be a report folder (None: it may)."""
    folder = folder.resolve()
    root = root.resolve()
    home = Path.home().resolve()
    if folder == Path(folder.anchor):
        return "it is the file system's root"
    if folder == root:
        return "it is the repository"
    if root.is_relative_to(folder):
        return "it holds the repository"
    if home.is_relative_to(folder):
        return "it is the home folder" if folder == home else "it holds the home folder"
    if (folder / ".git").exists():
        return "it is a git working copy"
    if ".git" in folder.parts:
        return "it is inside a .git folder (git would read what is written there as its own data)"
    return None


def os_error_line(folder: Path, exc: OSError, doing: str) -> str:
    """One line for an OS error on a report folder: the folder, what failed, why, what to do."""
    where = f" ({exc.filename})" if exc.filename and Path(exc.filename) != folder else ""
    cause = exc.strerror or type(exc).__name__
    return (
        f"{folder}: cannot {doing}{where}: {cause}. "
        "Free space, make the folder writable, or name another folder"
    )


def inside(path: object, folder: Path) -> bool:
    """Whether the file name an OS error carries is ``folder`` or below it."""
    if not isinstance(path, str | bytes | os.PathLike):
        return False
    return Path(os.fsdecode(path)).resolve().is_relative_to(folder)


class ReportDir:
    """One report folder for the duration of a run: checked, locked, written safely.

    Use as a context manager::

        with ReportDir.claim(out, PLAN_LAYOUT, root=ws.root) as report:
            ...parse, preflight...
            report.reset()          # only now is the old report removed
            report.write_text("comment.md", text)
    """

    def __init__(self, path: Path, layout: Layout, root: Path) -> None:
        self.path = path.resolve()
        self.layout = layout
        self.root = root
        self._lock_fh: TextIO | None = None

    # -- claiming
    @classmethod
    def claim(cls, path: Path, layout: Layout, *, root: Path) -> ReportDir:
        """Check ``path`` (nothing deleted yet), create it if missing, and take its lock."""
        report = cls(path, layout, root)
        report.check()
        try:
            report.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ToolingError(
                os_error_line(report.path, exc, f"create the {layout.what} folder")
            ) from None
        report._lock()
        report.check()  # again under the lock: another run may have written meanwhile
        return report

    @classmethod
    def existing(cls, path: Path, layout: Layout, *, root: Path) -> ReportDir:
        """Lock an existing report folder to add to it (apply writes into its plans folder)."""
        report = cls(path, layout, root)
        if not report.path.is_dir():
            raise ToolingError(f"{path}: no such folder")
        if ".git" in report.path.parts:
            raise UsageError(
                f"{path}: it is inside a .git folder; name the folder `invoke plan --out` wrote"
            )
        report._lock()
        return report

    def check(self) -> None:
        flag = "--out"
        if self.path.exists() and not self.path.is_dir():
            raise UsageError(
                f"{flag} {self.path}: not a folder; name a new or empty folder for the {self.layout.what}"
            )
        why = protected_reason(self.path, self.root)
        if why:
            raise UsageError(
                f"{flag} {self.path}: {why}; name a new or empty folder for the {self.layout.what}"
            )
        if self.path.is_dir():
            foreign = foreign_entries(self.path, self.layout)
            if foreign:
                shown = ", ".join(foreign[:3]) + (" …" if len(foreign) > 3 else "")
                raise UsageError(
                    f"{flag} {self.path} holds {shown}, which a {self.layout.what} does not write: "
                    "it would be deleted when the folder is emptied. Name a new or empty folder."
                )

    def _lock(self) -> None:
        lock_path = self.path / LOCK_NAME
        try:
            fh = lock_path.open("a+", encoding="utf-8")
        except OSError as exc:
            raise ToolingError(os_error_line(self.path, exc, "write to it")) from None
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            fh.close()
            raise ToolingError(
                f"{self.path}: another run is writing to this folder ({holder}). "
                "Wait for it to finish, or name another folder."
            ) from None
        try:
            fh.seek(0)
            fh.truncate()
            fh.write(f"pid {os.getpid()}\n")
            fh.flush()
        except OSError as exc:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
            with contextlib.suppress(OSError):  # closing flushes the same text again
                fh.close()
            raise ToolingError(
                os_error_line(self.path, _named(exc, lock_path), "write to it")
            ) from None
        self._lock_fh = fh

    def close(self) -> None:
        if self._lock_fh is not None:
            fcntl.flock(self._lock_fh.fileno(), fcntl.LOCK_UN)
            self._lock_fh.close()
            self._lock_fh = None

    def __enter__(self) -> ReportDir:
        return self

    def __exit__(self, kind: object, exc: BaseException | None, _tb: object) -> None:
        self.close()
        # a full disk, a read-only file system, a file where a folder should be:
        # one line naming this folder and the cause, not a bug report
        if isinstance(exc, OSError) and (
            inside(exc.filename, self.path) or inside(exc.filename2, self.path)
        ):
            raise ToolingError(
                os_error_line(self.path, exc, f"write the {self.layout.what}")
            ) from None

    # -- emptying
    def reset(self) -> None:
        """Empty the folder for a new report (keeping the lock). Checked once more first."""
        if self._lock_fh is None:
            raise ToolingError(f"{self.path}: reset without the folder's lock")
        self.check()
        try:
            for entry in self.path.iterdir():
                if entry.name == LOCK_NAME:
                    continue
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
        except OSError as exc:
            raise ToolingError(os_error_line(self.path, exc, "empty it")) from None

    # -- writing
    def file(self, rel: str | Path) -> Path:
        return self.path / rel

    def write_text(self, rel: str | Path, text: str) -> Path:
        return write_text(self.path / rel, text)

    def write_json(self, rel: str | Path, data: Any) -> Path:
        return write_json(self.path / rel, data)

    def append(self, rel: str | Path, text: str) -> None:
        append_text(self.path / rel, text)

    def job_summary(self, markdown: str) -> None:
        job_summary(markdown)


#: `invoke plan --out DIR` (and `invoke apply` after it, and `invoke app-plan`/`app-apply`)
PLAN_LAYOUT = Layout(
    "plan report",
    frozenset({"summary.json", "comment.md", "apply.json", "apply.md"}),
    frozenset({"units", "cascade"}),
    frozenset({"plan.tfplan", "plan.txt", "plan.log", "apply.log"}),
)

#: `invoke drift --out DIR`
DRIFT_LAYOUT = Layout(
    "drift report",
    frozenset({"drift.json", "drift.md"}),
    frozenset({"units"}),
    frozenset({"plan.tfplan", "plan.txt", "plan.log"}),
)


def reset(out_dir: Path, root: Path, expected: Iterable[str], what: str) -> None:
    """Empty ``out_dir`` for a new report, refusing what :class:`ReportDir` refuses.

    Kept for callers that do not hold the folder for a whole run; new code uses
    :class:`ReportDir` (the lock, and emptying only after preflight).
    """
    names = frozenset(expected)
    layout = DRIFT_LAYOUT if "drift.json" in names else PLAN_LAYOUT
    layout = Layout(
        what, layout.files | {n for n in names if "." in n}, layout.unit_dirs, layout.unit_files
    )
    with ReportDir.claim(out_dir, layout, root=root) as report:
        report.reset()
