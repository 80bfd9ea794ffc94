"""Human output: messages and progress go to stderr, stdout is kept for JSON documents."""

from __future__ import annotations

import sys


def say(message: str = "") -> None:
    print(message, file=sys.stderr, flush=True)
