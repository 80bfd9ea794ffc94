"""`invoke matrix`: one CI leg per executor with affected units, runner labels from policy.toml.

The executors' parsing and the matrix are pure (tables); the command runs on
real git repositories, and its output is fed to the routing script that
plan.yml runs on it, so the tool and the workflow are held to one contract.
"""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from infra_fixtures import REPO, commit_all, edit, git, invoke

from tooling.commands import ci as ci_flow
from tooling.core.ci import executors
from tooling.core.ci.steps import checked_legs, matrix_outputs, parse_routes
from tooling.errors import ToolingError
from tooling.io import config
from tooling.model.policy import policy_from

HOSTED = {"executor": "hosted", "runs_on": ["ubuntu-latest"]}
LAN = {"executor": "lan", "runs_on": ["self-hosted", "lan"]}


def _matrix(repo: Path, *args: str) -> dict[str, Any]:
    ran = invoke(repo, "matrix", *args)
    assert ran.returncode == 0, ran.output
    doc: dict[str, Any] = json.loads(ran.stdout)  # stdout holds the JSON document only
    return doc


# --------------------------------------------------------------------------- pure


def test_parse_keeps_declaration_order_labels_and_identity_patterns() -> None:
    parsed = policy_from(
        {
            "executors": {
                "hosted": {
                    "runs_on": ["ubuntu-latest"],
                    "aws_role_arn_pattern": "arn:aws:sts::*:assumed-role/p/*",
                },
                "lan": {
                    "runs_on": ["self-hosted", "lan"],
                    "gcp_service_account_pattern": ["lan@*", "x@*"],
                },
            }
        }
    ).executors
    assert list(parsed) == ["hosted", "lan"]
    assert parsed["hosted"].runs_on == ("ubuntu-latest",)
    assert parsed["hosted"].aws_role_arn_patterns == ("arn:aws:sts::*:assumed-role/p/*",)
    assert parsed["hosted"].checks_identity
    assert parsed["lan"].gcp_service_account_patterns == ("lan@*", "x@*")
    assert not policy_from({"executors": {"x": {"runs_on": ["a"]}}}).executors["x"].checks_identity


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"runs_on": []}, "needs runs_on"),
        ({"runs_on": "ubuntu-latest"}, "needs runs_on"),
        ({"runs_on": ["a"], "aws_role_arn_pattern": 3}, "aws_role_arn_pattern must be a pattern"),
        ({"runs_on": ["a"], "runs-on": ["b"]}, "unknown key(s) runs-on"),
    ],
)
def test_parse_rejects_bad_tables_naming_the_key(table: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolingError, match=re.escape(message)):
        policy_from({"executors": {"hosted": table}})


def test_matrix_orders_by_declaration_omits_empty_executors_and_keeps_unit_order() -> None:
    declared = policy_from(
        {
            "executors": {
                "hosted": {"runs_on": ["ubuntu-latest"]},
                "lan": {"runs_on": ["self-hosted", "lan"]},
            }
        }
    ).executors
    units = [("live/cluster/vms", "lan"), ("live/cloud/dns", "hosted"), ("live/cluster/os", "lan")]
    assert executors.matrix(units, declared) == {
        "include": [
            {**HOSTED, "units": ["live/cloud/dns"]},
            {**LAN, "units": ["live/cluster/vms", "live/cluster/os"]},
        ]
    }
    assert executors.matrix([("live/cluster/os", "lan")], declared) == {
        "include": [{**LAN, "units": ["live/cluster/os"]}]
    }
    assert executors.matrix([], declared) == {"include": []}


def test_a_unit_of_an_undeclared_executor_is_an_error_naming_it() -> None:
    declared = policy_from({"executors": {"hosted": {"runs_on": ["ubuntu-latest"]}}}).executors
    with pytest.raises(
        ToolingError, match=r"unit live/x names executor 'gpu', which policy.toml does not declare"
    ):
        executors.matrix([("live/x", "gpu")], declared)


def test_a_unit_the_model_cannot_evaluate_gets_no_matrix_leg_and_the_error_says_why() -> None:
    declared = policy_from({"executors": {"hosted": {"runs_on": ["ubuntu-latest"]}}}).executors
    with pytest.raises(ToolingError, match=r"unit live/x: the model cannot evaluate it"):
        executors.matrix([("live/x", "<unresolved>")], declared)


def test_the_runner_labels_are_declared_once_and_the_workflows_agree() -> None:
    """policy.toml is the one declaration; the workflows' routing guards and drift's legs must match it."""
    declared = config.read_policy(REPO).executors
    routes = {name: list(e.runs_on) for name, e in declared.items()}
    assert routes == {"hosted": ["ubuntu-latest"], "lan": ["self-hosted", "lan"]}
    for name in ("plan.yml", "apply.yml"):
        assert _workflow_routes(name) == routes, (
            f"{name}: its routing guard differs from policy.toml"
        )
    drift = yaml.safe_load((REPO / ".github" / "workflows" / "drift.yml").read_text())
    legs = {
        leg["executor"]: leg["runs_on"]
        for leg in drift["jobs"]["drift"]["strategy"]["matrix"]["include"]
    }
    assert legs == routes
    # every tier's executor is declared
    for tier in sorted((REPO / "live").glob("*/tier.hcl")):
        executor = re.search(r'executor\s*=\s*"([^"]+)"', tier.read_text())
        assert executor and executor.group(1) in declared, tier


