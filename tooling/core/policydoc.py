"""The whole of ``policy.toml`` checked at once, before a task does anything. Pure.

Each table is interpreted where it is used (see :mod:`tooling.model.policyfile`),
so a task that never reads ``[gates]`` would never notice ``node_type`` for
``node_types``. :func:`validate` reads every table the way its user does: every
task calls it first (:func:`tooling.cli.run`), and an unknown table or
key, or a value of the wrong kind, stops the task by name before it writes
anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tooling.core import (
    applypolicy,
    apppolicy,
    checksettings,
    declared,
    executors,
    gates,
    names,
    redact,
)
from tooling.model.layout import layout_from
from tooling.model.policyfile import POLICY_FILE, check_tables


def validate(policy: Mapping[str, Any], where: str = POLICY_FILE) -> None:
    """Raise :class:`~tooling.errors.ToolingError` at the first table of a parsed
    policy.toml that its reader would refuse (unknown key, wrong type)."""
    check_tables(policy)
    layout_from(policy, where)
    gates.parse_policy(policy)
    executors.parse(policy)
    checksettings.parse_policy(policy)
    names.pattern_from(policy)
    redact.parse_policy(policy)
    declared.parse_policy(policy)
    applypolicy.parse_policy(policy)
    if "apps" in policy:  # optional: only the app tier's tasks need it
        apppolicy.parse_policy(policy)
