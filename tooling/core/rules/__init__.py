"""The rule that prevents disasters, as checks. Pure.

"The two tiers never point at the same layer or state; every layer has its own
state key; units hold configuration only, pinned to immutable module
versions; bootstrap/ never runs in CI; the tools are pinned once." Each rule is
a small function over the repository model (:class:`tooling.model.repo.Model`), the
policy (``[check]`` in ``policy.toml``) and file contents (a
:class:`Snapshot`), returning :class:`Violation` values. Nothing here starts a
process or touches the disk: :mod:`tooling.commands.check` gathers the inputs and prints
the results.

Every violation names ``file:line``, the rule it breaks and how to fix it;
``docs/rules.md`` explains each rule id.

The rules live one family per module: :mod:`.settings` (the ``[check]``
section), :mod:`.snapshot` (what the rules read and return), :mod:`.state`,
:mod:`.config_only`, :mod:`.pins`, :mod:`.layers`, :mod:`.bootstrap`,
:mod:`.tool_pins`, :mod:`.hidden` (what a reviewer would miss: unit names,
generated backends, computed refs, commands run while parsing) and
:mod:`.resolved` (the plan-time verifier's rules, :mod:`tooling.core.rules.enforce`,
on each unit's static form);
:func:`check_all` runs them all.
"""

from __future__ import annotations

from collections.abc import Sequence

from tooling.core.rules.bootstrap import check_bootstrap_guard, check_ci_never_runs_bootstrap
from tooling.core.rules.config_only import check_configuration_only
from tooling.core.rules.facts import check_unit_facts
from tooling.core.rules.hidden import (
    check_before_terragrunt,
    check_generate_blocks,
    check_literal_refs,
    check_run_at_parse,
    check_unit_names,
)
from tooling.core.rules.layers import check_layers
from tooling.core.rules.pins import check_pins
from tooling.core.rules.resolved import check_resolved
from tooling.core.rules.settings import DEFAULT_TOOL_PIN_FILES, CheckPolicy, Layer, parse_policy
from tooling.core.rules.snapshot import AppWorkspace, Snapshot, Violation, syntax_violation
from tooling.core.rules.state import app_backend_settings, check_app_workspaces, check_state_keys
from tooling.core.rules.tool_pins import check_tool_versions
from tooling.model.repo import Model
from tooling.model.tools import TOOL_VERSIONS_FILE

__all__ = [
    "DEFAULT_TOOL_PIN_FILES",
    "POLICY_FILE",
    "TOOL_VERSIONS_FILE",
    "AppWorkspace",
    "CheckPolicy",
    "Layer",
    "Snapshot",
    "Violation",
    "app_backend_settings",
    "check_all",
    "check_app_workspaces",
    "check_before_terragrunt",
    "check_bootstrap_guard",
    "check_ci_never_runs_bootstrap",
    "check_configuration_only",
    "check_generate_blocks",
    "check_layers",
    "check_literal_refs",
    "check_pins",
    "check_resolved",
    "check_run_at_parse",
    "check_state_keys",
    "check_tool_versions",
    "check_unit_names",
    "parse_policy",
    "syntax_violation",
]


def check_all(
    model: Model | None,
    policy: CheckPolicy,
    snap: Snapshot,
    apps: Sequence[AppWorkspace] = (),
    *,
    live: Sequence[str] = ("live",),
    root_file: str = "root.hcl",
) -> list[Violation]:
    """Every rule; ``model`` is None when the HCL did not parse (model rules are skipped).
    ``live`` and ``root_file`` are policy.toml's ``[layout]``."""
    found: list[Violation] = []
    if model is not None:
        found += check_state_keys(model, policy, snap)
        found += check_pins(model, policy, snap)
        found += check_layers(model, policy, snap)
        found += check_unit_facts(model, snap)
    found += check_unit_names(model, policy, live)
    found += check_generate_blocks(model, policy, snap, root_file)
    found += check_literal_refs(model, policy, snap)
    found += check_run_at_parse(model, policy, snap)
    found += check_before_terragrunt(model, policy, snap)
    found += check_resolved(model, policy, snap, root_file)
    found += check_app_workspaces(model, policy, apps)
    found += check_configuration_only(model, policy, snap)
    found += check_ci_never_runs_bootstrap(snap)
    found += check_bootstrap_guard(snap)
    found += check_tool_versions(policy, snap)
    return sorted(set(found))
