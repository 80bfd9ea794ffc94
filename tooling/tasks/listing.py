"""The repository as data: its units (``units``), what a change affects (``affected``) and
the unit DAG as a picture (``graph``). Part of the one collection of :mod:`tooling.tasks`.
"""

from __future__ import annotations

import json
import sys

from invoke.context import Context

from tooling.cli import run, task, workspace


@task(help={"json": "print the units as JSON on stdout"})
def units(c: Context, json_: bool = False) -> None:
    """Every unit: path, tier, executor, declared gate class, module source/ref, dependencies, files read, state key.

    The declared gate class is the unit's (or its tier's) `gate` local; a plan that
    touches a node/VM, or deletes, replaces, forgets or imports anything, waits for
    approval whatever it declares.
    """
    from tooling.commands import listing

    run(lambda: listing.units(workspace(), as_json=json_), banner="units")


@task(
    help={
        "base": "compare with the merge base of this ref and HEAD (default: the PR base in GitHub Actions, else the default branch)",
        "head": "the revision to compare (default: HEAD); compares commits only",
        "committed": "compare commits only: leave out the working tree's uncommitted changes (a note says how many)",
        "uncommitted": "include the working tree's staged, unstaged and untracked changes (the default)",
        "json": "print the JSON document on stdout (logs go to stderr)",
    }
)
def affected(
    c: Context,
    base: str = "",
    head: str = "",
    committed: bool = False,
    uncommitted: bool = False,
    json_: bool = False,
) -> None:
    """The units a change affects, with reasons, in DAG order (deletions last); their dependents apart.

    The change is every commit since the merge base plus the working tree's
    uncommitted changes, as `invoke plan` plans them (--committed or --head:
    commits only, with a note naming what was left out).
    Exit code 1 (after the result) when a unit's HCL does not parse.
    """
    from tooling.engine.plan import affected
    from tooling.errors import UsageError

    def go() -> int:
        if committed and uncommitted:
            raise UsageError("--committed and --uncommitted exclude each other")
        ws = workspace()
        whole_tree = not committed and not head
        result, model = affected.compute_affected(
            ws, base or None, head or None, uncommitted=whole_tree or uncommitted, disk_model=False
        )
        ignored = None if whole_tree or uncommitted else affected.left_out(ws)
        if json_:
            print(json.dumps(result.to_json(), indent=2))
            if ignored:
                print(f"note: {ignored}", file=sys.stderr)
        else:
            affected.print_affected(result, ignored=ignored)
        return affected.unreadable_exit(model)

    run(go, banner="units")


@task(
    help={
        "format": "mermaid (default; renders on GitHub) or dot (Graphviz)",
        "affected": "highlight the units affected by the current change",
        "base": "with --affected: compare with the merge base of this ref",
    }
)
def graph(c: Context, format: str = "mermaid", affected: bool = False, base: str = "") -> None:
    """The unit DAG (dependencies -> dependents), grouped and coloured by tier."""
    from tooling.commands import listing
    from tooling.engine.plan.affected import unreadable_exit

    def go() -> int:
        ws = workspace()
        print(listing.graph(ws, fmt=format, affected_base=base or None, highlight=affected), end="")
        return unreadable_exit(ws.current_model)

    run(go, banner="units")
