"""Building a tool from its Go module, in private Go caches that are removed afterwards.

A build of OpenTofu or Terragrunt fills Go's module and build caches with
several gigabytes the user never asked for. :func:`build` therefore points
``GOMODCACHE``, ``GOCACHE`` and ``GOPATH`` at a scratch folder under the tool
cache (``<cache>/go-build/<tool>-<version>``; ``GOFLAGS=-modcacherw`` makes
the module cache removable), and removes that folder once the binary has been
verified, or the build has failed. Go's default caches (``~/go/pkg/mod``,
``~/.cache/go-build``) are left untouched.

It prints one line per phase with the elapsed time (fetching the module,
compiling), and a heartbeat every :data:`HEARTBEAT` seconds while a phase
runs, so a ten-minute build never looks like a hang.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from tooling.errors import ToolingError
from tooling.io import proc
from tooling.io.release import partial_dir
from tooling.io.ui import say
from tooling.model.tools import TOOL_VERSIONS_FILE, Tool, go_build_recipe

#: seconds between two "still compiling" lines
HEARTBEAT = 30.0

#: added to the environment of every ``go`` command of a build
GO_BUILD_ENV: Mapping[str, str] = {"CGO_ENABLED": "0"}


def private_go_env(scratch: Path) -> dict[str, str]:
    """The environment that keeps a build's Go caches inside ``scratch``."""
    flags = os.environ.get("GOFLAGS", "").split()
    if "-modcacherw" not in flags:
        flags.append("-modcacherw")  # else the module cache is read-only and hard to remove
    return {
        **GO_BUILD_ENV,
        "GOMODCACHE": str(scratch / "mod"),
        "GOCACHE": str(scratch / "cache"),
        "GOPATH": str(scratch / "gopath"),
        "GOFLAGS": " ".join(flags),
    }


def scratch_dir(cache: Path, tool: Tool, version: str) -> Path:
    """Where the build of ``tool`` ``version`` keeps its Go caches and sources."""
    return cache / "go-build" / f"{tool.name}-{version}"


@contextmanager
def heartbeat(label: str, phase: str, started: float) -> Iterator[None]:
    """Say ``<label>: still <phase>, N s`` every :data:`HEARTBEAT` seconds until the block ends."""
    done = threading.Event()

    def beat() -> None:
        while not done.wait(HEARTBEAT):
            say(f"{label}: still {phase}, {time.monotonic() - started:.0f} s")

    thread = threading.Thread(target=beat, name=f"heartbeat {label}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def _make_writable(tree: Path) -> None:
    """``chmod -R u+w``: a module cache written without ``-modcacherw`` is read-only."""
    for root, _dirs, files in os.walk(tree):
        os.chmod(root, os.stat(root).st_mode | stat.S_IWUSR)
        for name in files:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                os.chmod(path, os.stat(path).st_mode | stat.S_IWUSR)


def remove_scratch(scratch: Path) -> None:
    """Remove a build's scratch folder, read-only module files included."""
    if not scratch.exists():
        return
    with contextlib.suppress(OSError):  # rmtree removes what it can
        _make_writable(scratch)
    shutil.rmtree(scratch, ignore_errors=True)


def build(
    tool: Tool,
    version: str,
    target: Path,
    *,
    cache: Path,
    run_version: Callable[[Tool, Path], str],
) -> None:
    """Build ``tool`` ``version`` from its Go module and install it at ``target``.

    ``run_version`` runs the built binary's version command: it is installed
    only if it reports ``version``.
    """
    label = f"{tool.binary} {version}"
    recipe = go_build_recipe(tool.name, version)
    if shutil.which("go") is None:
        raise ToolingError(
            f"{label}: not cached, not on PATH, and no usable release download; building it "
            f"from source needs Go (https://go.dev/dl/), which is not on PATH. Install Go, or "
            f"install {tool.binary} {version} yourself and put it on PATH; then run `invoke setup` again."
        )
    scratch = scratch_dir(cache, tool, version)
    remove_scratch(scratch)  # what an interrupted build left behind
    scratch.mkdir(parents=True)
    env = private_go_env(scratch)
    started = time.monotonic()
    try:
        say(f"{label}: building from source: fetching Go module {recipe.module_query}")
        with heartbeat(label, "fetching the Go module", started):
            result = proc.run(
                ["go", "mod", "download", "-json", recipe.module_query],
                cwd=scratch,
                env=env,
                ok_codes=(0, 1),
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
        fetched = time.monotonic()
        say(
            f"{label}: fetched the module in {fetched - started:.0f} s; compiling "
            f"(its dependencies are fetched as needed)"
        )
        source = scratch / "src"
        shutil.copytree(module_dir, source, symlinks=True)
        _make_writable(source)
        with partial_dir(target.parent) as partial:
            built = partial / tool.binary
            with heartbeat(label, "compiling", started):
                proc.run(recipe.build_args(built), cwd=source, env=env)
            got = run_version(tool, built)
            if got != version:
                raise ToolingError(
                    f"{label}: the binary built from {recipe.module_query} reports version {got}; "
                    f"the build recipe (ldflags {recipe.ldflags!r}) may not fit this version. "
                    f"Install {tool.binary} {version} yourself and put it on PATH, and report it."
                )
            os.replace(built, target)
    finally:
        remove_scratch(scratch)
    now = time.monotonic()
    say(
        f"{label}: built in {now - started:.0f} s (fetch {fetched - started:.0f} s, "
        f"compile {now - fetched:.0f} s), cached at {target}; its Go caches are removed"
    )
