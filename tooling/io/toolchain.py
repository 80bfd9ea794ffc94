"""Installing and checking the pinned command-line tools: OpenTofu, Terragrunt, actionlint, act.

``.tool-versions`` pins one exact version per tool (read by
:func:`tooling.model.tools.read_tool_versions`, the one reader). Two entry
points serve ``tasks.py``:

- :func:`setup` installs every pinned tool and links it into the ``bin``
  directory of the active Python environment. For each tool it takes the first
  of: a binary already in the cache, a binary of the right version already on
  ``PATH``, the official release verified against its published checksum file
  (:mod:`tooling.io.release`), or a build from the Go module
  (:mod:`tooling.io.gobuild`, needs ``go``). A tool without a release asset
  pattern (act) is only ever built. An install holds a lock
  (``<cache>/locks/<tool>-<version>.lock``), so two concurrent set-ups never
  build the same tool twice: the second waits, says so, then finds it cached.
  A warm set-up prints nothing here.
- :func:`check_versions` runs before every other task and refuses, with an
  actionable message, when a tool on ``PATH`` is missing or of another
  version. Its answer is cached in ``<cache>/version-check.json`` keyed by the
  binary's resolved path, size and mtime, so a warm check only stats files and
  never starts a process.

The cache directory is ``$IAC_CACHE_DIR``, else
``${XDG_CACHE_HOME:-~/.cache}/iac-tooling``; binaries live at
``<cache>/tools/<tool>/<version>/<binary>``.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tooling.errors import ToolingError
from tooling.io import gobuild, proc, release
from tooling.io.binpath import on_path as _on_path
from tooling.io.binpath import scripts_dir
from tooling.io.config import cache_root
from tooling.io.ui import say
from tooling.model.tools import (
    EXACT_VERSION,
    GITHUB,
    RUN_TOOLS,
    SETUP_HINT,
    TOOL_VERSIONS_FILE,
    TOOLS,
    Tool,
    get_tool,
    go_platform,
    read_tool_versions,
)

#: seconds for ``<tool> --version`` and friends
PROBE_TIMEOUT = 60.0

Source = Literal["cache", "path", "download", "build"]


def host_platform() -> tuple[str, str]:
    """Go's ``(GOOS, GOARCH)`` of this machine."""
    import platform

    return go_platform(sys.platform, platform.machine())


# --------------------------------------------------------------------------
# cache


def cached_binary(name: str, version: str, cache: Path | None = None) -> Path:
    """Where the cache keeps ``name`` ``version``: ``<cache>/tools/<tool>/<version>/<binary>``."""
    tool = get_tool(name)
    return (cache or cache_root()) / "tools" / tool.name / version / tool.binary


def cache_key(binary: Path | str) -> str:
    """``<resolved path>|<size>|<mtime_ns>`` of ``binary``: changes whenever the file does."""
    real = os.path.realpath(binary)
    st = os.stat(real)
    return f"{real}|{st.st_size}|{st.st_mtime_ns}"


class _VersionMemo:
    """``<cache>/version-check.json``: the version each binary reported, by cache key."""

    def __init__(self, cache: Path) -> None:
        self.file = cache / "version-check.json"
        self.entries: dict[str, dict[str, str]] = {}
        self.dirty = False
        try:
            data = json.loads(self.file.read_text(encoding="utf-8"))
            entries = data.get("entries", {}) if data.get("format") == 1 else {}
            if isinstance(entries, dict):
                self.entries = {
                    k: v for k, v in entries.items() if isinstance(k, str) and isinstance(v, dict)
                }
        except (OSError, ValueError, AttributeError):
            pass  # no memo yet, or an unreadable one: start afresh

    def get(self, tool: str, key: str) -> str | None:
        entry = self.entries.get(key)
        if entry and entry.get("tool") == tool and isinstance(entry.get("version"), str):
            return entry["version"]
        return None

    def put(self, tool: str, key: str, version: str) -> None:
        path = key.rsplit("|", 2)[0]
        for old in [k for k in self.entries if k.rsplit("|", 2)[0] == path]:
            del self.entries[old]
        self.entries[key] = {"tool": tool, "version": version}
        self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        tmp = self.file.with_name(f".{self.file.name}.{os.getpid()}.tmp")
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(
                json.dumps({"format": 1, "entries": self.entries}, indent=1, sort_keys=True),
                encoding="utf-8",
            )
            os.replace(tmp, self.file)
            self.dirty = False
        except OSError:
            tmp.unlink(missing_ok=True)  # a cache that cannot be written only costs speed


