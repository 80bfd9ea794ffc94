"""The pinned command-line tools: OpenTofu, Terragrunt, actionlint and act.

``.tool-versions`` at the repository root (asdf/mise format) pins one exact
version per tool. Two entry points serve ``tasks.py``:

- :func:`setup` installs every pinned tool and links it into the ``bin``
  directory of the active Python environment. For each tool it takes the first
  of: a binary already in the cache, a binary of the right version already on
  ``PATH``, the official release (verified against its published checksum
  file), or a build from the Go module (several minutes, needs ``go``). A
  tool without a release asset pattern (act) is only ever built.
- :func:`check_versions` runs before every other task and refuses, with an
  actionable message, when a tool on ``PATH`` is missing or of another
  version. Its answer is cached in ``<cache>/version-check.json`` keyed by the
  binary's resolved path, size and mtime, so a warm check only stats files and
  never starts a process.

The cache directory is ``$IAC_CACHE_DIR``, else
``${XDG_CACHE_HOME:-~/.cache}/iac-tooling``; binaries live at
``<cache>/tools/<tool>/<version>/<binary>``.

The parsers and URL/recipe builders at the top are pure functions.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tooling.errors import ToolingError
from tooling.io import proc
from tooling.io.config import cache_root
from tooling.io.ui import say

TOOL_VERSIONS_FILE = ".tool-versions"
GITHUB = "https://github.com"
#: seconds for each network operation of a release download
DOWNLOAD_TIMEOUT = 15.0
#: seconds for ``<tool> --version`` and friends
PROBE_TIMEOUT = 60.0
_SETUP_HINT = "Run `invoke setup` to install the pinned versions."

Source = Literal["cache", "path", "download", "build"]
Archive = Literal["zip", "tar.gz", "raw"]

_EXACT_VERSION = re.compile(r"\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?")
_SHA256 = re.compile(r"[0-9a-fA-F]{64}")


# --------------------------------------------------------------------------
# pure parsers


def parse_tool_versions(text: str, path: Path | str) -> dict[str, str]:
    """Parse a ``.tool-versions`` file: ``{tool: version}``.

    Each non-blank line is ``<tool> <version> [<fallback versions>...]``; ``#``
    starts a comment. Only the first version of a line counts (as in asdf).
    A malformed or duplicate line raises :class:`ToolingError` naming
    ``path:line``.
    """
    return {name: version for name, (version, _line) in _parse_tool_versions(text, path).items()}


def _parse_tool_versions(text: str, path: Path | str) -> dict[str, tuple[str, int]]:
    pins: dict[str, tuple[str, int]] = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        if len(fields) < 2:
            raise ToolingError(
                f"{path}:{lineno}: malformed line {raw.strip()!r}: expected "
                f"'<tool> <version>' (e.g. 'opentofu 1.12.6'). Fix the line."
            )
        name, version = fields[0], fields[1]
        if name in pins:
            raise ToolingError(
                f"{path}:{lineno}: {name} is pinned twice (first on line {pins[name][1]}). "
                f"Keep one line per tool."
            )
        pins[name] = (version, lineno)
    return pins


def _version_line(output: str, pattern: str, what: str) -> str:
    """The version captured by ``pattern`` on the first line that matches it."""
    regex = re.compile(pattern)
    for line in output.splitlines():
        match = regex.fullmatch(line.strip())
        if match:
            return match.group(1)
    first = next((line.strip() for line in output.splitlines() if line.strip()), "")
    raise ToolingError(
        f"cannot read the version from the output of `{what}` (got {first!r}). "
        f"Is it the right program? {_SETUP_HINT}"
    )


def parse_tofu_version(output: str) -> str:
    """``tofu version`` output ("OpenTofu v1.12.6\\non linux_amd64") -> "1.12.6".

    Warnings that OpenTofu prints before the version line are skipped; a
    development build yields e.g. "1.12.6-dev", which matches no pin.
    """
    return _version_line(output, r"OpenTofu v(\S+)", "tofu version")


def parse_terragrunt_version(output: str) -> str:
    """``terragrunt --version`` output ("terragrunt version v1.1.3") -> "1.1.3"."""
    return _version_line(output, r"terragrunt version v?(\S+)", "terragrunt --version")


def parse_actionlint_version(output: str) -> str:
    """``actionlint --version`` output (first line "1.7.12" or "v1.7.12") -> "1.7.12"."""
    return _version_line(output, r"v?(\d+\.\d+\.\d+\S*)", "actionlint --version")


def parse_act_version(output: str) -> str:
    """``act --version`` output ("act version 0.2.89") -> "0.2.89"."""
    return _version_line(output, r"act version v?(\S+)", "act --version")


def parse_checksums(text: str, source: str) -> dict[str, str]:
    """Parse a release checksum file: ``{filename: sha256}`` (hex, lower case).

    Lines are ``<sha256>  <filename>`` as ``sha256sum`` writes them (a ``*``
    before the name marks binary mode and is dropped). ``source`` names the
    file in errors.
    """
    sums: dict[str, str] = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        fields = line.split(None, 1)
        if len(fields) != 2 or not _SHA256.fullmatch(fields[0]):
            raise ToolingError(f"{source}:{lineno}: not a '<sha256>  <filename>' line: {line!r}")
        sums[fields[1].strip().removeprefix("*")] = fields[0].lower()
    return sums


# --------------------------------------------------------------------------
# the tools


@dataclass(frozen=True)
class Tool:
    """What the tooling knows about one pinned tool."""

    name: str  #: key in ``.tool-versions``
    binary: str  #: executable name
    version_args: tuple[str, ...]
    parse_version: Callable[[str], str]
    repo: str  #: GitHub ``owner/name`` of the releases
    asset: str  #: release asset name (``{v}``, ``{os}``, ``{arch}`` filled in); "" = build only
    checksums: str  #: checksum file name; ``{v}`` is filled in
    archive: Archive
    module: str  #: Go module path
    package: str  #: package of the main program, relative to the module root
    ldflags: str  #: ``{v}`` is filled in
    #: only the tests use it (act): ``invoke setup`` installs it, the tasks do not require it
    test_only: bool = False


TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in (
        Tool(
            name="opentofu",
            binary="tofu",
            version_args=("version",),
            parse_version=parse_tofu_version,
            repo="opentofu/opentofu",
            asset="tofu_{v}_{os}_{arch}.zip",
            checksums="tofu_{v}_SHA256SUMS",
            archive="zip",
            module="github.com/opentofu/opentofu",
            package="./cmd/tofu",
            ldflags="-s -w -X github.com/opentofu/opentofu/version.dev=no",
        ),
        Tool(
            name="terragrunt",
            binary="terragrunt",
            version_args=("--version",),
            parse_version=parse_terragrunt_version,
            repo="gruntwork-io/terragrunt",
            asset="terragrunt_{os}_{arch}",
            checksums="SHA256SUMS",
            archive="raw",
            module="github.com/gruntwork-io/terragrunt",
            package=".",
            ldflags="-s -w -X github.com/gruntwork-io/terragrunt/internal/version.Version=v{v}",
        ),
        Tool(
            name="actionlint",
            binary="actionlint",
            version_args=("--version",),
            parse_version=parse_actionlint_version,
            repo="rhysd/actionlint",
            asset="actionlint_{v}_{os}_{arch}.tar.gz",
            checksums="actionlint_{v}_checksums.txt",
            archive="tar.gz",
            module="github.com/rhysd/actionlint",
            package="./cmd/actionlint",
            ldflags="-s -w -X github.com/rhysd/actionlint.version={v}",
        ),
        Tool(
            # The workflow engine of the act-driven workflow tests. Its release
            # assets use other OS/arch names than Go's, so it is built from the
            # Go module (the version comes from the module's embedded VERSION).
            name="act",
            binary="act",
            version_args=("--version",),
            parse_version=parse_act_version,
            repo="nektos/act",
            asset="",
            checksums="",
            archive="raw",
            module="github.com/nektos/act",
            package=".",
            ldflags="-s -w",
            test_only=True,
        ),
    )
}


def get_tool(name: str) -> Tool:
    """The tool called ``name`` in ``.tool-versions`` (its binary name works too)."""
    if name in TOOLS:
        return TOOLS[name]
    for tool in TOOLS.values():
        if tool.binary == name:
            return tool
    raise ToolingError(f"unknown tool {name!r}: the tooling manages {', '.join(TOOLS)}")


def parse_version_output(name: str, output: str) -> str:
    """The version in the output of the tool's version command."""
    return get_tool(name).parse_version(output)


