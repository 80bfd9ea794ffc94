"""Inputs too large for the environment of a process: refused before Terragrunt runs,
naming the unit and the way out (pure), and with the real tools."""

from __future__ import annotations

from pathlib import Path

import pytest
from infra_fixtures import commit_all, invoke, local_unit, read_summary, units_by_path

from tooling.core.plan import envsize

ARG_MAX = 2 * 1024 * 1024
MAX_STRLEN = 32 * 4096
RECORDS = {f"host-{i}": f"10.0.{i // 256}.{i % 256}" for i in range(10_000)}


def _problem(inputs: dict[str, object], environment: int = 4096) -> str | None:
    return envsize.problem(
        "live/cloud/big", inputs, environment=environment, arg_max=ARG_MAX, max_strlen=MAX_STRLEN
    )


def test_a_map_input_of_ten_thousand_entries_is_longer_than_one_variable_may_be() -> None:
    message = _problem({"records": RECORDS, "ttl": 60})
    assert message is not None and "\n" not in message
    assert message.startswith("live/cloud/big: inputs too large for the process environment")
    assert "TF_VAR_records is" in message and "at most 131,071" in message
    assert "move large values into a file the module reads" in message


def test_many_inputs_that_fit_one_by_one_are_too_many_together() -> None:
    inputs: dict[str, object] = {f"v{i}": "x" * 200 for i in range(10_000)}
    message = _problem(inputs)
    assert message is not None
    assert "bytes of TF_VAR_ values in 10,000 variables" in message
    assert f"the limit is {ARG_MAX:,}" in message and "split the input" in message


def test_inputs_that_fit_are_not_refused() -> None:
    assert _problem({"records": dict(list(RECORDS.items())[:100]), "ttl": 60}) is None
    assert _problem({}) is None


def test_the_environment_strings_are_counted_as_terragrunt_writes_them() -> None:
    assert envsize.tf_var("name", "plain") == "TF_VAR_name=plain"
    assert envsize.tf_var("n", {"a": [1, True]}) == 'TF_VAR_n={"a":[1,true]}'
    # Go escapes <, > and & as \u003c: six bytes, not one
    assert len(envsize.tf_var("n", ["<"])) == len('TF_VAR_n=["\\u003c"]')


def test_a_process_that_could_not_start_for_e2big_is_named_as_such() -> None:
    output = "ERROR  fork/exec /bin/sh: argument list too long"
    message = envsize.from_output("live/cloud/big", output)
    assert message is not None
    assert message.startswith("live/cloud/big: inputs too large for the process environment")
    assert envsize.from_output("live/cloud/big", "Error: something else") is None


BIG_MODULE = """
variable "records" {
  type = map(string)
}

output "count" {
  value = length(var.records)
}
"""


@pytest.mark.e2e
def test_a_unit_whose_inputs_hold_ten_thousand_entries_is_refused_and_the_others_plan(
    example_repo: Path, tmp_path: Path
) -> None:
    # written out, as an inventory would be (range() stops at 1,024 values)
    entries = "".join(f'    "{name}" = "{ip}"\n' for name, ip in RECORDS.items())
    local_unit(
        example_repo, "big", BIG_MODULE, f"\ninputs = {{\n  records = {{\n{entries}  }}\n}}\n"
    )
    commit_all(example_repo, "a unit with 10,000 records")
    out = tmp_path / "plans"
    ran = invoke(example_repo, "plan", "--all", "--out", str(out))
    units = units_by_path(read_summary(out))
    big = units["live/cloud/big"]
    assert big["status"] == "error", ran.output
    error = str(big["error"])
    assert error.startswith("live/cloud/big: inputs too large for the process environment")
    assert "TF_VAR_records is" in error and "move large values into a file" in error
    assert "live/cloud/big: inputs too large" in ran.output and "Traceback" not in ran.output
    # the other units went on
    assert units["live/cloud/dns"]["status"] in ("changes", "no-changes"), ran.output
    assert units["live/cloud/iam"]["status"] in ("changes", "no-changes"), ran.output
