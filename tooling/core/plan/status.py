"""How planning one unit ended: ``status`` in summary.json, as an enum. Pure.

A :class:`Status` is a ``str`` (``StrEnum``): it compares equal to, and is written to
JSON as, the same strings summary.json has always held.
"""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    """How planning one unit ended (``status`` in summary.json)."""

    CHANGES = "changes"
    NO_CHANGES = "no-changes"
    ERROR = "error"
    WITHHELD = "withheld"  # plan_on_pr = false, on a pull request
    BLOCKED = "blocked"  # a moved unit whose state must be migrated first
    EXCLUDED = "excluded"  # an exclude block takes it out of the run
    NOT_PLANNED = "not-planned"  # a dependency failed, or the run was interrupted

    @property
    def planned(self) -> bool:
        """A plan was made and read (there is a plan file to apply or skip)."""
        return self in (Status.CHANGES, Status.NO_CHANGES)