@dataclass(frozen=True)
class ReleaseAsset:
    url: str
    checksums_url: str
    filename: str
    archive: Archive


def release_asset(
    name: str, version: str, os_name: str, arch: str, *, base_url: str = GITHUB
) -> ReleaseAsset:
    """The official release of ``name`` ``version`` for ``os_name``/``arch`` (Go names)."""
    tool = get_tool(name)
    filename = tool.asset.format(v=version, os=os_name, arch=arch)
    base = f"{base_url.rstrip('/')}/{tool.repo}/releases/download/v{version}"
    return ReleaseAsset(
        url=f"{base}/{filename}",
        checksums_url=f"{base}/{tool.checksums.format(v=version)}",
        filename=filename,
        archive=tool.archive,
    )


@dataclass(frozen=True)
class GoBuildRecipe:
    module: str
    version: str  #: with the leading "v", as Go writes it
    package: str
    ldflags: str

    @property
    def module_query(self) -> str:
        """``module@version`` for ``go mod download``."""
        return f"{self.module}@{self.version}"

    def build_args(self, output: Path | str) -> list[str]:
        """The ``go build`` command line, run in a copy of the module."""
        return [
            "go",
            "build",
            "-trimpath",
            "-ldflags",
            self.ldflags,
            "-o",
            str(output),
            self.package,
        ]


