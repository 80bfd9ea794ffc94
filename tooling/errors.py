"""The one error type of the tooling.

Every failure the user can act on is raised as :class:`ToolingError` with a
message that says what went wrong *and what to do next*. ``tasks.py`` turns it
into ``invoke.Exit`` with a non-zero code, so a known failure never prints a
traceback.
"""

from __future__ import annotations


class ToolingError(Exception):
    """A failure the user must act on; ``str(err)`` is the whole message."""

    #: exit code for the CLI: 1 = act on it, 2 = bad usage
    code: int = 1

    def __init__(self, message: str, *, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


class UsageError(ToolingError):
    """Bad command-line usage (exit code 2)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code=2)
