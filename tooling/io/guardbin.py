"""The guard's executable: built from its Go source (``tooling/guard``), kept beside the
pinned tools, and copied into a folder of its own per run with that run's configuration.

The guard is the pipeline's point of execution (:mod:`tooling.core.rules.execpoint`,
docs/rules.md "The point of execution"). It is built like the pinned tools that have no
release download (:mod:`tooling.io.gobuild`): ``go build`` with ``CGO_ENABLED=0`` (a
static binary: no dynamic loader, so ``LD_PRELOAD`` never reaches it), the standard
library only, in private Go caches removed afterwards. Its version is the SHA-256 of its
source, so a changed source is built again; it lives in the tool cache beside the pinned
OpenTofu (``<tools>/tfguard/<version>/tfguard``), where ``invoke setup`` puts it, and a
run that finds none builds it (an install lock keeps two builds from racing).

A run never points Terragrunt at that binary itself: :func:`run_folder` hard-links (or
copies) it into a folder named by the run's configuration, with ``guard.json`` beside it,
because the guard reads its configuration from beside its own executable
(``/proc/self/exe``), never from anything the unit could set.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tooling.errors import ToolingError
from tooling.io import gobuild, proc
from tooling.io.config import cache_root
from tooling.io.release import partial_dir
from tooling.io.ui import say

#: the guard's Go source, shipped with the package
SOURCE = Path(__file__).resolve().parent.parent / "guard"
NAME = "tfguard"
#: the configuration's file name, beside the executable (the guard's ConfigName)
CONFIG_NAME = "guard.json"
#: the name Terragrunt finds the guard by (``TG_TF_PATH``): it runs it as it would run tofu
GUARD_NAME = "tofu"
#: run folders older than this are removed when a run makes its own
KEEP_SECONDS = 7 * 24 * 3600


def source_files() -> list[Path]:
    """The files the guard is built from (its tests left out)."""
    files = [SOURCE / "go.mod", *sorted(SOURCE.glob("*.go"))]
    return [f for f in files if f.is_file() and not f.name.endswith("_test.go")]


def version() -> str:
    """The guard's version: the SHA-256 of its source (first 16 hex digits)."""
    digest = hashlib.sha256()
    for path in source_files():
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def tools_dir() -> Path:
    """The tool cache holding the pinned OpenTofu on ``PATH`` (``<tools>/opentofu/V/tofu``),
    else the user-wide one: the guard lives beside the tools it guards."""
    tofu = shutil.which("tofu")
    if tofu is not None:
        real = Path(os.path.realpath(tofu))
        if len(real.parents) > 2 and real.parents[1].name == "opentofu":
            return real.parents[2]
    return cache_root() / "tools"


def binary_path(tools: Path | None = None) -> Path:
    """Where the guard of this source is (or is built): ``<tools>/tfguard/<version>/tfguard``."""
    return (tools or tools_dir()) / NAME / version() / NAME


@contextmanager
def _lock(tools: Path) -> Iterator[None]:
    path = tools.parent / "locks" / f"{NAME}-{version()}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"guard {version()}: another process is building it (lock {path}); waiting")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build_args(output: Path) -> list[str]:
    """``go build`` of the guard: static, reproducible, stripped."""
    return ["go", "build", "-trimpath", "-ldflags=-s -w -buildid=", "-o", str(output), "."]


def ensure(tools: Path | None = None) -> Path:
    """The guard's executable for this source, built first when there is none."""
    tools = tools or tools_dir()
    target = binary_path(tools)
    if target.is_file():
        return target
    if shutil.which("go") is None:
        raise ToolingError(
            f"the pipeline's guard (tooling/guard) is not built for this version "
            f"({target} is missing) and building it needs Go (https://go.dev/dl/), which "
            "is not on PATH. Install Go and run `invoke setup`."
        )
    with _lock(tools):
        if target.is_file():
            return target
        started = time.monotonic()
        say(f"guard {version()}: building it from tooling/guard (Go, static)")
        scratch = tools.parent / "go-build" / f"{NAME}-{version()}"
        gobuild.remove_scratch(scratch)
        scratch.mkdir(parents=True)
        try:
            source = scratch / "src"
            source.mkdir()
            for path in source_files():
                shutil.copy2(path, source / path.name)
            with partial_dir(target.parent) as partial:
                built = partial / NAME
                with gobuild.heartbeat(f"guard {version()}", "compiling", started):
                    proc.run(build_args(built), cwd=source, env=gobuild.private_go_env(scratch))
                os.replace(built, target)
        finally:
            gobuild.remove_scratch(scratch)
        say(f"guard {version()}: built in {time.monotonic() - started:.0f} s, cached at {target}")
    return target


def run_folder(cache_dir: Path, config: bytes, binary: Path | None = None) -> Path:
    """A folder of its own for one run's configuration (named by its content), holding
    the guard as ``tofu`` (a hard link, else a copy) and ``guard.json``; the path of that
    ``tofu``, for ``TG_TF_PATH``. Folders of earlier runs older than a week are removed."""
    binary = binary or ensure()
    key = hashlib.sha256(config + str(binary).encode()).hexdigest()[:20]
    base = cache_dir / "guard"
    folder = base / key
    exe = folder / GUARD_NAME
    if exe.is_file() and (folder / CONFIG_NAME).is_file():
        return exe
    _prune(base)
    partial = base / f".{key}.{os.getpid()}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        (partial / CONFIG_NAME).write_bytes(config)
        try:
            os.link(binary, partial / GUARD_NAME)
        except OSError:
            shutil.copy2(binary, partial / GUARD_NAME)
        try:
            os.replace(partial, folder)
        except OSError:  # another run made the same folder meanwhile
            if not exe.is_file():
                raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return exe


def _prune(base: Path) -> None:
    if not base.is_dir():
        return
    now = time.time()
    for entry in base.iterdir():
        with contextlib.suppress(OSError):
            if now - entry.stat().st_mtime > KEEP_SECONDS:
                shutil.rmtree(entry, ignore_errors=True)
