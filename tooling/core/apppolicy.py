"""The ``[apps]`` table of policy.toml, read and checked. Pure.

Apart from :mod:`tooling.core.apps` (which re-exports both names) so that checking
policy.toml, before every task, imports neither the app tier's rules nor its records.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tooling.errors import ToolingError
from tooling.model.policydata import interpreted
from tooling.model.policyfile import refuse_unknown_keys


@dataclass(frozen=True)
class AppPolicy:
    """The ``[apps]`` table of policy.toml."""

    allowed_resource_types: tuple[str, ...]
    foundation_buckets: tuple[str, ...] = ()
    gate: str = "auto"

    def allows(self, resource_type: str) -> bool:
        return any(fnmatch.fnmatchcase(resource_type, p) for p in self.allowed_resource_types)


@interpreted
def parse_policy(data: Mapping[str, Any]) -> AppPolicy:
    apps = data.get("apps")
    if not isinstance(apps, dict):
        raise ToolingError(
            "policy.toml has no [apps] table: add one with allowed_resource_types, the resource "
            'types an application may own (e.g. ["aws_db_instance", "aws_s3_bucket"])'
        )
    refuse_unknown_keys(
        apps, ("allowed_resource_types", "foundation_state_buckets", "gate"), "[apps]"
    )
    allowed = apps.get("allowed_resource_types")
    if not isinstance(allowed, list) or not all(isinstance(t, str) and t for t in allowed):
        raise ToolingError(
            "policy.toml: [apps] allowed_resource_types must be a list of resource types (patterns)"
        )
    buckets = apps.get("foundation_state_buckets", [])
    if not isinstance(buckets, list) or not all(isinstance(b, str) for b in buckets):
        raise ToolingError(
            "policy.toml: [apps] foundation_state_buckets must be a list of bucket names"
        )
    gate = apps.get("gate", "auto")
    if gate not in ("auto", "manual"):
        raise ToolingError(f'policy.toml: [apps] gate = {gate!r}: use "auto" or "manual"')
    return AppPolicy(tuple(allowed), tuple(buckets), gate)
