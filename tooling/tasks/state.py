"""The tasks that change a unit's state deliberately: ``adopt`` (a resource imported through
a plan that shows no difference) and ``move-unit`` (a unit's folder and its state moved
together). Part of the one collection of :mod:`tooling.tasks`.
"""

from __future__ import annotations

from invoke.context import Context

from tooling.cli import run, task, workspace


@task(
    required={"unit": "UNIT", "address": "ADDRESS", "id_": "ID"},
    help={
        "apply": "apply the import plan (only if it shows no difference), then re-plan to confirm"
    },
)
def adopt(c: Context, unit: str, address: str, id_: str, apply: bool = False) -> None:
    """Adopt an existing resource into UNIT at ADDRESS by importing ID, only if nothing else changes.

    Plans the unit with a temporary import block (in a private working copy
    under .iac/, never in live/); accepts only a plan whose only actions are the
    import (0 to add, 0 to change, 0 to destroy). Otherwise prints what differs
    (sensitive values hidden) and exits 1: fix the code, not reality.
    """
    from tooling.commands.adopt import adopt as adopt_resource

    run(
        lambda: adopt_resource(workspace(), unit, address, id_, apply=apply),
        banner="units",
        tools=True,
    )


@task(
    required={"old": "OLD", "new": "NEW"},
    help={
        "remove_backup": "after a move: delete the old key's backup (refused if the new key holds no state)"
    },
)
def move_unit(c: Context, old: str, new: str, remove_backup: bool = False) -> None:
    """Move unit OLD to folder NEW (git mv) and migrate its state to NEW's key (local or S3).

    Refuses when NEW's key already holds state or either key is locked. The old
    key is kept as OLD_KEY.moved-backup until --remove-backup. If the folder was
    already moved by hand, migrates the state only.
    """
    from tooling.commands import move

    run(lambda: move.move_unit(workspace(), old, new, remove_backup=remove_backup), banner="units")
