"""The ``[apply]`` table of policy.toml: how old a plan may be when it is applied. Pure.

A plan is applied only while it is younger than ``max_plan_age`` (a whole number
with a unit: ``90s``, ``30m``, ``24h``, ``7d``; 24 hours when not set). The
age counts from the moment the plan folder's run started (``planned_at`` in
summary.json) to the moment the apply starts; a folder without that time is as
old as can be (refused). A plan older than the limit is refused as a whole,
naming its age and the limit: plan again.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from tooling.errors import ToolingError
from tooling.model.policydata import interpreted
from tooling.model.policyfile import POLICY_FILE, refuse_unknown_keys

DEFAULT_MAX_PLAN_AGE = timedelta(hours=24)
_DURATION = re.compile(r"\s*([0-9]{1,9})\s*([smhd])\s*")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


@dataclass(frozen=True)
class ApplyPolicy:
    """The ``[apply]`` table of policy.toml."""

    max_plan_age: timedelta = DEFAULT_MAX_PLAN_AGE


def parse_duration(text: str, where: str) -> timedelta:
    """``90s``, ``30m``, ``24h``, ``7d`` as a :class:`timedelta`; refused naming ``where``."""
    found = _DURATION.fullmatch(text) if isinstance(text, str) else None
    if found is None or int(found[1]) == 0:
        raise ToolingError(
            f"{where} = {text!r}: a duration is a whole number above 0 and one of s, m, h, d "
            '(e.g. "24h")'
        )
    return timedelta(**{_UNITS[found[2]]: int(found[1])})


@interpreted
def parse_policy(data: Mapping[str, Any]) -> ApplyPolicy:
    table = data.get("apply")
    if table is None:
        return ApplyPolicy()
    if not isinstance(table, dict):
        raise ToolingError(f"{POLICY_FILE}: [apply] must be a table")
    refuse_unknown_keys(table, ("max_plan_age",), "[apply]")
    if "max_plan_age" not in table:
        return ApplyPolicy()
    return ApplyPolicy(
        parse_duration(table["max_plan_age"], f"{POLICY_FILE}: [apply] max_plan_age")
    )


def shown(age: timedelta) -> str:
    """``2d 3h``, ``25h 4m``-style: the largest two units of ``age``."""
    seconds = max(0, int(age.total_seconds()))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{n}{u}" for n, u in ((days, "d"), (hours, "h"), (minutes, "m"), (secs, "s")) if n]
    return " ".join(parts[:2]) or "0s"


def too_old(planned_at: str | None, now: datetime, limit: timedelta) -> str | None:
    """Why a plan made at ``planned_at`` (ISO 8601, UTC) may not apply at ``now``, or None."""
    if not planned_at:
        return (
            "the plan folder does not say when it was planned (no planned_at in summary.json): "
            "plan again with this version of the tooling"
        )
    try:
        then = datetime.fromisoformat(planned_at.replace("Z", "+00:00"))
    except ValueError:
        return f"planned_at {planned_at!r} is not a time: plan again"
    if then.tzinfo is None:
        return f"planned_at {planned_at!r} has no time zone: plan again"
    age = now - then
    if age > limit:
        return (
            f"the plans are {shown(age)} old, older than the limit of {shown(limit)} "
            "([apply] max_plan_age in policy.toml): plan again, review, then apply"
        )
    if age < -timedelta(minutes=5):
        return f"planned_at {planned_at} is in the future (the clock of the plan's runner?): plan again"
    return None


def refuse_stale(
    planned_at: str | None, now: datetime, policy: Mapping[str, Any], where: str
) -> None:
    """Refuse (naming ``where``) plans older than policy.toml's ``[apply] max_plan_age``."""
    why = too_old(planned_at, now, parse_policy(policy).max_plan_age)
    if why:
        raise ToolingError(f"{where}: {why}; nothing applied")
