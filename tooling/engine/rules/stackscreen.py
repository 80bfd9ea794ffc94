"""Stacks scanned before ``terragrunt stack generate`` parses them.

``invoke units``, ``graph``, ``affected``, ``matrix`` and ``plan`` read the units a
``terragrunt.stack.hcl`` generates: :mod:`tooling.io.stacks` runs ``terragrunt stack
generate`` in a scratch copy, and Terragrunt parses every stack file (nested ones
too) while it does, running what they call. So each stack is screened first
(:func:`screen`): the rules that run before any Terragrunt process read every file
generation parses for it (:func:`tooling.model.stacks.stack_closure`), and every
``source`` it fetches must be a folder of the repository or a module repository pinned
by tag that ``[check] allowed_module_sources`` lists (``stack-source``). A stack that
fails is not generated: its units keep the reason (any change selects them, their plan
fails visibly, ``invoke check`` names the file and line); the others are generated.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tooling.core.rules import registry
from tooling.core.rules.parsed import READ, Leaf, ParseClosure, outside_repository
from tooling.core.rules.rule import Context, Stage
from tooling.core.rules.snapshot import Snapshot
from tooling.io.stacks import NOT_GENERATED
from tooling.model.configfiles import Loader
from tooling.model.parsecache import ParseCache
from tooling.model.policy import Policy
from tooling.model.stacks import stack_closure
from tooling.model.trees import WorkTree


def screen(
    root: Path,
    live: tuple[str, ...],
    git_prefix: str,
    policy: Policy,
    stacks: Sequence[str],
) -> dict[str, str]:
    """{stack file: why it may not be generated} for the ``stacks`` of the working tree
    at ``root`` (the others are absent): the violations of the rules that run before
    Terragrunt, on every file ``terragrunt stack generate`` parses for it and on the
    sources it fetches, one ``file:line: rule: ...`` each."""
    pol = policy.check
    loader = Loader(WorkTree(root, live, git_prefix), ParseCache(None))
    out: dict[str, str] = {}
    for stack in stacks:
        found = stack_closure(loader, [stack])
        leaves = tuple(
            Leaf(stack, 1, READ, f, stack) for f in found.files if outside_repository(f, git_prefix)
        )
        texts: dict[str, str] = {}
        for rel in found.files:
            if outside_repository(rel, git_prefix):
                continue
            try:
                texts[rel] = (root / rel).read_bytes().decode("utf-8", "surrogateescape")
            except OSError:
                continue
        ctx = Context(
            policy=pol,
            snap=Snapshot.of(texts),
            hcl_files=tuple(texts),
            closure=ParseClosure((), found.files, leaves, found.sources),
        )
        refused = sorted(registry.run(Stage.BEFORE_TERRAGRUNT, ctx))
        if refused:
            out[stack] = (
                f"{NOT_GENERATED}{stack} breaks a rule that runs before Terragrunt parses it "
                "(`terragrunt stack generate` would): " + "; ".join(str(v) for v in refused)
            )
    return out
