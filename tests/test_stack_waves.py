"""Stacks are generated side by side in waves: a stack whose folder lies below another
stack's folder is generated after it, never beside it (its generation may write there)."""

from __future__ import annotations

import pytest

from tooling.io.stacks import nesting_waves


@pytest.mark.parametrize(
    ("stacks", "expected"),
    [
        ([], []),
        (["a/terragrunt.stack.hcl"], [["a/terragrunt.stack.hcl"]]),
        (  # folders apart: one wave, in the order given
            ["b/terragrunt.stack.hcl", "a/terragrunt.stack.hcl"],
            [["b/terragrunt.stack.hcl", "a/terragrunt.stack.hcl"]],
        ),
        (  # a stack below another goes after it, whatever the order given
            ["a/x/terragrunt.stack.hcl", "a/terragrunt.stack.hcl", "b/terragrunt.stack.hcl"],
            [["a/terragrunt.stack.hcl", "b/terragrunt.stack.hcl"], ["a/x/terragrunt.stack.hcl"]],
        ),
        (  # a stack at the root is above every other
            ["terragrunt.stack.hcl", "a/terragrunt.stack.hcl", "a/b/terragrunt.stack.hcl"],
            [["terragrunt.stack.hcl"], ["a/terragrunt.stack.hcl"], ["a/b/terragrunt.stack.hcl"]],
        ),
        (  # a folder whose name starts like another's is not below it
            ["ab/terragrunt.stack.hcl", "a/terragrunt.stack.hcl"],
            [["ab/terragrunt.stack.hcl", "a/terragrunt.stack.hcl"]],
        ),
    ],
)
def test_a_stack_below_another_is_generated_in_a_later_wave(
    stacks: list[str], expected: list[list[str]]
) -> None:
    assert nesting_waves(stacks) == expected


def test_no_two_stacks_of_a_wave_lie_one_below_the_other() -> None:
    folders = ["a", "a/b", "a/b/c", "a/d", "e", "e/f", "g"]
    stacks = [f"{f}/terragrunt.stack.hcl" for f in reversed(folders)]
    waves = nesting_waves(stacks)
    assert sorted(s for wave in waves for s in wave) == sorted(stacks)
    for wave in waves:
        dirs = [s.rsplit("/", 1)[0] for s in wave]
        assert not [(x, y) for x in dirs for y in dirs if x != y and y.startswith(x + "/")]
    seen: list[str] = []
    for wave in waves:  # every folder above a stack's was generated in an earlier wave
        for stack in wave:
            folder = stack.rsplit("/", 1)[0]
            above = [f"{f}/terragrunt.stack.hcl" for f in folders if folder.startswith(f + "/")]
            assert set(above) <= set(seen)
        seen.extend(wave)
