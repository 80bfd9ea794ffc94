"""The repository's own health: its rules (``check``), the model against Terragrunt's view
(``crosscheck``) and what it needs to adopt the tooling (``doctor``). Part of the one
collection of :mod:`tooling.tasks`.
"""

from __future__ import annotations

from pathlib import Path

from invoke.context import Context

from tooling.cli import project, run, task, workspace


@task(
    iterable=["apps"],
    help={
        "apps": "=DIR: a folder of app workspaces, one sub-folder per app (DIR/APP/backend.hcl or DIR/APP/terraform/); repeatable",
        "json": "print the violations as JSON on stdout (the lines still go to stderr)",
    },
)
def check(c: Context, apps: list[str] | None = None, json_: bool = False) -> None:
    """The rule that prevents disasters: each violation as FILE:LINE: RULE: MESSAGE. Fix: HOW.

    State keys computed and unique, tiers disjoint, configuration only under
    live/, immutable module pins from allowed repositories (refs written as
    literals), executors and layer dependencies as policy.toml declares them,
    bootstrap/ never run by CI, tools pinned once, plain lowercase unit folder
    names, no backend or override generated outside root.hcl, no run_cmd() or
    hooks unless allowlisted. Reads files only (no tofu, no terragrunt). Exit
    code 1 on any violation. docs/rules.md explains every rule.
    """
    from tooling.commands.check import check as check_rules

    def go() -> int:
        ws = workspace()
        return check_rules(
            ws.root,
            apps=[Path(a) for a in apps or []],
            as_json=json_,
            cache_dir=ws.cache_dir,
            policy=ws.policy,
        )

    run(go)


@task(
    help={
        "path": "the folder to check (default: this repository's live folders, policy.toml [layout])",
        "json": "print the report as JSON on stdout",
    }
)
def crosscheck(c: Context, path: str = "", json_: bool = False) -> None:
    """Compare change detection with Terragrunt's own `find --dependencies --reading`, per unit.

    Lists every dependency or read file the two disagree on, the dangerous
    direction (Terragrunt sees it, the model does not) first. Exit 1 on any
    dangerous disagreement.
    """
    from tooling.commands.crosscheck import run as compare_with_terragrunt
    from tooling.io import binpath

    def go() -> int:
        binpath.ensure_bin_dir_on_path()
        if path:
            return compare_with_terragrunt(Path(path), as_json=json_)
        ws = workspace()
        return compare_with_terragrunt(ws.root, as_json=json_, live=ws.layout.live)

    # the tools are this repository's pins: a folder given by path is compared as it is
    run(go, tools=not path)


@task(
    help={
        "path": "the repository to examine (default: the one around the current folder, else the folder)",
        "json": "print the findings as JSON on stdout",
    }
)
def doctor(c: Context, path: str = "", json_: bool = False) -> None:
    """What a Terragrunt repository needs to adopt this tooling, and what the model cannot read.

    Read-only. Exit 1 when something must be done first. Last, the [layout] found
    here to paste into policy.toml as it is (the live folders, the root file and,
    for environments keeping their state under their own folder, a
    [layout.roots."FOLDER"] table each, with the roots its units depend on;
    [check] foundation_state_prefix when every state key starts with one other
    folder); docs/adopt.md walks through it.
    """
    from tooling.commands.doctor import run as examine

    def go() -> int:
        if path:
            return examine(Path(path), as_json=json_)
        # the repository around the current folder, with the policy the preamble checked
        found = project()
        if found is None:
            return examine(Path("."), as_json=json_)
        return examine(found.root, as_json=json_, policy=found.policy)

    run(go)
