"""What apply records is what OpenTofu did, and what it applies is what the model and the
reviewer could see: an error OpenTofu reported is never ``applied`` (whatever Terragrunt's
exit code), a unit the model cannot evaluate is marked by plan and refused by apply, and a
manual unit re-planned against real outputs applies only if its values are the approved ones.

Real terragrunt and tofu on the example repository (sandbox catalog, local state).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from infra_fixtures import commit_all, edit, local_unit, units_by_path
from test_apply import FLAKY_MODULE, _apply, _plan

from tooling.core.apply.approval import cascade_wait, differences
from tooling.core.apply.record import outcome, tofu_errors
from tooling.core.plan.gates import Gate
from tooling.core.plan.planjson import PlanSummary, summarize

# ----------------------------------------------------------------- errors OpenTofu reported

PLAIN_ERROR = """terraform_data.flaky: Creating...
terraform_data.flaky: Provisioning with 'local-exec'...
terraform_data.flaky (local-exec): Executing: ["/bin/sh" "-c" "exit 3"]

Error: local-exec provisioner error

  with terraform_data.flaky,
  on main.tf line 3, in resource "terraform_data" "flaky":
   3:   provisioner "local-exec" {

Error running command 'exit 3': exit status 3. Output:
"""
BOXED_ERROR = "╷\n│ Error: local-exec provisioner error\n│ \n│   with terraform_data.flaky,\n╵\n"


@pytest.mark.parametrize(
    ("output", "fragment"),
    [
        pytest.param(PLAIN_ERROR, "local-exec provisioner error", id="plain-diagnostic"),
        pytest.param(BOXED_ERROR, "local-exec provisioner error", id="boxed-diagnostic"),
        pytest.param(
            PLAIN_ERROR + "\nApply complete! Resources: 1 added, 0 changed, 0 destroyed.\n",
            "local-exec provisioner error",
            id="error-then-complete-after-a-retry",
        ),
        pytest.param("Releasing state lock.\n", '"Apply complete!"', id="no-completion"),
    ],
)
def test_an_apply_whose_opentofu_reported_an_error_is_failed_even_with_exit_0(
    output: str, fragment: str
) -> None:
    result, reason = outcome(0, output, False, summary="")
    assert result == "failed"
    assert fragment in reason and "Terragrunt exited 0" in reason


def test_a_resource_printing_error_text_is_not_an_opentofu_error() -> None:
    output = (
        "terraform_data.x (local-exec): Error: this is the script's own output\n"
        "Apply complete! Resources: 1 added, 0 changed, 0 destroyed.\n\n"
        'Outputs:\n\nmsg = "Error: a value"\n'
    )
    assert tofu_errors(output) == []
    assert outcome(0, output, False, summary="") == ("applied", "")


IGNORE_ALL = """
errors {
  ignore "everything" {
    ignorable_errors = [".*"]
    message          = "ignored"
  }
}
"""


def test_an_errors_ignore_block_does_not_make_a_failed_apply_applied(
    example_repo: Path, tmp_path: Path
) -> None:
    local_unit(example_repo, "flaky", FLAKY_MODULE, IGNORE_ALL)
    local_unit(
        example_repo,
        "after",
        'variable "id" {\n  type = string\n}\n\noutput "ok" {\n  value = var.id\n}\n',
        '\ndependency "flaky" {\n  config_path = "../flaky"\n  mock_outputs = { id = "mock" }\n}\n'
        "\ninputs = {\n  id = dependency.flaky.outputs.id\n}\n",
    )
    # allowlisted, so the verifier (enforce-errors) lets it plan: the apply's record must
    # be honest on its own, whatever the policy allows
    policy = example_repo / "policy.toml"
    policy.write_text(
        policy.read_text()
        + '\n[check.allowed_errors]\n"live/cloud/flaky" = "the recording is tested alone"\n'
    )
    commit_all(example_repo, "a failing unit whose errors Terragrunt ignores")
    out = tmp_path / "plans"
    summary = _plan(example_repo, out, "--unit", "live/cloud/flaky", "--unit", "live/cloud/after")
    assert units_by_path(summary)["live/cloud/flaky"]["status"] == "changes"
    code, results, output = _apply(example_repo, out)
    flaky = results["live/cloud/flaky"]
    # before: recorded "applied", exit 0, the resource left tainted in the state
    assert flaky["result"] == "failed", output
    assert "local-exec provisioner error" in flaky["reason"]
    assert "Terragrunt exited 0" in flaky["reason"]
    assert results["live/cloud/after"]["result"] == "not-run"
    assert code == 1
    state = json.loads((example_repo / ".iac/state/live/cloud/flaky/terraform.tfstate").read_text())
    assert [i.get("status") for r in state["resources"] for i in r["instances"]] == ["tainted"]


# ----------------------------------------------------------------- a unit the model cannot read


@pytest.mark.parametrize(
    ("opening", "closing"),
    [
        pytest.param("[", "]", id="lists"),
        pytest.param("{a = ", "}", id="objects"),
        pytest.param("max(", ")", id="calls"),
        pytest.param("(", ")", id="parentheses"),
    ],
)
def test_nesting_deeper_than_the_model_follows_is_an_error_at_its_line_not_a_crash(
    opening: str, closing: str
) -> None:
    from tooling.model import hcl

    text = "locals {\n  ok = 1\n  deep = " + opening * 300 + "1" + closing * 300 + "\n}\n"
    with pytest.raises(hcl.HclTooDeepError, match=r"^x\.hcl:3:\d+: nested more than 200"):
        hcl.parse(text.encode(), "x.hcl")
    # real configuration nests far less, and is read as before
    shallow = "locals {\n  deep = " + opening * 20 + "1" + closing * 20 + "\n}\n"
    (name, _labels, body, _line), *_ = hcl.parse(shallow.encode(), "x.hcl")["b"]
    assert name == "locals" and "deep" in body["a"]


DEEP = '\nlocals {\n  gate = "manual"\n  deep = ' + "[" * 300 + "1" + "]" * 300 + "\n}\n"


def test_a_unit_the_model_cannot_evaluate_is_marked_by_plan_and_refused_by_apply(
    example_repo: Path, tmp_path: Path
) -> None:
    dns = example_repo / "live/cloud/dns/terragrunt.hcl"
    dns.write_text(dns.read_text() + DEEP)
    commit_all(example_repo, "dns: a unit nested too deep for the model")
    out = tmp_path / "plans"
    summary = _plan(example_repo, out, "--unit", "live/cloud/dns", "--unit", "live/cloud/iam")
    unit = units_by_path(summary)["live/cloud/dns"]
    # its module is not known to the model, so the working-copy check refuses to plan it,
    # saying why (fail closed: nothing unverified reaches OpenTofu)
    assert unit["status"] == "error" and "the model cannot evaluate this unit" in unit["error"]
    assert "nested more than 200 syntax levels" in str(unit["model_error"])
    assert "live/cloud/dns/terragrunt.hcl:" in str(unit["model_error"])
    gate = unit["gate"]
    assert isinstance(gate, dict) and gate["decision"] != "auto"  # before: auto (fallback)
    assert unit["executor"] == "<unresolved>"  # before: hosted (fallback)
    comment = (out / "comment.md").read_text()
    assert "The model cannot evaluate this unit" in comment and "(model error)" in comment
    code, results, output = _apply(example_repo, out, "--approve-manual")
    assert results["live/cloud/dns"]["result"] in ("refused", "not-run"), output
    assert results["live/cloud/iam"]["result"] == "applied"  # the others go on
    assert code == 1
    assert not (example_repo / ".iac/state/live/cloud/dns/terraform.tfstate").exists()


def test_an_ambiguous_module_source_is_planned_marked_and_never_applied(
    example_repo: Path, tmp_path: Path
) -> None:
    edit(
        example_repo,
        "live/cloud/dns/terragrunt.hcl",
        "terraform-cloudflare-dns.git?ref=v1.1.0",
        "terraform-cloudflare-dns.git?ref=v1.1.0&ref=v1.0.0",
    )
    commit_all(example_repo, "dns: two refs")
    out = tmp_path / "plans"
    summary = _plan(example_repo, out, "--unit", "live/cloud/dns")
    unit = units_by_path(summary)["live/cloud/dns"]
    assert "'ref' twice" in str(unit["model_error"])
    # the working-copy check refuses to plan it at all (its module cannot be compared with
    # a pinned tag), so apply has no plan of it: not-run; with a plan, apply refuses it
    assert unit["status"] == "error" and "working-copy" in str(unit["error"])
    _code, results, output = _apply(example_repo, out, "--approve-manual")
    assert results["live/cloud/dns"]["result"] in ("refused", "not-run"), output
    assert not (example_repo / ".iac/state/live/cloud/dns/terraform.tfstate").exists()


# ----------------------------------------------------------------- approvals and mock values

NETWORK, VMS = "live/cluster/network", "live/cluster/vms"


def _vm_plan(bridge: str, *, action: str = "create", secret: str = "s") -> PlanSummary:
    return summarize(
        {
            "resource_changes": [
                {
                    "address": 'terraform_data.vm["node-1"]',
                    "type": "terraform_data",
                    "change": {
                        "actions": [action],
                        "before": None,
                        "after": {"input": {"bridge": bridge}, "token": secret},
                        "after_unknown": {"id": True, "output": True},
                        "after_sensitive": {"token": True},
                    },
                }
            ]
        }
    )


def test_a_replan_differs_from_the_approved_plan_by_values_not_only_actions() -> None:
    approved = _vm_plan("vmbr-mock")
    assert differences(approved, _vm_plan("vmbr-mock")) == []
    assert differences(approved, _vm_plan("vmbr1")) == [
        'terraform_data.vm["node-1"]: other values of input'
    ]
    # a sensitive value that differs is told apart too, and never shown
    assert differences(approved, _vm_plan("vmbr-mock", secret="t")) == [
        'terraform_data.vm["node-1"]: other values of token'
    ]
    assert differences(approved, _vm_plan("vmbr-mock", action="update")) == [
        'terraform_data.vm["node-1"]: update instead of create in the approved plan'
    ]
    manual = Gate("manual", ("touches a node/VM",))
    assert (
        cascade_wait(manual, approved=True, reviewed=approved, fresh=_vm_plan("vmbr-mock")) is None
    )
    waits = cascade_wait(manual, approved=True, reviewed=approved, fresh=_vm_plan("vmbr1"))
    assert waits is not None and "approval does not carry over" in waits and "vmbr1" not in waits
    assert cascade_wait(manual, approved=False, reviewed=approved, fresh=approved) == (
        "manual gate: touches a node/VM"
    )
    auto = Gate("auto", ("no delete",))
    assert cascade_wait(auto, approved=False, reviewed=approved, fresh=_vm_plan("vmbr1")) is None


def test_an_approval_given_on_a_mock_plan_does_not_apply_other_real_values(
    example_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "reviewed"
    summary = _plan(example_repo, out, "--unit", NETWORK, "--unit", VMS)
    vms = units_by_path(summary)[VMS]
    assert vms["mocked_dependencies"] == [NETWORK]  # the reviewer saw bridge = "vmbr-mock"
    assert "vmbr-mock" in (out / str(vms["text_file"])).read_text()
    code, results, output = _apply(example_repo, out, "--approve-manual")
    assert code == 0, output
    assert results[NETWORK]["result"] == "applied"
    # before: "applied" (cascaded), the real bridge vmbr1 nobody had approved
    assert results[VMS]["result"] == "waiting-approval", output
    assert results[VMS]["cascaded"] is True
    reason = results[VMS]["reason"]
    assert "differs from the approved plan" in reason
    assert 'terraform_data.vm["node-1"]: other values of input' in reason
    assert "vmbr1" not in reason  # names attributes, never values
    assert not (example_repo / ".iac/state" / VMS / "terraform.tfstate").exists()
    # the new plan is shown where the approver looks
    apply_md = (out / "apply.md").read_text()
    assert "New plan of <code>live/cluster/vms</code>" in apply_md
    assert '"vmbr1"' in apply_md and "vmbr-mock" not in apply_md
    # a new plan, on the real outputs, is what gets approved and applied
    again = tmp_path / "again"
    summary = _plan(example_repo, again, "--unit", VMS)
    assert units_by_path(summary)[VMS]["mocked_dependencies"] == []
    code, results, output = _apply(example_repo, again, "--approve-manual")
    assert code == 0 and results[VMS]["result"] == "applied", output
    assert results[VMS]["cascaded"] is False


def test_an_approval_carries_over_when_the_replan_has_the_approved_values(
    example_repo: Path, tmp_path: Path
) -> None:
    # mocks equal to what network really outputs: the re-plan is the approved plan
    edit(example_repo, f"{VMS}/terragrunt.hcl", '"vmbr-mock"', '"vmbr1"')
    edit(example_repo, f"{VMS}/terragrunt.hcl", "vlan_id = 0", "vlan_id = 40")
    edit(example_repo, f"{VMS}/terragrunt.hcl", '"10.0.0.1"', '"10.40.0.1"')
    commit_all(example_repo, "vms: mocks shaped like the real network")
    out = tmp_path / "reviewed"
    summary = _plan(example_repo, out, "--unit", NETWORK, "--unit", VMS)
    assert units_by_path(summary)[VMS]["mocked_dependencies"] == [NETWORK]
    code, results, output = _apply(example_repo, out, "--approve-manual")
    assert code == 0, output
    assert results[VMS]["result"] == "applied" and results[VMS]["cascaded"] is True, output
    assert (example_repo / ".iac/state" / VMS / "terraform.tfstate").exists()
