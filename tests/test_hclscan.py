"""Calls and variable reads found in HCL's syntax tree, however the text is laid out."""

from __future__ import annotations

import pytest

from tooling.model.hclscan import function_calls, variable_uses

CALLS = [
    ('x = run_cmd("a")\n', [("run_cmd", 1)]),
    ('x = [run_cmd\n  ("a")]\n', [("run_cmd", 1)]),
    ("x = lower(get_terraform_command())\n", [("lower", 1), ("get_terraform_command", 1)]),
    ('x = "${get_env("A")} run_cmd(b)"\n', [("get_env", 1)]),
    ('# run_cmd("a")\n// run_cmd("b")\n/* run_cmd("c") */\nx = 1\n', []),
    ('x = <<EOT\n${run_cmd("a")}\nEOT\n', [("run_cmd", 2)]),
]


@pytest.mark.parametrize(("text", "expected"), CALLS)
def test_function_calls_are_what_hcl_calls(text: str, expected: list[tuple[str, int]]) -> None:
    assert function_calls(text.encode()) == expected


USES = [
    ("inputs = { a = dependency.n.outputs.x }\n", [("inputs", 1)]),
    ('inputs = { dependency = "a key, not a read" }\n', []),
    (
        'remote_state {\n  config = { path = "${dependency["n"].outputs.p}" }\n}\n',
        [("remote_state", 2)],
    ),
    (
        'terraform {\n  extra_arguments "a" {\n    arguments = [dependency.n.outputs.a]\n  }\n}\n',
        [("terraform", 3)],
    ),
    ('generate "g" {\n  contents = try(dependency.n.outputs.c, "")\n}\n', [("generate", 2)]),
    ("locals {\n  d = local.dependency\n}\n", []),
]


@pytest.mark.parametrize(("text", "expected"), USES)
def test_variable_uses_name_the_top_level_block_or_attribute(
    text: str, expected: list[tuple[str, int]]
) -> None:
    assert variable_uses(text.encode(), "dependency") == expected
