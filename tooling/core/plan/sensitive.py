"""``[sensitive_attributes]`` of policy.toml: attributes providers do not mark sensitive. Pure.

Some attributes hold secrets although their provider does not mark them
sensitive (a container's ``env`` values, say), so OpenTofu prints them in the
plan text. policy.toml declares them per resource type, as attribute paths::

    [sensitive_attributes]
    docker_container = ["env"]
    kubernetes_deployment = ["spec.template.spec.container.env.value"]

A path is dot-separated; a list on the way is walked element by element.
:func:`values_in_plan` collects the values at those paths from a ``show
-json`` plan, and the caller registers them as secrets: every text the tooling
writes or posts (plan text, logs, the report) shows ``(redacted)`` instead. The
table is read and checked with the rest of policy.toml
(:func:`tooling.model.policy.policy_from`): ``policy.sensitive_attributes``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tooling.core.text.redact import secret_strings
from tooling.model.policy import Declared


def _at(value: Any, path: tuple[str, ...]) -> list[Any]:
    if isinstance(value, list):
        return [found for item in value for found in _at(item, path)]
    if not path:
        return [value]
    if isinstance(value, Mapping) and path[0] in value:
        return _at(value[path[0]], path[1:])
    return []


def values_in_plan(plan: Mapping[str, Any], declared: Declared) -> set[str]:
    """Every string (as :func:`tooling.core.text.redact.secret_strings` spells it) at a declared
    path of a resource of a declared type, before and after, in changes and drift."""
    values: set[str] = set()
    if not declared:
        return values
    for key in ("resource_changes", "resource_drift"):
        for raw in plan.get(key) or ():
            paths = declared.get(str(raw.get("type", "")))
            change = raw.get("change") or {}
            for path in paths or ():
                for side in ("before", "after"):
                    for found in _at(change.get(side), path):
                        values |= secret_strings(found)
    return values
