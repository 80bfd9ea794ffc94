"""Tests of ``tooling.io.toolchain``.

The parsers and URL/recipe builders are table tests. The rest runs real
programs: the pinned tofu/terragrunt/actionlint (found in the default cache,
the environment's ``bin`` directory or on ``PATH``; skipped when absent: run
``invoke setup``), small shell scripts standing in for a tool, a release
server on 127.0.0.1 and, for the Go build, a Go module proxy on disk. Nothing
is downloaded from the internet.
"""

from __future__ import annotations

import fcntl
import http.server
import io
import json
import os
import re
import shutil
import socket
import tarfile
import threading
import zipfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from infra_fixtures import serving

from tooling.errors import ToolingError
from tooling.io import binpath, config, gobuild, proc, toolchain
from tooling.model import tools

REPO_ROOT = Path(__file__).resolve().parents[1]
#: the user's cache, before any test points IAC_CACHE_DIR elsewhere
USER_CACHE = config.cache_root()
PINS = {tool.name: version for tool, version in toolchain.read_pins(REPO_ROOT, test_tools=True)}
#: the pins every task requires on PATH, records in a plan and checks before an apply (not act)
TASK_PINS = {tool.name: version for tool, version in toolchain.read_pins(REPO_ROOT)}

# --------------------------------------------------------------------------
# pure functions


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("opentofu 1.12.6\nterragrunt 1.1.3\n", {"opentofu": "1.12.6", "terragrunt": "1.1.3"}),
        ("# pinned tools\n\nopentofu 1.12.6  # inline\n", {"opentofu": "1.12.6"}),
        ("python 3.11.9 3.12.1\n", {"python": "3.11.9"}),
        ("  actionlint\t1.7.12  \r\n", {"actionlint": "1.7.12"}),
        ("", {}),
        ("# only a comment", {}),
    ],
)
def test_parse_tool_versions(text: str, expected: dict[str, str]) -> None:
    assert tools.parse_tool_versions(text, ".tool-versions") == expected


@pytest.mark.parametrize(
    ("text", "where", "why"),
    [
        ("opentofu 1.12.6\n\nterragrunt\n", ":3:", "malformed"),
        ("opentofu 1.12.6 # a\n# b\nopentofu 1.12.7\n", ":3:", "pinned twice"),
        ("opentofu # 1.12.6\n", ":1:", "malformed"),
    ],
)
def test_parse_tool_versions_names_file_and_line(text: str, where: str, why: str) -> None:
    with pytest.raises(ToolingError) as err:
        tools.parse_tool_versions(text, "repo/.tool-versions")
    assert f"repo/.tool-versions{where}" in str(err.value)
    assert why in str(err.value)


@pytest.mark.parametrize(
    ("name", "output", "expected"),
    [
        ("opentofu", "OpenTofu v1.12.6\non linux_amd64\n", "1.12.6"),
        (
            "opentofu",
            "\nWarning: Unable to open CLI configuration file\n\nOpenTofu v1.12.6\non linux_amd64\n",
            "1.12.6",
        ),
        ("opentofu", "OpenTofu v1.12.6-dev\non linux_amd64\n", "1.12.6-dev"),
        ("opentofu", "OpenTofu v1.13.0-beta1\n", "1.13.0-beta1"),
        ("terragrunt", "terragrunt version v1.1.3\n", "1.1.3"),
        ("terragrunt", "terragrunt version 0.99.1", "0.99.1"),
        ("terragrunt", "terragrunt version latest\n", "latest"),
        ("actionlint", "1.7.12\ninstalled by building from source\nbuilt with go1.26\n", "1.7.12"),
        ("actionlint", "v1.7.12\ninstalled by downloading from release page\n", "1.7.12"),
    ],
)
def test_parse_version_output(name: str, output: str, expected: str) -> None:
    assert tools.parse_version_output(name, output) == expected


@pytest.mark.parametrize(
    ("parse", "output"),
    [
        (tools.parse_tofu_version, "Terraform v1.5.7\n"),
        (tools.parse_tofu_version, ""),
        (tools.parse_terragrunt_version, "OpenTofu v1.12.6\n"),
        (tools.parse_actionlint_version, "unknown\ninstalled by building from source\n"),
    ],
)
def test_parse_version_output_refuses_other_programs(
    parse: Callable[[str], str], output: str
) -> None:
    with pytest.raises(ToolingError, match="cannot read the version"):
        parse(output)


SHA_A = "a" * 64
SHA_B = "0123456789ABCDEF" * 4