def test_the_expected_identities_match_the_roles_bootstrap_creates() -> None:
    declared = config.read_policy(REPO).executors
    boot = tomllib.loads((REPO / "bootstrap" / "bootstrap.toml").read_text())
    roles = boot["roles"]
    hosted = declared["hosted"].aws_role_arn_patterns
    for role in (roles["plan"]["name"], roles["apply"]["name"]):
        assert executors.matches(
            f"arn:aws:sts::123456789012:assumed-role/{role}/plan-42-1", hosted
        ), role
    lan_arn = f"arn:aws:sts::123456789012:assumed-role/{roles['lan']['name']}/vault-lan-1"
    assert executors.matches(lan_arn, declared["lan"].aws_role_arn_patterns)
    assert not executors.matches(lan_arn, hosted)
    assert not executors.matches(
        "arn:aws:sts::123456789012:user/moto", declared["lan"].aws_role_arn_patterns
    )


# --------------------------------------------------------------------------- invoke matrix


def test_a_cluster_only_change_lists_only_the_lan_executor_and_its_units(
    example_repo: Path,
) -> None:
    git(example_repo, "checkout", "--quiet", "-b", "vm-bump")
    edit(example_repo, "live/cluster/vms/terragrunt.hcl", "?ref=v1.1.0", "?ref=v1.2.0")
    edit(
        example_repo,
        "live/cluster/tier.hcl",
        'gate       = "auto"',
        'gate       = "auto" # reviewed',
    )
    commit_all(example_repo, "bump the vm module; touch the cluster tier file")
    doc = _matrix(example_repo, "--base", "main")
    assert doc == {
        "include": [
            {
                **LAN,
                "units": [
                    "live/cluster/network",
                    "live/cluster/vms",
                    "live/cluster/os",
                    "live/cluster/gitops",
                ],
            }
        ]
    }


def test_a_mixed_change_lists_both_executors_hosted_first(example_repo: Path) -> None:
    git(example_repo, "checkout", "--quiet", "-b", "mixed")
    edit(example_repo, "live/cluster/vms/terragrunt.hcl", "?ref=v1.1.0", "?ref=v1.2.0")
    edit(example_repo, "live/cloud/dns/terragrunt.hcl", "ttl = 60", "ttl = 120")
    commit_all(example_repo, "a cloud and a cluster change")
    assert _matrix(example_repo, "--base", "main") == {
        "include": [{**HOSTED, "units": ["live/cloud/dns"]}, {**LAN, "units": ["live/cluster/vms"]}]
    }


def test_a_deleted_unit_puts_its_executor_in_the_matrix(example_repo: Path) -> None:
    git(example_repo, "checkout", "--quiet", "-b", "retire")
    shutil.rmtree(example_repo / "live/cloud/registry")
    commit_all(example_repo, "retire the registry")
    assert _matrix(example_repo, "--base", "main") == {
        "include": [{**HOSTED, "units": ["live/cloud/registry"]}]
    }


def test_no_change_gives_an_empty_include_and_the_workflow_starts_no_plan_job(
    example_repo: Path, tmp_path: Path
) -> None:
    git(example_repo, "checkout", "--quiet", "-b", "docs")
    (example_repo / "NOTES.md").write_text("nothing any unit reads\n")
    commit_all(example_repo, "docs only")
    doc = _matrix(example_repo, "--base", "main")
    assert doc == {"include": []}
    outputs = _run_workflow_guard("plan.yml", doc, tmp_path)
    assert outputs == {"matrix": '{"include":[]}', "any": "false"}
    plan_job = yaml.safe_load((REPO / ".github/workflows/plan.yml").read_text())["jobs"]["plan"]
    assert (
        "needs.matrix.outputs.any == 'true'" in plan_job["if"]
    )  # so the empty matrix is never expanded


def test_the_workflow_guard_accepts_the_real_matrix_and_refuses_a_misrouted_one(
    example_repo: Path, tmp_path: Path
) -> None:
    git(example_repo, "checkout", "--quiet", "-b", "mixed")
    edit(example_repo, "live/cloud/iam/terragrunt.hcl", 'include "root"', '# iam\ninclude "root"')
    edit(
        example_repo,
        "live/cluster/network/terragrunt.hcl",
        'include "root"',
        '# network\ninclude "root"',
    )
    commit_all(example_repo, "comments in two tiers")
    doc = _matrix(example_repo, "--base", "main")
    assert [leg["executor"] for leg in doc["include"]] == ["hosted", "lan"]
    for workflow in ("plan.yml", "apply.yml"):
        outputs = _run_workflow_guard(workflow, doc, tmp_path)
        assert outputs["any"] == "true"
        assert json.loads(outputs["matrix"]) == doc
    misrouted = {
        "include": [{**LAN, "runs_on": ["ubuntu-latest"], "units": ["live/cluster/network"]}]
    }
    with pytest.raises(ToolingError, match="executor lan must run on"):
        _run_workflow_guard("plan.yml", misrouted, tmp_path)


def _workflow_routes(workflow: str) -> dict[str, list[str]]:
    """The ROUTES that WORKFLOW's matrix step passes to `invoke matrix --routes`."""
    steps = yaml.safe_load((REPO / ".github/workflows" / workflow).read_text())["jobs"]["matrix"][
        "steps"
    ]
    step = next(s for s in steps if "invoke matrix" in s.get("run", ""))
    assert '--routes "${ROUTES}"' in step["run"]
    return parse_routes(step["env"]["ROUTES"])


def _run_workflow_guard(workflow: str, doc: dict[str, Any], tmp_path: Path) -> dict[str, str]:
    """The routing guard of WORKFLOW's matrix step on DOC; the job outputs it writes."""
    legs = checked_legs(doc, _workflow_routes(workflow))
    output = tmp_path / "github_output"
    output.write_text("")
    ci_flow.write_outputs(matrix_outputs(legs), {"GITHUB_OUTPUT": str(output)})
    return dict(line.split("=", 1) for line in output.read_text().splitlines())