def _run_version(tool: Tool, binary: Path) -> str:
    """Run the version command of ``binary`` and parse its output."""
    try:
        result = proc.run(
            [str(binary), *tool.version_args],
            env={"CHECKPOINT_DISABLE": "1"},
            timeout=PROBE_TIMEOUT,
        )
    except proc.CalledProcessError as exc:
        raise ToolingError(
            f"{binary} {' '.join(tool.version_args)} failed with exit code {exc.result.returncode}"
        ) from exc
    except OSError as exc:  # not executable, wrong architecture, ...
        raise ToolingError(f"{binary} does not run: {exc}") from exc
    return tool.parse_version(result.stdout + "\n" + result.stderr)


def _probe(tool: Tool, binary: Path, memo: _VersionMemo) -> str:
    """The version of ``binary``, from the memo when the file is unchanged."""
    try:
        key = cache_key(binary)
    except OSError as exc:
        raise ToolingError(f"{binary} cannot be read: {exc}") from exc
    known = memo.get(tool.name, key)
    if known is not None:
        return known
    version = _run_version(tool, binary)
    memo.put(tool.name, key, version)
    return version


# --------------------------------------------------------------------------
# pins and checks


@dataclass(frozen=True)
class InstalledTool:
    name: str  #: key in ``.tool-versions``
    binary: str
    version: str
    path: Path  #: the binary that was found or installed
    source: Source  #: where it came from
    link: Path | None = None  #: its entry in the environment's ``bin`` directory


def pin_file(repo_root: Path) -> Path:
    """The ``.tool-versions`` that pins the tools of the project at ``repo_root``: its own,
    else the nearest one above it up to git's top level (where asdf and mise keep it for
    a project root in a sub-folder); its own path when there is none."""
    own = Path(repo_root) / TOOL_VERSIONS_FILE
    if own.is_file():
        return own
    for folder in Path(repo_root).resolve().parents:
        if (folder / TOOL_VERSIONS_FILE).is_file():
            return folder / TOOL_VERSIONS_FILE
        if (folder / ".git").exists():  # git's top level: no further
            break
    return own


def read_pins(repo_root: Path, *, test_tools: bool = False) -> list[tuple[Tool, str]]:
    """The managed tools pinned in the project's ``.tool-versions`` (:func:`pin_file`),
    with their versions.

    Lines for other tools (python, nodejs, ...) are ignored, and so are the
    tools only the tests use (act) unless ``test_tools``: a plan records and
    an apply checks the versions of the tools that made it, not of act.
    """
    path = pin_file(repo_root)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ToolingError(
            f"{path} not found: pin the tool versions at the project root (or git's top "
            f"level), one '<tool> <version>' line each for {' and '.join(RUN_TOOLS)}."
        ) from None
    read = read_tool_versions(text)
    read.raise_problems(path)
    pins = []
    for name, pin in read.pins.items():
        if name not in TOOLS or (TOOLS[name].test_only and not test_tools):
            continue
        if not pin.exact:
            raise ToolingError(
                f"{path}:{pin.line}: {name} {pin.version!r} is not an exact version: "
                f"pin one like '{name} 1.2.3' (no 'v', no 'latest')."
            )
        pins.append((TOOLS[name], pin.version))
    return pins


