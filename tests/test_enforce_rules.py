"""The verifier's rules as a table: rendered configuration in, violations out. Pure.

The end-to-end tests (tests/test_enforce.py) feed them what the pinned
Terragrunt renders; these pin the edges of each rule on small inputs.
"""

from __future__ import annotations

from typing import Any

import pytest

from tooling.core.rules.registry import verify
from tooling.core.rules.rule import UnitFacts
from tooling.model.policy import CheckPolicy

FACTS = UnitFacts(
    "live/cloud/iam",
    "cloud",
    sources={"live/cloud/iam/terragrunt.hcl": 'include "root" {}\niam_role = "x"\n'},
)
BACKEND = {"path": "backend.tf", "if_exists": "overwrite_terragrunt", "contents": "terraform {}"}
DECLARED: dict[str, Any] = {"generate": {"backend": BACKEND}}


def _rules(rendered: dict[str, Any], policy: CheckPolicy | None = None) -> list[str]:
    found = verify(rendered, DECLARED, FACTS, policy or CheckPolicy())
    return [v.rule for v in found]


@pytest.mark.parametrize(
    ("rendered", "rules"),
    [
        ({"generate": {"backend": BACKEND}}, []),
        # the declared backend dropped (include with merge_strategy = "no_merge")
        ({"generate": None}, ["enforce-generate"]),
        # the declared block, disabled by name: nothing is generated, nothing is added
        ({"generate": {"backend": {**BACKEND, "disable": True}}}, ["enforce-generate"]),
        ({"generate": {"backend": BACKEND, "x": {"path": "x.tf", "disable": True}}}, []),
        ({"generate": {"backend": {**BACKEND, "contents": "terraform {} "}}}, ["enforce-generate"]),
        ({"generate": {"backend": {**BACKEND, "if_exists": "overwrite"}}}, ["enforce-generate"]),
        ({"terraform": {"extra_arguments": {"v": {"env_vars": {"TF_VAR_zone": "x"}}}}}, []),
        ({"terraform": {"extra_arguments": {"v": {"arguments": ["-var-file=x.tfvars"]}}}}, []),
        (
            {"terraform": {"extra_arguments": {"v": {"arguments": ["-lock-timeout=5m"]}}}},
            [],
        ),
        (
            {"terraform": {"extra_arguments": {"v": {"arguments": ["-state-out=/x"]}}}},
            ["enforce-state"],
        ),
        (
            {"terraform": {"extra_arguments": {"v": {"env_vars": {"TF_WORKSPACE": "dns"}}}}},
            ["enforce-state"],
        ),
        ({"remote_state": None}, []),
        ({"errors": {"retry": [], "ignore": []}}, []),
        ({"dependency": {"a": {"mock_outputs": None}}}, []),
        (
            {
                "dependency": {
                    "a": {
                        "mock_outputs": {"x": 1},
                        "mock_outputs_allowed_terraform_commands": ["plan", "validate"],
                    }
                }
            },
            [],
        ),
        (
            {
                "dependency": {
                    "a": {
                        "mock_outputs": {"x": 1},
                        "mock_outputs_allowed_terraform_commands": ["init", "plan"],
                    }
                }
            },
            [],
        ),
        ({"terraform_binary": "", "download_dir": "", "iam_role": ""}, []),
    ],
)
def test_each_rule_fires_exactly_on_what_changes_the_run(
    rendered: dict[str, Any], rules: list[str]
) -> None:
    rendered = {"generate": {"backend": BACKEND}} | rendered
    rendered = {k: v for k, v in rendered.items() if v is not None or k != "generate"}
    assert _rules(rendered) == rules


def _mocked(commands: list[str]) -> dict[str, Any]:
    dep = {"mock_outputs": {"x": 1}, "mock_outputs_allowed_terraform_commands": commands}
    return {"generate": {"backend": BACKEND}, "dependency": {"a": dep}}


def test_mocks_for_init_validate_and_plan_pass_as_init_applies_no_value() -> None:
    assert _rules(_mocked(["init", "validate", "plan"])) == []


@pytest.mark.parametrize(
    "command",
    [
        "apply",
        "destroy",
        "import",
        "refresh",
        "state",
        "force-unlock",
        "taint",
        "test",
        "frobnicate",
    ],
)
def test_mocks_for_a_command_that_can_write_state_or_is_unknown_are_refused(command: str) -> None:
    found = verify(_mocked(["init", "validate", "plan", command]), DECLARED, FACTS, CheckPolicy())
    assert [v.rule for v in found] == ["enforce-mocks"]
    assert (
        f"allows its mock outputs for {command}: a mock value could be applied" in found[0].message
    )


def test_an_allowlisted_role_brings_its_session_settings_and_names_its_tier() -> None:
    role = "arn:aws:iam::1:role/dns-admin"
    rendered = {
        "generate": {"backend": BACKEND},
        "iam_role": role,
        "iam_assume_role_session_name": "dns",
        "iam_assume_role_duration": 900,
    }
    allowed = CheckPolicy(allowed_roles={"cloud": {"arn:aws:iam::*:role/dns-admin": "why"}})
    other_tier = CheckPolicy(allowed_roles={"cluster": {"arn:aws:iam::*:role/dns-admin": "why"}})
    assert _rules(rendered, allowed) == []
    assert _rules(rendered, other_tier) == ["enforce-role"] * 3
    found = verify(rendered, DECLARED, FACTS, other_tier)
    named = next(v for v in found if v.message.startswith(f"iam_role {role}"))
    assert (named.file, named.line) == ("live/cloud/iam/terragrunt.hcl", 2)
    assert "[check.allowed_roles.cloud]" in named.fix


def test_an_errors_block_passes_only_for_a_unit_the_policy_lists() -> None:
    rendered = {"generate": {"backend": BACKEND}, "errors": {"ignore": [{"name": "all"}]}}
    assert _rules(rendered) == ["enforce-errors"]
    assert _rules(rendered, CheckPolicy(allowed_errors={"live/cloud/*": "why"})) == []
