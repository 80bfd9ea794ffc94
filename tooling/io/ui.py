"""Human output. One convention for every command:

- :func:`show`: the command's result (a listing, a table, a verdict) on
  **stdout**, so ``invoke affected | less`` shows it; with ``--json`` stdout
  carries only the JSON document instead;
- :func:`say`: progress, the embedded-default line and diagnostics on
  **stderr**.
"""

from __future__ import annotations

import sys


def say(message: str = "") -> None:
    """Progress or a diagnostic: stderr."""
    print(message, file=sys.stderr, flush=True)


def show(message: str = "") -> None:
    """The result: stdout."""
    print(message, file=sys.stdout, flush=True)