def go_build_recipe(name: str, version: str) -> GoBuildRecipe:
    """How to build ``name`` ``version`` from its Go module."""
    tool = get_tool(name)
    return GoBuildRecipe(
        module=tool.module,
        version=f"v{version}",
        package=tool.package,
        ldflags=tool.ldflags.format(v=version),
    )


#: added to the environment of ``go build``
GO_BUILD_ENV: Mapping[str, str] = {"CGO_ENABLED": "0"}

_GO_OS = {"linux": "linux", "darwin": "darwin", "freebsd": "freebsd"}
_GO_ARCH = {
    "x86_64": "amd64",
    "amd64": "amd64",
    "aarch64": "arm64",
    "arm64": "arm64",
    "i386": "386",
    "i686": "386",
    "armv6l": "arm",
    "armv7l": "arm",
}


def go_platform(sys_platform: str, machine: str) -> tuple[str, str]:
    """Go's ``(GOOS, GOARCH)`` for ``sys.platform`` and ``platform.machine()``."""
    os_name = next((go for prefix, go in _GO_OS.items() if sys_platform.startswith(prefix)), None)
    arch = _GO_ARCH.get(machine.lower())
    if os_name is None or arch is None:
        raise ToolingError(f"no release binaries for this platform ({sys_platform}/{machine})")
    return os_name, arch


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


def read_pins(repo_root: Path, *, test_tools: bool = False) -> list[tuple[Tool, str]]:
    """The managed tools pinned in ``<repo_root>/.tool-versions``, with their versions.

    Lines for other tools (python, nodejs, ...) are ignored, and so are the
    tools only the tests use (act) unless ``test_tools``: a plan records and
    an apply checks the versions of the tools that made it, not of act.
    """
    path = Path(repo_root) / TOOL_VERSIONS_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ToolingError(
            f"{path} not found: the repository root must pin the tool versions, "
            f"one '<tool> <version>' line each for {', '.join(TOOLS)}."
        ) from None
    pins = []
    for name, (version, lineno) in _parse_tool_versions(text, path).items():
        if name not in TOOLS or (TOOLS[name].test_only and not test_tools):
            continue
        if not _EXACT_VERSION.fullmatch(version):
            raise ToolingError(
                f"{path}:{lineno}: {name} {version!r} is not an exact version: "
                f"pin one like '{name} 1.2.3' (no 'v', no 'latest')."
            )
        pins.append((TOOLS[name], version))
    return pins


def scripts_dir() -> Path:
    """The ``bin`` (``Scripts``) directory of the running Python environment."""
    import sysconfig

    return Path(sysconfig.get_path("scripts"))


def _on_path(directory: Path) -> bool:
    entries = os.environ.get("PATH", "").split(os.pathsep)
    real = os.path.realpath(directory)
    return any(entry and os.path.realpath(entry) == real for entry in entries)


def ensure_bin_dir_on_path() -> None:
    """Put :func:`scripts_dir` first on ``PATH`` of this process (and its children)
    unless it is on ``PATH`` already, e.g. when ``invoke`` runs from an
    unactivated virtual environment."""
    directory = scripts_dir()
    if not _on_path(directory):
        os.environ["PATH"] = os.pathsep.join([str(directory), os.environ.get("PATH", "")])


