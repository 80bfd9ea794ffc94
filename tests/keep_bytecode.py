"""Let the test run, and every Python process it starts, keep Python's bytecode cache.

Imported by ``conftest.py`` before anything else of the project, for its effect:
an environment that sets ``PYTHONDONTWRITEBYTECODE`` (this repository's does)
otherwise makes every ``python -m invoke`` a test starts compile each tooling
module it imports again, and pytest rewrite every test module's assertions
again in each xdist worker, on every run (README, "Tests").

The cache goes under the virtual environment (``PYTHONPYCACHEPREFIX``), never
beside the sources or into a test's repository; a prefix already set is kept.
``invoke`` itself still writes no cache for a repository's ``tasks.py`` (its
``--write-pyc``). Outside a virtual environment nothing changes.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def keep_bytecode() -> Path | None:
    """Turn the bytecode cache on for this process and its children; the prefix, or None."""
    if sys.prefix == sys.base_prefix:
        return None
    prefix = Path(os.environ.get("PYTHONPYCACHEPREFIX") or Path(sys.prefix) / "pycache")
    os.environ["PYTHONPYCACHEPREFIX"] = str(prefix)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.pycache_prefix = str(prefix)
    sys.dont_write_bytecode = False
    return prefix


PREFIX = keep_bytecode()