def test_parse_checksums() -> None:
    text = (
        f"{SHA_A}  tofu_1.12.6_linux_amd64.zip\n"
        f"{SHA_B} *terragrunt_linux_arm64\n"
        "\n"
        f"{SHA_A}  actionlint_1.7.12_darwin_arm64.tar.gz\n"
    )
    assert tools.parse_checksums(text, "SHA256SUMS") == {
        "tofu_1.12.6_linux_amd64.zip": SHA_A,
        "terragrunt_linux_arm64": SHA_B.lower(),
        "actionlint_1.7.12_darwin_arm64.tar.gz": SHA_A,
    }


@pytest.mark.parametrize(
    "line", ["<html>Not Found</html>", f"{SHA_A}", "abc123  tofu.zip", f"{SHA_A[:-1]}  x"]
)
def test_parse_checksums_refuses_malformed_lines(line: str) -> None:
    with pytest.raises(ToolingError, match=r"SHA256SUMS:2: not a '<sha256>  <filename>' line"):
        tools.parse_checksums(f"{SHA_A}  ok\n{line}\n", "SHA256SUMS")


GH = "https://github.com"


@pytest.mark.parametrize(
    ("name", "version", "os_name", "arch", "url", "checksums_url", "archive"),
    [
        (
            "opentofu",
            "1.12.6",
            "linux",
            "amd64",
            f"{GH}/opentofu/opentofu/releases/download/v1.12.6/tofu_1.12.6_linux_amd64.zip",
            f"{GH}/opentofu/opentofu/releases/download/v1.12.6/tofu_1.12.6_SHA256SUMS",
            "zip",
        ),
        (
            "tofu",
            "1.12.6",
            "darwin",
            "arm64",
            f"{GH}/opentofu/opentofu/releases/download/v1.12.6/tofu_1.12.6_darwin_arm64.zip",
            f"{GH}/opentofu/opentofu/releases/download/v1.12.6/tofu_1.12.6_SHA256SUMS",
            "zip",
        ),
        (
            "terragrunt",
            "1.1.3",
            "linux",
            "amd64",
            f"{GH}/gruntwork-io/terragrunt/releases/download/v1.1.3/terragrunt_linux_amd64",
            f"{GH}/gruntwork-io/terragrunt/releases/download/v1.1.3/SHA256SUMS",
            "raw",
        ),
        (
            "actionlint",
            "1.7.12",
            "linux",
            "arm64",
            f"{GH}/rhysd/actionlint/releases/download/v1.7.12/actionlint_1.7.12_linux_arm64.tar.gz",
            f"{GH}/rhysd/actionlint/releases/download/v1.7.12/actionlint_1.7.12_checksums.txt",
            "tar.gz",
        ),
    ],
)
def test_release_asset(
    name: str,
    version: str,
    os_name: str,
    arch: str,
    url: str,
    checksums_url: str,
    archive: str,
) -> None:
    asset = tools.release_asset(name, version, os_name, arch)
    assert (asset.url, asset.checksums_url, asset.archive) == (url, checksums_url, archive)
    assert asset.filename == url.rsplit("/", 1)[1]


def test_release_asset_mirror() -> None:
    asset = tools.release_asset("terragrunt", "1.1.3", "linux", "amd64", base_url="http://m/")
    assert (
        asset.url
        == "http://m/gruntwork-io/terragrunt/releases/download/v1.1.3/terragrunt_linux_amd64"
    )


@pytest.mark.parametrize(
    ("name", "version", "module_query", "package", "ldflags"),
    [
        (
            "opentofu",
            "1.12.6",
            "github.com/opentofu/opentofu@v1.12.6",
            "./cmd/tofu",
            "-s -w -X github.com/opentofu/opentofu/version.dev=no",
        ),
        (
            "terragrunt",
            "1.1.3",
            "github.com/gruntwork-io/terragrunt@v1.1.3",
            ".",
            "-s -w -X github.com/gruntwork-io/terragrunt/internal/version.Version=v1.1.3",
        ),
        (
            "actionlint",
            "1.7.12",
            "github.com/rhysd/actionlint@v1.7.12",
            "./cmd/actionlint",
            "-s -w -X github.com/rhysd/actionlint.version=1.7.12",
        ),
    ],
)
def test_go_build_recipe(
    name: str, version: str, module_query: str, package: str, ldflags: str
) -> None:
    recipe = tools.go_build_recipe(name, version)
    assert (recipe.module_query, recipe.package, recipe.ldflags) == (module_query, package, ldflags)
    assert recipe.build_args("out/bin") == [
        "go",
        "build",
        "-trimpath",
        "-ldflags",
        ldflags,
        "-o",
        "out/bin",
        package,
    ]
    assert gobuild.GO_BUILD_ENV["CGO_ENABLED"] == "0"


