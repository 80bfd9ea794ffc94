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

from tooling.core.record import outcome, tofu_errors

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
    assert unit["status"] == "changes"  # Terragrunt reads it: it is planned and shown
    assert "nested more than 200 syntax levels" in str(unit["model_error"])
    assert "live/cloud/dns/terragrunt.hcl:" in str(unit["model_error"])
    gate = unit["gate"]
    assert isinstance(gate, dict) and gate["decision"] == "manual"  # before: auto (fallback)
    assert unit["executor"] == "<unresolved>"  # before: hosted (fallback)
    comment = (out / "comment.md").read_text()
    assert "The model cannot evaluate this unit" in comment and "(model error)" in comment
    code, results, output = _apply(example_repo, out, "--approve-manual")
    assert results["live/cloud/dns"]["result"] == "refused", output
    assert "the model cannot evaluate this unit" in results["live/cloud/dns"]["reason"]
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
    _code, results, output = _apply(example_repo, out, "--approve-manual")
    assert results["live/cloud/dns"]["result"] == "refused", output
    assert not (example_repo / ".iac/state/live/cloud/dns/terraform.tfstate").exists()
