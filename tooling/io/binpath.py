"""The ``bin`` directory of the running Python environment, put first on ``PATH``.

Apart from :mod:`tooling.io.toolchain` so that every
task can put the environment's tools on ``PATH`` without importing the tool
installer: a task that runs no tool (``invoke affected``) starts faster.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["ensure_bin_dir_on_path", "on_path", "scripts_dir"]


def scripts_dir() -> Path:
    """The ``bin`` (``Scripts``) directory of the running Python environment.

    In a virtual environment on POSIX that is ``sys.prefix/bin`` (the ``venv`` install
    scheme), known without importing :mod:`sysconfig` (about 1.5 ms of every task's
    start); elsewhere (Windows, a system Python whose distribution patches its
    schemes) :mod:`sysconfig` answers."""
    if os.name == "posix" and sys.prefix != sys.base_prefix:
        return Path(sys.prefix, "bin")
    import sysconfig

    return Path(sysconfig.get_path("scripts"))


def on_path(directory: Path) -> bool:
    """Whether ``directory`` (resolved) is an entry of this process's ``PATH``."""
    entries = os.environ.get("PATH", "").split(os.pathsep)
    real = os.path.realpath(directory)
    return any(entry and os.path.realpath(entry) == real for entry in entries)


def ensure_bin_dir_on_path() -> None:
    """Put :func:`scripts_dir` first on ``PATH`` of this process (and its children)
    unless it is on ``PATH`` already, e.g. when ``invoke`` runs from an
    unactivated virtual environment."""
    directory = scripts_dir()
    if not on_path(directory):
        os.environ["PATH"] = os.pathsep.join([str(directory), os.environ.get("PATH", "")])