@pytest.mark.parametrize(
    ("sys_platform", "machine", "expected"),
    [
        ("linux", "x86_64", ("linux", "amd64")),
        ("linux", "aarch64", ("linux", "arm64")),
        ("darwin", "arm64", ("darwin", "arm64")),
        ("darwin", "x86_64", ("darwin", "amd64")),
        ("freebsd14", "amd64", ("freebsd", "amd64")),
    ],
)
def test_go_platform(sys_platform: str, machine: str, expected: tuple[str, str]) -> None:
    assert tools.go_platform(sys_platform, machine) == expected


@pytest.mark.parametrize(("sys_platform", "machine"), [("win32", "AMD64"), ("linux", "riscv64")])
def test_go_platform_unsupported(sys_platform: str, machine: str) -> None:
    with pytest.raises(ToolingError, match="no release binaries"):
        tools.go_platform(sys_platform, machine)


def test_get_tool_unknown() -> None:
    with pytest.raises(ToolingError, match="opentofu, terragrunt, actionlint, act"):
        tools.get_tool("terraform")


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"IAC_CACHE_DIR": "/c/iac", "XDG_CACHE_HOME": "/x"}, Path("/c/iac")),
        ({"IAC_CACHE_DIR": "", "XDG_CACHE_HOME": "/x"}, Path("/x/iac-tooling")),
        ({"IAC_CACHE_DIR": "", "XDG_CACHE_HOME": ""}, Path.home() / ".cache" / "iac-tooling"),
    ],
)
def test_cache_dir(env: dict[str, str], expected: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert config.cache_root() == expected
    assert toolchain.cached_binary("tofu", "1.12.6") == expected / "tools/opentofu/1.12.6/tofu"


def test_repo_pins_all_managed_tools() -> None:
    assert set(PINS) == set(tools.TOOLS)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("python 3.11\nopentofu latest\n", r":2: opentofu 'latest' is not an exact version"),
        ("terragrunt v1.1.3\n", r":1: terragrunt 'v1.1.3' is not an exact version"),
    ],
)
def test_read_pins_refuses_inexact_versions(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / ".tool-versions").write_text(text)
    with pytest.raises(ToolingError, match=message):
        toolchain.read_pins(tmp_path)


def test_read_pins_ignores_other_tools_and_needs_the_file(tmp_path: Path) -> None:
    with pytest.raises(ToolingError, match=r"\.tool-versions not found"):
        toolchain.read_pins(tmp_path)
    (tmp_path / ".tool-versions").write_text("python 3.11.9\nterragrunt 1.1.3\n")
    assert [(t.name, v) for t, v in toolchain.read_pins(tmp_path)] == [("terragrunt", "1.1.3")]


# --------------------------------------------------------------------------
# helpers for the tests that run programs


def _real_binary(name: str) -> Path | None:
    """The real pinned ``name`` on this machine, if it is installed anywhere we look."""
    tool = tools.get_tool(name)
    version = PINS[name]
    candidates = [
        toolchain.cached_binary(name, version, USER_CACHE),
        binpath.scripts_dir() / tool.binary,
    ]
    found = shutil.which(tool.binary)
    if found:
        candidates.append(Path(found))
    for candidate in candidates:
        if not candidate.is_file():
            continue
        try:
            out = proc.run([str(candidate), *tool.version_args], timeout=60)
        except ToolingError:
            continue
        if tools.parse_version_output(name, out.stdout + out.stderr) == version:
            return Path(os.path.realpath(candidate))
    return None


_REAL: dict[str, Path | None] = {}


def real_binary(name: str) -> Path:
    """The real pinned binary, or skip the test."""
    if name not in _REAL:
        _REAL[name] = _real_binary(name)
    path = _REAL[name]
    if path is None:
        pytest.skip(f"{name} {PINS[name]} is not installed: run `invoke setup`")
    return path


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private, empty cache directory (``IAC_CACHE_DIR``)."""
    directory = tmp_path / "cache"
    monkeypatch.setenv("IAC_CACHE_DIR", str(directory))
    return directory


@pytest.fixture
def spawned(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """Record every command the toolchain runs (they still run)."""
    calls: list[tuple[str, ...]] = []
    real_run = proc.run

    def recording_run(args: Sequence[str], **kwargs: Any) -> proc.Result:
        calls.append(tuple(str(a) for a in args))
        return real_run(args, **kwargs)

    monkeypatch.setattr(proc, "run", recording_run)
    return calls


def forbid_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on, starting any process fails the test."""

    def refuse(*args: object, **kwargs: object) -> Any:
        raise AssertionError(f"a process was started: {args!r}")

    monkeypatch.setattr(proc, "run", refuse)
    monkeypatch.setattr("subprocess.Popen", refuse)


