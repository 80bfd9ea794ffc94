"""How old a plan may be when it is applied: policy.toml's ``[apply]``. Pure.

A plan is applied only while it is younger than ``max_plan_age`` (a whole number
with a unit: ``90s``, ``30m``, ``24h``, ``7d``; 24 hours when not set). The
age counts from the moment the plan folder's run started (``planned_at`` in
summary.json) to the moment the apply starts; a folder without that time is as
old as can be (refused). A plan older than the limit is refused as a whole,
naming its age and the limit: plan again. The table is read and checked with the
rest of policy.toml (:func:`tooling.model.policy.policy_from`): ``policy.apply``.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from tooling.errors import ToolingError
from tooling.model.policy import ApplyPolicy


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


def refuse_stale(planned_at: str | None, now: datetime, policy: ApplyPolicy, where: str) -> None:
    """Refuse (naming ``where``) plans older than policy.toml's ``[apply] max_plan_age``."""
    why = too_old(planned_at, now, policy.max_plan_age)
    if why:
        raise ToolingError(f"{where}: {why}; nothing applied")