def check_versions(repo_root: Path, *, cache: Path | None = None) -> list[InstalledTool]:
    """Check that every tool pinned in ``.tool-versions`` is on ``PATH`` in that version.

    Raises :class:`ToolingError` naming the pinned and the found version of
    each tool that is missing or differs. Warm calls only stat files: the
    version each binary reports is cached by its path, size and mtime.
    """
    pins = read_pins(repo_root)
    pin_file = Path(repo_root) / TOOL_VERSIONS_FILE
    memo = _VersionMemo(cache or cache_root())
    found: list[InstalledTool] = []
    problems: list[str] = []
    for tool, version in pins:
        exe = shutil.which(tool.binary)
        if exe is None:
            problems.append(
                f"{tool.binary} not found on PATH ({pin_file} pins {tool.name} {version})"
            )
            continue
        try:
            got = _probe(tool, Path(exe), memo)
        except ToolingError as exc:
            problems.append(f"{tool.name}: {pin_file} pins {version}, but {exe} is unusable: {exc}")
            continue
        if got != version:
            problems.append(f"{tool.name}: {pin_file} pins {version}, but {exe} is {got}")
            continue
        found.append(InstalledTool(tool.name, tool.binary, version, Path(exe), "path"))
    memo.save()
    if problems:
        hint = _SETUP_HINT
        bin_dir = scripts_dir()
        if not _on_path(bin_dir):
            hint += f" Then put {bin_dir} first on PATH (activate the virtual environment)."
        raise ToolingError(
            "the tools on PATH do not match .tool-versions:\n"
            + "".join(f"  - {problem}\n" for problem in problems)
            + hint
        )
    return found


# --------------------------------------------------------------------------
# installing


class _Unavailable(Exception):
    """A release download that cannot be used; the install falls through to a Go build."""


class _ChecksumMismatch(ToolingError):
    """A downloaded release that does not match its published checksum: never fall through."""


@contextmanager
def _partial_dir(parent: Path) -> Iterator[Path]:
    """A scratch directory beside the final binary, so that ``os.replace`` is atomic."""
    import tempfile

    parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".partial-", dir=parent))
    try:
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


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


def _fetch(url: str, dest: Path) -> str:
    """Download ``url`` to ``dest``; return its sha256 (hex)."""
    import hashlib
    import urllib.request

    digest = hashlib.sha256()
    request = urllib.request.Request(url, headers={"User-Agent": "iac-tooling"})
    with (
        urllib.request.urlopen(request, timeout=DOWNLOAD_TIMEOUT) as response,
        dest.open("wb") as out,
    ):
        while chunk := response.read(1 << 20):
            digest.update(chunk)
            out.write(chunk)
    return digest.hexdigest()


def _extract(archive: Archive, downloaded: Path, binary: str, dest: Path) -> None:
    """Write the ``binary`` inside ``downloaded`` to ``dest``."""
    if archive == "raw":
        os.replace(downloaded, dest)
        return
    if archive == "zip":
        import zipfile

        with zipfile.ZipFile(downloaded) as zf:
            names = [n for n in zf.namelist() if n.removeprefix("./") == binary]
            if not names:
                raise _Unavailable(f"{downloaded.name} holds no {binary}")
            with zf.open(names[0]) as src, dest.open("wb") as out:
                shutil.copyfileobj(src, out)
        return
    import tarfile

    with tarfile.open(downloaded, "r:gz") as tf:
        member = next(
            (m for m in tf.getmembers() if m.isfile() and m.name.removeprefix("./") == binary), None
        )
        extracted = tf.extractfile(member) if member else None
        if extracted is None:
            raise _Unavailable(f"{downloaded.name} holds no {binary}")
        with extracted, dest.open("wb") as out:
            shutil.copyfileobj(extracted, out)


def _download(tool: Tool, version: str, target: Path, base_url: str) -> bool:
    """Install the official release at ``target``; False (after a note) if it cannot be had."""
    import http.client
    import urllib.error

    label = f"{tool.binary} {version}"
    try:
        os_name, arch = host_platform()
        asset = release_asset(tool.name, version, os_name, arch, base_url=base_url)
        say(f"{label}: downloading {asset.url}")
        with _partial_dir(target.parent) as scratch:
            sums_file = scratch / "checksums"
            _fetch(asset.checksums_url, sums_file)
            try:
                sums = parse_checksums(
                    sums_file.read_text(encoding="utf-8", errors="replace"), asset.checksums_url
                )
            except ToolingError as exc:
                raise _Unavailable(str(exc)) from exc
            expected = sums.get(asset.filename)
            if expected is None:
                raise _Unavailable(f"{asset.checksums_url} lists no {asset.filename}")
            downloaded = scratch / asset.filename
            actual = _fetch(asset.url, downloaded)
            if actual != expected:
                raise _ChecksumMismatch(
                    f"{label}: checksum mismatch for {asset.url}: expected sha256 {expected}, "
                    f"got {actual}. The download is corrupt or was tampered with; nothing was "
                    f"installed. Run `invoke setup` again, and report it if it persists."
                )
            binary = scratch / f"{tool.binary}.new"
            _extract(asset.archive, downloaded, tool.binary, binary)
            binary.chmod(0o755)
            got = _run_version(tool, binary)
            if got != version:
                raise _Unavailable(f"{asset.url} holds {tool.binary} {got}, not {version}")
            os.replace(binary, target)
    except _ChecksumMismatch:
        raise
    except (_Unavailable, ToolingError, OSError, http.client.HTTPException) as exc:
        if isinstance(exc, urllib.error.HTTPError):
            reason = f"HTTP {exc.code} for {exc.url}"
        elif isinstance(exc, urllib.error.URLError):
            reason = str(exc.reason)
        else:
            reason = str(exc) or type(exc).__name__
        say(f"{label}: download failed ({reason}); building from source instead")
        return False
    say(f"{label}: downloaded and verified against {asset.checksums_url}")
    return True