def path_with(monkeypatch: pytest.MonkeyPatch, directory: Path, *, keep: bool = True) -> None:
    """Put ``directory`` first on PATH (alone unless ``keep``)."""
    rest = [os.environ.get("PATH", "")] if keep else []
    monkeypatch.setenv("PATH", os.pathsep.join([str(directory), *rest]))


def link_real_binaries(directory: Path, names: Sequence[str]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        (directory / tools.get_tool(name).binary).symlink_to(real_binary(name))


FAKE_OUTPUT = {
    "opentofu": "OpenTofu v{v}\non linux_amd64",
    "terragrunt": "terragrunt version v{v}",
    "actionlint": "{v}\ninstalled by downloading from release page",
    "act": "act version {v}",
}


def fake_tool_script(name: str, version: str) -> bytes:
    """A shell script that answers the version command like ``name`` ``version``."""
    lines = FAKE_OUTPUT[name].format(v=version).splitlines()
    quoted = " ".join(f"'{line}'" for line in lines)
    return f"#!/bin/sh\nprintf '%s\\n' {quoted}\n".encode()


def write_fake_tool(path: Path, name: str, version: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(fake_tool_script(name, version))
    path.chmod(0o755)
    return path


def write_pins(repo: Path, pins: dict[str, str]) -> Path:
    repo.mkdir(parents=True, exist_ok=True)
    (repo / ".tool-versions").write_text(
        "# test pins\n" + "".join(f"{name} {version}\n" for name, version in pins.items())
    )
    return repo


# --------------------------------------------------------------------------
# check_versions


def test_check_versions_refuses_another_terragrunt_version(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    link_real_binaries(tmp_path / "bin", ["opentofu", "terragrunt"])
    path_with(monkeypatch, tmp_path / "bin")
    repo = write_pins(tmp_path / "repo", {"opentofu": PINS["opentofu"], "terragrunt": "0.99.0"})

    with pytest.raises(ToolingError) as err:
        toolchain.check_versions(repo)

    message = str(err.value)
    assert "pins 0.99.0" in message
    assert f"is {PINS['terragrunt']}" in message
    assert "invoke setup" in message
    assert "opentofu" not in message  # the matching tool is not reported


def test_check_versions_accepts_the_pinned_versions(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    link_real_binaries(tmp_path / "bin", list(TASK_PINS))
    path_with(monkeypatch, tmp_path / "bin")

    found = toolchain.check_versions(REPO_ROOT)

    assert {(t.name, t.version) for t in found} == set(TASK_PINS.items())
    assert (cache / "version-check.json").is_file()


def test_warm_check_versions_starts_no_process(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    link_real_binaries(tmp_path / "bin", list(TASK_PINS))
    path_with(monkeypatch, tmp_path / "bin")
    toolchain.check_versions(REPO_ROOT)  # cold: runs each tool once

    forbid_processes(monkeypatch)
    found = toolchain.check_versions(REPO_ROOT)

    assert {(t.name, t.version) for t in found} == set(TASK_PINS.items())


def test_check_versions_reports_a_missing_tool(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path_with(monkeypatch, tmp_path / "empty", keep=False)
    repo = write_pins(tmp_path / "repo", {"actionlint": "1.7.12"})
    with pytest.raises(
        ToolingError, match=r"actionlint not found on PATH .*pins actionlint 1\.7\.12"
    ):
        toolchain.check_versions(repo)


def test_cache_key_changes_when_the_binary_changes(tmp_path: Path) -> None:
    binary = write_fake_tool(tmp_path / "terragrunt", "terragrunt", "1.1.3")
    first = toolchain.cache_key(binary)
    assert toolchain.cache_key(binary) == first
    assert first.startswith(f"{os.path.realpath(binary)}|")

    link = tmp_path / "link"
    link.symlink_to(binary)
    assert toolchain.cache_key(link) == first  # keyed by the resolved path

    write_fake_tool(binary, "terragrunt", "1.1.30")  # other size
    second = toolchain.cache_key(binary)
    assert second != first

    st = binary.stat()
    os.utime(binary, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # same size, other mtime
    assert toolchain.cache_key(binary) not in (first, second)


def test_check_versions_notices_a_replaced_binary(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    binary = write_fake_tool(tmp_path / "bin" / "terragrunt", "terragrunt", "1.1.3")
    path_with(monkeypatch, tmp_path / "bin")
    repo = write_pins(tmp_path / "repo", {"terragrunt": "1.1.3"})
    toolchain.check_versions(repo)

    mtime = binary.stat().st_mtime_ns
    write_fake_tool(binary, "terragrunt", "1.1.2")  # same size
    os.utime(binary, ns=(mtime + 1_000_000, mtime + 1_000_000))

    with pytest.raises(ToolingError, match=r"pins 1\.1\.3, but .*terragrunt is 1\.1\.2"):
        toolchain.check_versions(repo)


# --------------------------------------------------------------------------
# ensure_tool and setup


@pytest.mark.parametrize("name", ["opentofu", "terragrunt", "actionlint"])
def test_ensure_tool_reuses_a_cached_install(
    name: str,
    tmp_path: Path,
    cache: Path,
    spawned: list[tuple[str, ...]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    version = PINS[name]
    seeded = toolchain.cached_binary(name, version)
    seeded.parent.mkdir(parents=True)
    seeded.symlink_to(real_binary(name))

    installed = toolchain.ensure_tool(name, version, bin_dir=tmp_path / "venv-bin")

    assert installed.source == "cache"
    assert installed.path == seeded
    assert installed.link == tmp_path / "venv-bin" / seeded.name
    assert os.readlink(installed.link) == str(seeded)
    assert not any(call[0] == "go" for call in spawned)
    assert capsys.readouterr().err == ""  # a warm install says nothing


def test_ensure_tool_takes_the_right_version_from_path(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_fake_tool(tmp_path / "old" / "terragrunt", "terragrunt", "0.50.0")
    good = write_fake_tool(tmp_path / "new" / "terragrunt", "terragrunt", "1.1.3")
    monkeypatch.setenv("PATH", os.pathsep.join([str(tmp_path / "old"), str(tmp_path / "new")]))

    installed = toolchain.ensure_tool("terragrunt", "1.1.3", bin_dir=tmp_path / "venv-bin")

    assert (installed.source, installed.path) == ("path", good)
    assert (tmp_path / "venv-bin" / "terragrunt").resolve() == good
    # a second call links nothing new
    again = toolchain.ensure_tool("terragrunt", "1.1.3", bin_dir=tmp_path / "venv-bin")
    assert again == installed


def test_setup_installs_every_pin_and_a_warm_setup_starts_no_process(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pins = {"opentofu": "1.12.6", "terragrunt": "1.1.3", "actionlint": "1.7.12"}
    for name, version in pins.items():
        write_fake_tool(toolchain.cached_binary(name, version), name, version)
    repo = write_pins(tmp_path / "repo", pins)
    bin_dir = tmp_path / "venv-bin"
    path_with(monkeypatch, bin_dir)

    installed = toolchain.setup(repo, bin_dir=bin_dir)

    assert [(t.name, t.source) for t in installed] == [(n, "cache") for n in pins]
    assert sorted(p.name for p in bin_dir.iterdir()) == ["actionlint", "terragrunt", "tofu"]
    forbid_processes(monkeypatch)
    assert toolchain.setup(repo, bin_dir=bin_dir) == installed
    assert {t.name for t in toolchain.check_versions(repo)} == set(pins)


def test_ensure_tool_replaces_a_cached_binary_of_another_version(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stale = write_fake_tool(toolchain.cached_binary("terragrunt", "1.1.3"), "terragrunt", "1.1.2")
    good = write_fake_tool(tmp_path / "path" / "terragrunt", "terragrunt", "1.1.3")
    path_with(monkeypatch, tmp_path / "path", keep=False)

    installed = toolchain.ensure_tool("terragrunt", "1.1.3", bin_dir=tmp_path / "venv-bin")

    assert (installed.source, installed.path) == ("path", good)
    assert stale.exists()


# -- release downloads from a server on 127.0.0.1


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def release_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path]]:
    """An HTTP server on 127.0.0.1 serving ``<root>/<owner>/<repo>/releases/download/...``."""
    root = tmp_path / "releases"
    root.mkdir()
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")

    def handler(*args: Any, **kwargs: Any) -> _QuietHandler:
        return _QuietHandler(*args, directory=str(root), **kwargs)

    with serving(http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)) as server:
        yield f"http://127.0.0.1:{server.server_address[1]}", root


def publish_release(root: Path, base: str, name: str, version: str, payload: bytes) -> str:
    """Publish a release asset of ``name`` ``version`` holding ``payload`` as its binary.

    Returns the asset's sha256.
    """
    import hashlib

    tool = tools.get_tool(name)
    asset = tools.release_asset(name, version, *toolchain.host_platform(), base_url=base)
    directory = root / asset.url.removeprefix(base + "/").rsplit("/", 1)[0]
    directory.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    if asset.archive == "zip":
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr("LICENSE", "MPL-2.0\n")
            zf.writestr(tool.binary, payload)
    elif asset.archive == "tar.gz":
        with tarfile.open(fileobj=buf, mode="w:gz") as tf:
            for member, data in (("LICENSE.txt", b"MIT\n"), (tool.binary, payload)):
                info = tarfile.TarInfo(member)
                info.size, info.mode = len(data), 0o755
                tf.addfile(info, io.BytesIO(data))
    else:
        buf.write(payload)
    data = buf.getvalue()
    (directory / asset.filename).write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    (directory / asset.checksums_url.rsplit("/", 1)[1]).write_text(
        f"{'0' * 64}  {asset.filename}.sbom.json\n{digest}  {asset.filename}\n"
    )
    return digest


@pytest.mark.parametrize("name", ["opentofu", "terragrunt", "actionlint"])
def test_ensure_tool_downloads_and_verifies_the_release(
    name: str,
    tmp_path: Path,
    cache: Path,
    release_server: tuple[str, Path],
    spawned: list[tuple[str, ...]],
) -> None:
    base, root = release_server
    publish_release(root, base, name, "9.8.7", fake_tool_script(name, "9.8.7"))

    installed = toolchain.ensure_tool(
        name, "9.8.7", bin_dir=tmp_path / "venv-bin", search_path=False, release_base=base
    )

    assert installed.source == "download"
    assert installed.path == toolchain.cached_binary(name, "9.8.7")
    assert os.access(installed.path, os.X_OK)
    assert [p.name for p in installed.path.parent.iterdir()] == [installed.binary]
    assert not any(call[0] == "go" for call in spawned)


def test_ensure_tool_refuses_a_checksum_mismatch(
    tmp_path: Path, cache: Path, release_server: tuple[str, Path]
) -> None:
    base, root = release_server
    publish_release(root, base, "actionlint", "9.8.7", fake_tool_script("actionlint", "9.8.7"))
    asset = tools.release_asset("actionlint", "9.8.7", *toolchain.host_platform(), base_url=base)
    (root / asset.url.removeprefix(base + "/")).write_bytes(b"tampered")

    with pytest.raises(ToolingError, match="checksum mismatch"):
        toolchain.ensure_tool(
            "actionlint", "9.8.7", bin_dir=tmp_path / "b", search_path=False, release_base=base
        )

    version_dir = toolchain.cached_binary("actionlint", "9.8.7").parent
    assert list(version_dir.iterdir()) == []  # nothing installed, nothing half-written


def test_unusable_release_falls_through_to_the_go_build(
    tmp_path: Path,
    cache: Path,
    release_server: tuple[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base, root = release_server
    publish_release(root, base, "terragrunt", "9.8.7", b"x")
    asset = tools.release_asset("terragrunt", "9.8.7", *toolchain.host_platform(), base_url=base)
    (root / asset.checksums_url.removeprefix(base + "/")).write_text(f"{SHA_A}  other_file\n")
    path_with(monkeypatch, tmp_path / "no-go", keep=False)

    with pytest.raises(
        ToolingError, match=r"needs Go \(https://go.dev/dl/\), which is not on PATH"
    ):
        toolchain.ensure_tool(
            "terragrunt", "9.8.7", bin_dir=tmp_path / "b", search_path=False, release_base=base
        )

    assert (
        f"terragrunt 9.8.7: the release download is unusable ({asset.checksums_url} lists no "
        f"{asset.filename}); building from source" in capsys.readouterr().err
    )


# -- the Go build, from a Go module proxy on disk


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


FAKE_ACTIONLINT = {
    "go.mod": "module github.com/rhysd/actionlint\n\ngo 1.21\n",
    "command.go": (
        'package actionlint\n\nvar version = ""\n\n'
        "// Version is set by the linker.\nfunc Version() string { return version }\n"
    ),
    "cmd/actionlint/main.go": (
        'package main\n\nimport (\n\t"fmt"\n\n\t"github.com/rhysd/actionlint"\n)\n\n'
        'func main() {\n\tfmt.Println(actionlint.Version())\n\tfmt.Println("fake build")\n}\n'
    ),
}


def publish_go_module(proxy: Path, module: str, version: str, files: dict[str, str]) -> None:
    """Lay out ``module`` ``version`` as a GOPROXY=file://... directory."""
    at_v = proxy / module / "@v"
    at_v.mkdir(parents=True)
    (at_v / "list").write_text(f"{version}\n")
    (at_v / f"{version}.info").write_text(
        json.dumps({"Version": version, "Time": "2024-01-01T00:00:00Z"})
    )
    (at_v / f"{version}.mod").write_text(files["go.mod"])
    with zipfile.ZipFile(at_v / f"{version}.zip", "w") as zf:
        for rel, text in files.items():
            zf.writestr(f"{module}@{version}/{rel}", text)


@pytest.fixture
def go_proxy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private module proxy and module cache, so the real ones are not touched."""
    go = shutil.which("go")
    if go is None:
        pytest.skip("go is not installed")
    proxy = tmp_path / "goproxy"
    publish_go_module(proxy, "github.com/rhysd/actionlint", "v0.0.1", FAKE_ACTIONLINT)
    modcache = tmp_path / "gomodcache"
    monkeypatch.setenv("GOPROXY", proxy.as_uri())
    monkeypatch.setenv("GOMODCACHE", str(modcache))
    monkeypatch.setenv("GOSUMDB", "off")
    monkeypatch.setenv("GOTOOLCHAIN", "local")
    yield proxy
    if modcache.exists():  # a build that ignored its private caches; its files are read-only
        proc.run([go, "clean", "-modcache"], ok_codes=(0, 1))


def test_network_failure_falls_through_to_the_go_build(
    tmp_path: Path,
    cache: Path,
    go_proxy: Path,
    spawned: list[tuple[str, ...]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    dead = f"http://127.0.0.1:{_free_port()}"  # nothing listens there

    installed = toolchain.ensure_tool(
        "actionlint", "0.0.1", bin_dir=tmp_path / "venv-bin", search_path=False, release_base=dead
    )

    assert installed.source == "build"
    target = toolchain.cached_binary("actionlint", "0.0.1")
    assert installed.path == target
    assert [p.name for p in target.parent.iterdir()] == ["actionlint"]
    out = proc.run([str(tmp_path / "venv-bin" / "actionlint"), "--version"]).stdout
    assert out.splitlines()[0] == "0.0.1"  # the ldflags reached the version variable
    err = capsys.readouterr().err
    # the offline case in words, not as a raw socket error
    assert "actionlint 0.0.1: no release download reachable (127.0.0.1:" in err
    assert "Connection refused); building from source" in err
    assert "Errno" not in err
    assert (
        "actionlint 0.0.1: building from source: fetching Go module "
        "github.com/rhysd/actionlint@v0.0.1" in err
    )
    assert "several minutes" not in err  # no duration that was not measured
    build = next(call for call in spawned if call[:2] == ("go", "build"))
    assert "-trimpath" in build
    assert "-X github.com/rhysd/actionlint.version=0.0.1" in build[build.index("-ldflags") + 1]


def test_go_build_reports_an_unknown_module_version(
    tmp_path: Path, cache: Path, go_proxy: Path
) -> None:
    with pytest.raises(ToolingError, match=r"go mod download github.com/rhysd/actionlint@v0\.0\.2"):
        toolchain.ensure_tool(
            "actionlint", "0.0.2", bin_dir=tmp_path / "b", search_path=False, download=False
        )
    assert not toolchain.cached_binary("actionlint", "0.0.2").exists()


def test_the_tasks_do_not_require_act_but_setup_installs_it(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """act drives the workflow tests only: a missing act never stops a task."""
    assert tools.get_tool("act").test_only
    assert "act" not in {tool.name for tool, _ in toolchain.read_pins(REPO_ROOT)}
    bin_dir = tmp_path / "bin"
    write_fake_tool(bin_dir / "tofu", "opentofu", "1.12.6")
    write_fake_tool(bin_dir / "act", "act", "0.2.88")  # another version: ignored by the check
    path_with(monkeypatch, bin_dir)
    repo = write_pins(tmp_path / "repo", {"opentofu": "1.12.6", "act": "0.2.89"})
    assert [t.name for t in toolchain.check_versions(repo)] == ["opentofu"]

    cached = write_fake_tool(toolchain.cached_binary("act", "0.2.89", cache), "act", "0.2.89")
    write_fake_tool(toolchain.cached_binary("tofu", "1.12.6", cache), "opentofu", "1.12.6")
    out = tmp_path / "venv-bin"
    assert [t.name for t in toolchain.setup(repo, bin_dir=out, test_tools=False)] == ["opentofu"]
    installed = toolchain.setup(repo, bin_dir=out)
    assert [(t.name, t.source) for t in installed] == [("opentofu", "cache"), ("act", "cache")]
    assert os.path.realpath(out / "act") == os.path.realpath(cached)


def test_parse_act_version() -> None:
    assert tools.parse_act_version("act version 0.2.89\n") == "0.2.89"
    with pytest.raises(ToolingError, match="act --version"):
        tools.parse_act_version("nektos\n")


def test_go_build_uses_private_caches_and_removes_them_after_verifying(
    tmp_path: Path,
    cache: Path,
    go_proxy: Path,
    spawned: list[tuple[str, ...]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A build leaves the binary and nothing else: no module or build cache, here or in Go's."""
    monkeypatch.setenv("GOCACHE", str(tmp_path / "user-gocache"))
    monkeypatch.setattr(gobuild, "HEARTBEAT", 0.05)
    seen_env: list[dict[str, str]] = []
    real_run = proc.run

    def recording_run(args: Sequence[str], **kwargs: Any) -> proc.Result:
        if list(args[:1]) == ["go"]:
            seen_env.append(dict(kwargs.get("env") or {}))
        return real_run(args, **kwargs)

    monkeypatch.setattr(proc, "run", recording_run)

    installed = toolchain.ensure_tool(
        "actionlint", "0.0.1", bin_dir=tmp_path / "b", search_path=False, download=False
    )

    assert installed.source == "build"
    scratch = gobuild.scratch_dir(cache, tools.get_tool("actionlint"), "0.0.1")
    assert {env["GOMODCACHE"] for env in seen_env} == {str(scratch / "mod")}
    assert {env["GOCACHE"] for env in seen_env} == {str(scratch / "cache")}
    assert all("-modcacherw" in env["GOFLAGS"].split() for env in seen_env)
    assert not scratch.exists()  # removed once the binary was verified
    assert not (tmp_path / "gomodcache").exists()  # the user's module cache is untouched
    assert not (tmp_path / "user-gocache").exists()  # and so is the user's build cache
    assert sorted(p.name for p in (cache / "tools").rglob("*") if p.is_file()) == ["actionlint"]
    err = capsys.readouterr().err
    assert re.search(r"actionlint 0\.0\.1: fetched the module in \d+ s; compiling", err)
    assert re.search(r"actionlint 0\.0\.1: still compiling, \d+ s", err)  # the heartbeat
    assert re.search(
        r"actionlint 0\.0\.1: built in \d+ s \(fetch \d+ s, compile \d+ s\), cached at ", err
    )


def test_a_failed_go_build_removes_its_private_caches(
    tmp_path: Path, cache: Path, go_proxy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = dict(FAKE_ACTIONLINT, **{"cmd/actionlint/main.go": "package main\n\nthis is not Go\n"})
    publish_go_module(go_proxy / "broken", "github.com/rhysd/actionlint", "v0.0.3", broken)
    monkeypatch.setenv("GOPROXY", (go_proxy / "broken").as_uri())

    with pytest.raises(ToolingError, match="go build"):
        toolchain.ensure_tool(
            "actionlint", "0.0.3", bin_dir=tmp_path / "b", search_path=False, download=False
        )

    assert not gobuild.scratch_dir(cache, tools.get_tool("actionlint"), "0.0.3").exists()
    assert not toolchain.cached_binary("actionlint", "0.0.3").exists()


def test_a_second_setup_waits_for_the_install_lock_then_finds_the_tool_cached(
    tmp_path: Path, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two set-ups at once never build the same tool twice: the second waits, then reuses."""
    tool = tools.get_tool("actionlint")
    lock = toolchain.lock_file(cache, tool, "0.0.9")
    lock.parent.mkdir(parents=True)
    outcome: list[toolchain.InstalledTool | BaseException] = []

    def second_setup() -> None:
        try:  # neither download nor go: only the other set-up's install can satisfy it
            outcome.append(
                toolchain.ensure_tool(
                    "actionlint", "0.0.9", bin_dir=tmp_path / "b", search_path=False, download=False
                )
            )
        except BaseException as exc:
            outcome.append(exc)

    err = ""
    with lock.open("a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # the first set-up, mid-install
        waiter = threading.Thread(target=second_setup)
        waiter.start()
        for _ in range(200):
            err += capsys.readouterr().err
            if "waiting for it to finish" in err:
                break
            waiter.join(0.05)
        assert "actionlint 0.0.9: another set-up is installing it (lock " in err
        assert waiter.is_alive()  # it waits rather than building
        write_fake_tool(toolchain.cached_binary("actionlint", "0.0.9"), "actionlint", "0.0.9")
        fcntl.flock(held, fcntl.LOCK_UN)
    waiter.join(30)

    assert not waiter.is_alive()
    [installed] = outcome
    assert isinstance(installed, toolchain.InstalledTool), installed
    assert installed.source == "cache"
    assert "actionlint 0.0.9: installed by the other set-up; using it" in capsys.readouterr().err


def test_a_warm_setup_prints_nothing_and_one_summary_line(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = write_pins(tmp_path / "repo", {"opentofu": "1.12.6", "terragrunt": "1.1.3"})
    write_fake_tool(toolchain.cached_binary("tofu", "1.12.6", cache), "opentofu", "1.12.6")
    write_fake_tool(toolchain.cached_binary("terragrunt", "1.1.3", cache), "terragrunt", "1.1.3")
    bin_dir = tmp_path / "venv-bin"
    path_with(monkeypatch, bin_dir)
    toolchain.setup(repo, bin_dir=bin_dir)
    capsys.readouterr()

    installed = toolchain.setup(repo, bin_dir=bin_dir)

    assert capsys.readouterr().err == ""
    assert toolchain.summary_line(installed) == "tools: tofu 1.12.6, terragrunt 1.1.3 (cached)"
