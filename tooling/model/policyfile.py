"""``policy.toml``: its name, its tables, and the one check of their keys.

Each table is interpreted where it is used (``[gates]`` by
:func:`tooling.core.gates.parse_policy`, ``[executors]`` by
:func:`tooling.core.executors.parse`, ``[check]`` by
:func:`tooling.core.policy.parse_policy`, ``[apps]`` by
:func:`tooling.core.apps.parse_policy`, ``[layout]`` by
:func:`tooling.model.layout.layout_from`, ``[secrets]`` by
:func:`tooling.core.redact.parse_policy`). Every one of them refuses a key it
does not know, through :func:`refuse_unknown_keys`: a misspelt key must not
silently drop a rule. ``[gate]`` for ``[gates]``, or ``node_type`` for
``node_types``, would otherwise let a VM change apply without approval.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tooling.errors import ToolingError

POLICY_FILE = "policy.toml"

#: the top-level tables of policy.toml
TABLES = frozenset({"gates", "check", "executors", "apps", "layout", "secrets"})


def refuse_unknown_keys(table: Mapping[str, Any], known: Iterable[str], where: str) -> None:
    """Raise naming the keys of ``table`` (``where``, e.g. ``[check]``) that are not ``known``."""
    allowed = sorted(set(known))
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise ToolingError(
            f"{POLICY_FILE}: {where} has unknown key(s) {', '.join(unknown)}; "
            f"known keys: {', '.join(allowed)}. Fix the spelling"
        )


def check_tables(policy: Mapping[str, Any]) -> Mapping[str, Any]:
    """``policy`` itself, once its top level holds only the known tables."""
    refuse_unknown_keys(policy, TABLES, "the top level")
    return policy
