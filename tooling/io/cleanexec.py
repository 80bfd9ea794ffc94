"""The launcher that starts a program with a clean environment: ``iac-clean-exec``.

root.hcl's working-copy check runs as a Terragrunt hook, in the environment a unit's
``extra_arguments`` may extend: a dynamic loader variable there (``LD_PRELOAD``) would
run a committed library's constructor inside the check's ``sh`` and ``python`` before
they run a line, and ``env -i`` would not help (``env`` is itself dynamically linked).
So the hook's first program is ``iac-clean-exec`` (``tooling/cleanexec/main.go``):
statically linked (Go, ``CGO_ENABLED=0``), no loader runs for it; it replaces itself
with the check, whose environment holds only what its arguments name.

It is built from the source shipped with the package, once per machine, into the tool
cache (``tools/iac-clean-exec/<source digest>/``, beside the pinned tools): by
``invoke setup``, else on first use. A binary is used only from a folder named by the
digest of the source it was built from.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from tooling.errors import ToolingError
from tooling.io import proc
from tooling.io.config import cache_root
from tooling.io.gobuild import GO_BUILD_ENV, private_go_env, remove_scratch
from tooling.io.ui import say

NAME = "iac-clean-exec"
SOURCE = Path(__file__).resolve().parent.parent / "cleanexec" / "main.go"


def digest() -> str:
    """The first 16 hex digits of the SHA-256 of the launcher's source."""
    return hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]


def _tool_dirs() -> list[Path]:
    """Where pinned tools live: the tool cache, and the one the pinned Terragrunt on
    ``PATH`` was installed in (a test run's cache is its own; the tools are the machine's)."""
    dirs = [cache_root() / "tools"]
    found = shutil.which("terragrunt")
    if found:
        real = Path(os.path.realpath(found))
        if len(real.parents) > 2 and real.parents[2].name == "tools":
            dirs.append(real.parents[2])
    return list(dict.fromkeys(dirs))


def _cached() -> Path | None:
    for tools in _tool_dirs():
        path = tools / NAME / digest() / NAME
        if path.is_file() and os.access(path, os.X_OK):
            return path
    return None


def build(tools: Path | None = None) -> Path:
    """Build the launcher into ``tools`` (default: where the pinned tools are); its path.

    Needs ``go``; its caches are private to the build and removed afterwards."""
    folder = (tools or _tool_dirs()[-1]) / NAME / digest()
    if shutil.which("go") is None:
        raise ToolingError(
            f"{NAME} (the working-copy check's clean-environment launcher) is not built and "
            "`go` is not installed: install Go (https://go.dev/dl/), then run `invoke setup`"
        )
    folder.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{NAME}-", dir=folder.parent))
    try:
        say(f"{NAME}: building the working-copy check's launcher (Go, once per machine)")
        out = scratch / NAME
        proc.run(
            ["go", "build", "-trimpath", "-ldflags=-s -w", "-o", str(out), str(SOURCE)],
            cwd=scratch,
            env={**private_go_env(scratch), **GO_BUILD_ENV, "GO111MODULE": "off"},
        )
        os.replace(out, folder / NAME)  # atomic: a half-built launcher is never used
    finally:
        remove_scratch(scratch)
    return folder / NAME


def launcher() -> Path:
    """The launcher's path, built first when it is not in the tool cache."""
    return _cached() or build()


def clean(
    program: list[str], *, keep: tuple[str, ...] = (), set_: dict[str, str] | None = None
) -> list[str]:
    """``program`` started by the launcher, its environment only ``keep`` (the names, with
    the values the launcher finds) and ``set_`` (fixed here)."""
    if not program or not program[0].startswith("/"):
        raise ValueError("the launcher runs a program by its absolute path")
    args = [str(launcher())]
    for name in keep:
        args += ["-keep", name]
    for name, value in (set_ or {}).items():
        args += ["-set", f"{name}={value}"]
    return [*args, "--", *program]
