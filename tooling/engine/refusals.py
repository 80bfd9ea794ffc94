"""Fail closed before anything is planned, applied or bumped: a unit whose HCL does not
parse, a unit folder name outside the naming rule."""

from __future__ import annotations

from collections.abc import Sequence

from tooling.errors import ToolingError
from tooling.io.workspace import Workspace
from tooling.model.repo import Model


def refuse_unparsable(model: Model, paths: Sequence[str], *, doing: str = "plan") -> None:
    """Fail closed, before the report folder is touched, when a unit to plan has an
    HCL syntax error: its dependencies and state key are unknown, so neither the
    plan order nor the change set can be trusted. (A unit the model merely cannot
    *evaluate* is planned: Terragrunt is the authority on what it means.)"""
    wanted = set(paths)
    broken = list(
        dict.fromkeys(
            str(u.error)
            for u in model.units.values()
            if u.path in wanted and "HCL syntax error" in (u.error or "")
        )
    )
    if broken:
        raise ToolingError(
            f"cannot {doing}: a unit's HCL does not parse"
            + (" (the previous report is kept)" if doing == "plan" else "")
            + ":\n  "
            + "\n  ".join(broken)
        )


def refuse_bad_names(ws: Workspace, model: Model, paths: Sequence[str]) -> None:
    """Fail closed before any state key is used or command built when a unit to plan has a
    folder name outside the naming rule (``invoke check`` names the same units)."""
    from tooling.core import names

    wanted = set(paths)
    bad = [
        b
        for b in names.bad_unit_names(model.units, ws.layout.live, names.pattern_from(ws.policy))
        if b.path in wanted
    ]
    if bad:
        raise ToolingError(
            "cannot plan: a unit's folder name is not allowed (the previous report is kept):\n  "
            + "\n  ".join(f"{b.path}/terragrunt.hcl:1: {b.why}" for b in bad)
            + "\nRename the folder to lowercase letters, digits and dashes "
            "(`invoke move-unit OLD NEW` migrates its state); docs/rules.md, unit-name."
        )
