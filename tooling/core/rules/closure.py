"""What Terragrunt parses stays where the scan reads it: ``dependency-outside``,
``read-outside`` and ``stack-source``. Pure.

Before any Terragrunt process starts, the rules read every file Terragrunt will parse
for the units in play (:mod:`tooling.core.rules.parsed`). A file outside the repository
cannot be read there: it is in no pull request, no review sees it, and it may change
between the scan and the run. So:

- ``dependency-outside``: a ``dependency`` (or ``dependencies``) path outside the live
  folders: it is no unit of the model, Terragrunt parses its configuration (and runs
  what that calls) for every plan of its dependent, and nothing plans or scans it;
- ``read-outside``: an ``include`` or ``read_terragrunt_config()`` of a file outside the
  git repository, or a file of the closure that is a symbolic link leaving it;
- ``stack-source``: a ``unit`` or ``stack`` block of a ``terragrunt.stack.hcl`` whose
  ``source`` is neither in the repository nor a module repository pinned by tag that
  ``[check] allowed_module_sources`` allows: ``terragrunt stack generate`` would copy
  (a nested stack: parse) what no review sees, and the unit it writes would be planned.

A file elsewhere in the repository (a ``common/`` or ``shared/`` folder beside the live
folders, a catalog of units) is read by Terragrunt like any other: it is in the
closure, and every rule before Terragrunt reads it.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence

from tooling.core.rules.parsed import DEPENDENCY, LINK, Leaf
from tooling.core.rules.rule import Context, Rule, Stage
from tooling.core.rules.snapshot import Violation
from tooling.model.sources import is_commit_sha, parse_source
from tooling.model.stacks import StackSource
from tooling.model.versions import parse_version


def _violation(leaf: Leaf) -> Violation:
    if leaf.kind == DEPENDENCY:
        return Violation(
            leaf.file,
            leaf.line,
            "dependency-outside",
            f"the dependency {leaf.target} is outside the live folders: Terragrunt parses its "
            f"configuration for {leaf.unit} (running what it calls, with the job's credentials), "
            "and no scan or plan of the repository covers it",
            "depend on a unit of the live folders (or move the unit there)",
        )
    if leaf.kind == LINK:
        return Violation(
            leaf.file,
            leaf.line,
            "read-outside",
            f"{leaf.file} is a symbolic link to {leaf.target}, outside the repository: "
            f"Terragrunt parses it for {leaf.unit}, and no review or scan sees what it holds",
            "replace the link with the file itself, committed in the repository",
        )
    return Violation(
        leaf.file,
        leaf.line,
        "read-outside",
        f"{leaf.target} is outside the repository: Terragrunt parses it for {leaf.unit} "
        "(running what it calls), and no review or scan sees what it holds",
        "move the file into the repository and read it from there",
    )


def stack_source_problem(source: StackSource, allowed: Sequence[str]) -> str | None:
    """Why ``terragrunt stack generate`` may not fetch ``source`` (None: it may): a source
    the model cannot work out, a local folder outside the repository, or a remote one
    that is not a module repository pinned by tag (or commit) that ``allowed`` lists."""
    if source.source is None:
        return "its source cannot be worked out, so what `terragrunt stack generate` fetches is unknown"
    if source.local is not None:
        if source.outside:
            return f"its source {source.source} is a folder outside the repository"
        return None
    parsed = parse_source(source.source)
    if parsed.kind != "git" or parsed.ambiguous:
        return f"its source {source.source} is not a git module repository (or reads ambiguously)"
    if not parsed.ref or not (is_commit_sha(parsed.ref) or parse_version(parsed.ref)):
        return f"its source {source.source} is not pinned by tag (?ref=vX.Y.Z)"
    identity = parsed.identity or ""
    if not any(fnmatch.fnmatchcase(identity, p) for p in allowed):
        return (
            f"its source's repository {identity} is not in [check] allowed_module_sources "
            f"({', '.join(allowed) or 'none'})"
        )
    return None


def check_stack_sources(ctx: Context) -> list[Violation]:
    """Every stack source of the closure that is neither in the repository nor pinned and allowed."""
    if ctx.closure is None:
        return []
    out = []
    for source in ctx.closure.stack_sources:
        why = stack_source_problem(source, ctx.policy.allowed_module_sources)
        if why is not None:
            out.append(
                Violation(
                    source.stack_file,
                    source.line,
                    "stack-source",
                    f"{source.block} {source.name!r}: {why}: `terragrunt stack generate` would "
                    "write (and Terragrunt then parse and plan) configuration no review sees",
                    "take the unit or stack from a folder of the repository, or from a module "
                    "repository pinned by tag that [check] allowed_module_sources lists",
                )
            )
    return out


def check_closure(ctx: Context) -> list[Violation]:
    """Every leaf of the parse closure of the units in play (``invoke check``: of every
    unit), and every stack source that may not be fetched."""
    if ctx.closure is None:
        return []
    return [_violation(leaf) for leaf in ctx.closure.leaves] + check_stack_sources(ctx)


CLOSURE = Rule(
    name="parse-closure",
    ids=("dependency-outside", "read-outside", "stack-source"),
    summary=(
        "every file Terragrunt parses for a unit is in the repository: no dependency outside "
        "the live folders, no configuration read outside the repository, no stack source "
        "but the repository's folders and pinned, allowed module repositories"
    ),
    stages=Stage.CHECK | Stage.BEFORE_TERRAGRUNT,
    check=check_closure,
    keeps_unreadable=True,
    notes={
        Stage.BEFORE_TERRAGRUNT: (
            "yes, for the units in play: those planned and every dependency of them, "
            "transitively; and before `terragrunt stack generate`, for every stack (`units`, `graph`, "
            "`affected`, `matrix`, `plan`)"
        ),
    },
)
