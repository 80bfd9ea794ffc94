"""What Terragrunt parses stays where the scan reads it: ``dependency-outside`` and
``read-outside``. Pure.

Before any Terragrunt process starts, the rules read every file Terragrunt will parse
for the units in play (:mod:`tooling.core.closure`). A file outside the repository
cannot be read there: it is in no pull request, no review sees it, and it may change
between the scan and the run. So:

- ``dependency-outside``: a ``dependency`` (or ``dependencies``) path outside the live
  folders: it is no unit of the model, Terragrunt parses its configuration (and runs
  what that calls) for every plan of its dependent, and nothing plans or scans it;
- ``read-outside``: an ``include`` or ``read_terragrunt_config()`` of a file outside the
  git repository, or a file of the closure that is a symbolic link leaving it.

A file elsewhere in the repository (a ``common/`` or ``shared/`` folder beside the live
folders, a catalog of units) is read by Terragrunt like any other: it is in the
closure, and every rule before Terragrunt reads it.
"""

from __future__ import annotations

from tooling.core.closure import DEPENDENCY, LINK, Leaf
from tooling.core.rules.rule import Context, Rule, Stage
from tooling.core.rules.snapshot import Violation


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


def check_closure(ctx: Context) -> list[Violation]:
    """Every leaf of the parse closure of the units in play (``invoke check``: of every unit)."""
    if ctx.closure is None:
        return []
    return [_violation(leaf) for leaf in ctx.closure.leaves]


CLOSURE = Rule(
    name="parse-closure",
    ids=("dependency-outside", "read-outside"),
    summary=(
        "every file Terragrunt parses for a unit is in the repository: no dependency outside "
        "the live folders, no configuration read outside the repository"
    ),
    stages=Stage.CHECK | Stage.BEFORE_TERRAGRUNT,
    check=check_closure,
    keeps_unreadable=True,
    notes={
        Stage.BEFORE_TERRAGRUNT: (
            "yes, for the units in play: those planned, the units below the folders a "
            "`--all` command runs from, and every dependency of them, transitively"
        ),
    },
)
