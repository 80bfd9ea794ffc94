"""invoke tasks of this repository: the collection of :mod:`tooling.tasks`, the same tasks
the ``iac`` console script runs in any repository that installs the package."""

from __future__ import annotations

import sys

# invoke turns Python's bytecode cache off for the whole run (its `--write-pyc`
# is about this file); the tooling package keeps its cache like any installed
# package, or every run compiles each module it imports again (about 1 CPU s
# for a plan). -B and PYTHONDONTWRITEBYTECODE are still honoured.
sys.dont_write_bytecode = bool(sys.flags.dont_write_bytecode)

from tooling.tasks import ns  # noqa: E402

__all__ = ["ns"]