def check_versions(repo_root: Path, *, cache: Path | None = None) -> list[InstalledTool]:
    """Check that every tool pinned in ``.tool-versions`` is on ``PATH`` in that version.

    Raises :class:`ToolingError` naming the pinned and the found version of
    each tool that is missing or differs. Warm calls only stat files: the
    version each binary reports is cached by its path, size and mtime.
    """
    pins = read_pins(repo_root)
    pinned_by = pin_file(repo_root)
    memo = _VersionMemo(cache or cache_root())
    found: list[InstalledTool] = []
    problems: list[str] = []
    for tool, version in pins:
        exe = shutil.which(tool.binary)
        if exe is None:
            problems.append(
                f"{tool.binary} not found on PATH ({pinned_by} pins {tool.name} {version})"
            )
            continue
        try:
            got = _probe(tool, Path(exe), memo)
        except ToolingError as exc:
            problems.append(
                f"{tool.name}: {pinned_by} pins {version}, but {exe} is unusable: {exc}"
            )
            continue
        if got != version:
            problems.append(f"{tool.name}: {pinned_by} pins {version}, but {exe} is {got}")
            continue
        found.append(InstalledTool(tool.name, tool.binary, version, Path(exe), "path"))
    memo.save()
    if problems:
        hint = SETUP_HINT
        bin_dir = scripts_dir()
        if not _on_path(bin_dir):
            hint += f" Then put {bin_dir} first on PATH (activate the virtual environment)."
        # one line, whatever is missing: the command that runs the tools stops here
        raise ToolingError(
            f"this command runs the pinned tools, which PATH does not match: {'; '.join(problems)}. "
            + hint
        )
    return found


# --------------------------------------------------------------------------
# installing


def _path_candidates(binary: str) -> Iterator[Path]:
    """Every executable called ``binary`` on ``PATH``, in order, once per real file."""
    seen: set[str] = set()
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if not entry:
            continue
        candidate = Path(entry) / binary
        if not (candidate.is_file() and os.access(candidate, os.X_OK)):
            continue
        real = os.path.realpath(candidate)
        if real not in seen:
            seen.add(real)
            yield candidate


def _link(tool: Tool, version: str, binary: Path, bin_dir: Path) -> Path:
    """Make ``<bin_dir>/<binary name>`` run ``binary``: a symlink, else a copy."""
    link = bin_dir / tool.binary
    if os.path.lexists(link):
        if link.is_symlink() and os.readlink(link) == str(binary):
            return link
        if not link.is_symlink() and link.exists() and os.path.samefile(link, binary):
            return link  # the binary found on PATH is this very file
    bin_dir.mkdir(parents=True, exist_ok=True)
    tmp = bin_dir / f".{tool.binary}.{os.getpid()}.tmp"
    tmp.unlink(missing_ok=True)
    try:
        os.symlink(binary, tmp)
        how = "linked"
    except OSError:
        shutil.copy2(binary, tmp)
        how = "copied"
    os.replace(tmp, link)
    if how == "copied":  # a symlink is what the user expects; a copy goes stale on upgrades
        say(f"{tool.binary} {version}: copied to {link} (symbolic links are not supported here)")
    return link


def lock_file(cache: Path, tool: Tool, version: str) -> Path:
    """The lock an install of ``tool`` ``version`` holds."""
    return cache / "locks" / f"{tool.name}-{version}.lock"


@contextmanager
def install_lock(cache: Path, tool: Tool, version: str) -> Iterator[None]:
    """Hold the install lock of ``tool`` ``version``; wait (and say so) while another holds it.

    ``fcntl.flock`` on a file in the cache: the kernel releases it when the
    holder exits, however it exits, so a killed set-up never leaves it stuck.
    """
    path = lock_file(cache, tool, version)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(
                f"{tool.binary} {version}: another set-up is installing it (lock {path}); "
                f"waiting for it to finish"
            )
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _cached(tool: Tool, version: str, target: Path, memo: _VersionMemo) -> bool:
    """True when ``target`` is ``tool`` ``version``; says why a cached binary is replaced."""
    if not target.exists():
        return False
    label = f"{tool.binary} {version}"
    try:
        got = _probe(tool, target, memo)
    except ToolingError as exc:
        say(f"{label}: the cached binary is unusable ({exc}); replacing it")
        return False
    if got == version:
        return True
    say(f"{label}: the cached binary at {target} is {got}; replacing it")
    return False


