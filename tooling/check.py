"""``python -m tooling.check``: the stable entry point of the ``iac-check`` pre-commit hook.

Other repositories pin this module path in their ``.pre-commit-config.yaml``
(through this repository's ``.pre-commit-hooks.yaml``), so it stays here while
the command itself lives in :mod:`tooling.commands.check`.
"""

from __future__ import annotations

import sys

from tooling.commands.check import main

if __name__ == "__main__":
    sys.exit(main())
