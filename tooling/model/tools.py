"""The pinned command-line tools, as data: ``.tool-versions`` and what each tool is. Pure.

``.tool-versions`` at the repository root (asdf/mise format) pins one exact
version per tool; :func:`read_tool_versions` is its one reader. :data:`TOOLS`
says, for each tool the tooling manages, how to ask its version, where its
official release and checksum file live, and how to build it from its Go
module. Nothing here starts a process or touches the network:
:mod:`tooling.io.release`, :mod:`tooling.io.gobuild` and
:mod:`tooling.io.toolchain` do.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tooling.errors import ToolingError

TOOL_VERSIONS_FILE = ".tool-versions"

#: the tools every run of a unit needs pinned (the others serve CI and its tests)
RUN_TOOLS = ("opentofu", "terragrunt")
GITHUB = "https://github.com"
SETUP_HINT = "Run `invoke setup` to install the pinned versions."

Archive = Literal["zip", "tar.gz", "raw"]

EXACT_VERSION = re.compile(r"\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?")
_SHA256 = re.compile(r"[0-9a-fA-F]{64}")


# --------------------------------------------------------------------------
# pure parsers


@dataclass(frozen=True)
class ToolPin:
    """One ``<tool> <version>`` line of ``.tool-versions``."""

    name: str
    version: str
    line: int

    @property
    def exact(self) -> bool:
        """An exact release like ``1.2.3`` (not ``latest``, ``v1.2.3`` or a range)."""
        return EXACT_VERSION.fullmatch(self.version) is not None


@dataclass(frozen=True)
class PinProblem:
    """A line of ``.tool-versions`` that cannot be read, and how to fix it."""

    line: int
    message: str
    fix: str


@dataclass(frozen=True)
class ToolVersions:
    """``.tool-versions`` read: the pins, and the lines that could not be read.

    Each non-blank line is ``<tool> <version> [<fallback versions>...]``; ``#``
    starts a comment. Only the first version of a line counts (as in asdf); a
    tool pinned twice keeps its first line.
    """

    pins: Mapping[str, ToolPin]
    problems: tuple[PinProblem, ...]

    def raise_problems(self, path: Path | str) -> None:
        """Raise :class:`ToolingError` for the first problem, naming ``path:line``."""
        if self.problems:
            first = self.problems[0]
            raise ToolingError(f"{path}:{first.line}: {first.message}. {first.fix}")


def read_tool_versions(text: str) -> ToolVersions:
    """The one reader of ``.tool-versions`` (the installer, the checks and ``invoke check`` use it)."""
    pins: dict[str, ToolPin] = {}
    problems: list[PinProblem] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        if len(fields) < 2:
            problems.append(
                PinProblem(
                    lineno,
                    f"malformed line {raw.strip()!r}: expected '<tool> <version>'",
                    "Fix the line (e.g. 'opentofu 1.12.6').",
                )
            )
            continue
        name, version = fields[0], fields[1]
        if name in pins:
            problems.append(
                PinProblem(
                    lineno,
                    f"{name} is pinned twice (first on line {pins[name].line})",
                    "Keep one line per tool.",
                )
            )
            continue
        pins[name] = ToolPin(name, version, lineno)
    return ToolVersions(pins, tuple(problems))


def parse_tool_versions(text: str, path: Path | str) -> dict[str, str]:
    """``{tool: version}`` of a ``.tool-versions`` file; a malformed or duplicate
    line raises :class:`ToolingError` naming ``path:line``."""
    read = read_tool_versions(text)
    read.raise_problems(path)
    return {name: pin.version for name, pin in read.pins.items()}


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
        f"Is it the right program? {SETUP_HINT}"
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