def _resolve(
    tool: Tool,
    version: str,
    cache: Path,
    memo: _VersionMemo,
    *,
    search_path: bool,
    download: bool,
    release_base: str,
) -> tuple[Source, Path]:
    label = f"{tool.binary} {version}"
    target = cached_binary(tool.name, version, cache)
    if _cached(tool, version, target, memo):
        return "cache", target
    if search_path:
        for candidate in _path_candidates(tool.binary):
            try:
                got = _probe(tool, candidate, memo)
            except ToolingError:
                continue
            if got == version:
                return "path", Path(os.path.realpath(candidate))
    with install_lock(cache, tool, version):
        # another set-up may have installed it while this one waited for the lock
        if _cached(tool, version, target, _VersionMemo(cache)):
            say(f"{label}: installed by the other set-up; using it")
            return "cache", target
        if download and tool.asset:
            try:
                platform = host_platform()
            except ToolingError as exc:
                say(f"{label}: {exc}; building from source")
            else:
                if release.download(
                    tool,
                    version,
                    target,
                    platform=platform,
                    base_url=release_base,
                    run_version=_run_version,
                ):
                    return "download", target
        gobuild.build(tool, version, target, cache=cache, run_version=_run_version)
    return "build", target


def ensure_tool(
    name: str,
    version: str,
    *,
    cache: Path | None = None,
    bin_dir: Path | None = None,
    search_path: bool = True,
    download: bool = True,
    release_base: str = GITHUB,
) -> InstalledTool:
    """Make ``name`` ``version`` available and link it into ``bin_dir``.

    Takes the first of: the cached binary, a binary of that version on
    ``PATH``, the official release (checksum-verified; network errors fall
    through), a build from the Go module. ``bin_dir`` defaults to the
    environment's :func:`scripts_dir`; ``release_base`` replaces
    ``https://github.com`` (a mirror).
    """
    tool = get_tool(name)
    if not EXACT_VERSION.fullmatch(version):
        raise ToolingError(f"{tool.name} {version!r} is not an exact version like 1.2.3")
    cache = cache or cache_root()
    memo = _VersionMemo(cache)
    try:
        source, path = _resolve(
            tool,
            version,
            cache,
            memo,
            search_path=search_path,
            download=download,
            release_base=release_base,
        )
    finally:
        memo.save()
    link = _link(tool, version, path, bin_dir or scripts_dir())
    return InstalledTool(tool.name, tool.binary, version, path, source, link)


def setup(
    repo_root: Path,
    *,
    cache: Path | None = None,
    bin_dir: Path | None = None,
    test_tools: bool = True,
) -> list[InstalledTool]:
    """Install every tool pinned in ``.tool-versions`` and link it into ``bin_dir``.

    ``test_tools=False`` leaves out the tools only the tests use (act), as the
    pipeline's jobs do. Warns when ``bin_dir`` is not on ``PATH`` or another version of a tool
    shadows it there.
    """
    bin_dir = bin_dir or scripts_dir()
    cache = cache or cache_root()
    installed = [
        ensure_tool(tool.name, version, cache=cache, bin_dir=bin_dir)
        for tool, version in read_pins(repo_root, test_tools=test_tools)
    ]
    if not _on_path(bin_dir):
        say(
            f"note: {bin_dir} is not on PATH: activate the virtual environment so tasks find the tools"
        )
        return installed
    memo = _VersionMemo(cache)
    for item in installed:
        exe = shutil.which(item.binary)
        if exe is None or os.path.realpath(exe) == os.path.realpath(item.path):
            continue
        try:
            got = _probe(get_tool(item.name), Path(exe), memo)
        except ToolingError:
            got = "unusable"
        if got != item.version:
            say(
                f"warning: {exe} ({got}) comes before {bin_dir} on PATH and shadows "
                f"{item.binary} {item.version}: remove it or put {bin_dir} first on PATH"
            )
    memo.save()
    return installed


def summary_line(installed: list[InstalledTool]) -> str:
    """The one line ``invoke setup`` prints: each tool once, by its binary name.

    ``tools: tofu 1.12.6, terragrunt 1.1.3 (cached)``; a tool that came from
    elsewhere says where (``on PATH``, ``downloaded``, ``built``).
    """
    where = {"cache": "cached", "path": "on PATH", "download": "downloaded", "build": "built"}
    sources = {item.source for item in installed}
    if len(sources) == 1:
        names = ", ".join(f"{item.binary} {item.version}" for item in installed)
        return f"tools: {names} ({where[sources.pop()]})"
    return "tools: " + ", ".join(
        f"{item.binary} {item.version} ({where[item.source]})" for item in installed
    )