def _make_writable(tree: Path) -> None:
    """``chmod -R u+w``: the Go module cache is read-only."""
    for root, _dirs, files in os.walk(tree):
        os.chmod(root, os.stat(root).st_mode | stat.S_IWUSR)
        for name in files:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                os.chmod(path, os.stat(path).st_mode | stat.S_IWUSR)


def _go_build(tool: Tool, version: str, target: Path) -> None:
    """Build ``tool`` ``version`` from its Go module and install it at ``target``."""
    import tempfile

    label = f"{tool.binary} {version}"
    recipe = go_build_recipe(tool.name, version)
    if shutil.which("go") is None:
        raise ToolingError(
            f"{label}: not cached, not on PATH, and the release download failed; building it "
            f"from source needs Go (https://go.dev/dl/), which is not on PATH. Install Go, or "
            f"install {tool.binary} {version} yourself and put it on PATH; then run `invoke setup` again."
        )
    say(f"{label}: building from Go module {recipe.module_query} (takes several minutes)")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(
        prefix=f"iac-{tool.binary}-build-", ignore_cleanup_errors=True
    ) as work:
        workdir = Path(work)
        result = proc.run(
            ["go", "mod", "download", "-json", recipe.module_query], cwd=workdir, ok_codes=(0, 1)
        )
        try:
            info = json.loads(result.stdout) if result.stdout.strip() else {}
        except ValueError:
            info = {}
        module_dir = info.get("Dir") if isinstance(info, dict) else None
        if result.returncode != 0 or not isinstance(module_dir, str):
            error = (info.get("Error") if isinstance(info, dict) else None) or result.stderr.strip()
            raise ToolingError(
                f"{label}: `go mod download {recipe.module_query}` failed: {error}. Check the "
                f"version in {TOOL_VERSIONS_FILE} and that the Go module proxy (GOPROXY) is reachable."
            )
        source = workdir / "src"
        shutil.copytree(module_dir, source, symlinks=True)
        _make_writable(source)
        with _partial_dir(target.parent) as scratch:
            built = scratch / tool.binary
            proc.run(recipe.build_args(built), cwd=source, env=GO_BUILD_ENV)
            got = _run_version(tool, built)
            if got != version:
                raise ToolingError(
                    f"{label}: the binary built from {recipe.module_query} reports version {got}; "
                    f"the build recipe (ldflags {recipe.ldflags!r}) may not fit this version. "
                    f"Install {tool.binary} {version} yourself and put it on PATH, and report it."
                )
            os.replace(built, target)
    say(f"{label}: built in {time.monotonic() - started:.0f} s, cached at {target}")


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
    say(f"{tool.binary} {version}: {how} {link} -> {binary}")
    return link


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
    if target.exists():
        try:
            got = _probe(tool, target, memo)
        except ToolingError as exc:
            say(f"{label}: the cached binary is unusable ({exc}); replacing it")
        else:
            if got == version:
                say(f"{label}: cached at {target}")
                return "cache", target
            say(f"{label}: the cached binary at {target} is {got}; replacing it")
    if search_path:
        for candidate in _path_candidates(tool.binary):
            try:
                got = _probe(tool, candidate, memo)
            except ToolingError as exc:
                say(f"{label}: skipping {candidate} ({exc})")
                continue
            if got == version:
                say(f"{label}: found on PATH at {candidate}")
                return "path", Path(os.path.realpath(candidate))
            say(f"{label}: skipping {candidate} (version {got})")
    if download and tool.asset and _download(tool, version, target, release_base):
        return "download", target
    _go_build(tool, version, target)
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
    if not _EXACT_VERSION.fullmatch(version):
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
