"""The tasks for the application tier, module bumps and the repository's own health
(app-plan, app-apply, bump-module, outdated, bump-all, check, adopt, move-unit,
crosscheck, doctor). Part of the one collection of :mod:`tooling.tasks`."""

from __future__ import annotations

from pathlib import Path

from invoke.context import Context

from tooling.cli import project, run, task, workspace

_APP_HELP = {
    "app": "the application's name ([a-z0-9-]+); its state lives under apps/APP/",
    "dir": "the folder of the application's OpenTofu code (its terraform/ folder)",
}


@task(
    required={"app": "NAME", "dir": "DIR"},
    help={
        **_APP_HELP,
        "out": "output folder, new or holding an earlier plan report, not inside .git (default: .iac/app-plans/APP)",
    },
)
def app_plan(c: Context, app: str = "", dir: str = "", out: str = "") -> None:
    """Plan an application's folder (plain OpenTofu, state apps/APP/terraform.tfstate); same report and gates.

    Refuses a bad name, any backend configuration pointing at the foundation,
    and resource types outside policy.toml's [apps] allowlist.
    """
    from tooling.commands import apptier

    run(
        lambda: apptier.plan(
            workspace(), app=app, directory=Path(dir), out=Path(out) if out else None
        ),
        tools=True,
    )


@task(
    required={"app": "NAME", "dir": "DIR", "plans": "DIR"},
    help={
        **_APP_HELP,
        "plans": "the folder `invoke app-plan --out` wrote",
        "approve_manual": "also apply a plan whose gate is manual (after a human approved it)",
    },
)
def app_apply(
    c: Context, app: str = "", dir: str = "", plans: str = "", approve_manual: bool = False
) -> None:
    """Apply exactly the reviewed application plan in PLANS; write PLANS/apply.json."""
    from tooling.commands import apptier

    run(
        lambda: apptier.apply(
            workspace(),
            app=app,
            directory=Path(dir),
            plans=Path(plans),
            approve_manual=approve_manual,
        ),
        tools=True,
    )


@task(
    required={"module": "MODULE", "version": "VERSION"},
    help={
        "module": "the module repository's URL or short name (terraform-proxmox)",
        "version": "a tag of that repository (v1.2.0, dns-v1.3.0)",
        "units": "only units matching these globs (comma-separated; a folder selects the units below it)",
        "dry_run": "show the edits, branch, title and body; change nothing",
    },
)
def bump_module(
    c: Context, module: str, version: str, units: str = "", dry_run: bool = False
) -> None:
    """Bump MODULE (repository URL or short name) to the tag VERSION in every unit pinning it.

    Branch bump/MODULE-VERSION from the default branch, one line per unit,
    a conventional commit, push to origin and a pull request (GITHUB_TOKEN).
    Without a token: stops after the local commit and prints the PR text.
    """
    from tooling.commands import bump

    run(
        lambda: bump.bump_module(
            workspace(), module, version, units=units or None, dry_run=dry_run
        ),
        banner="units",
        tools=True,
    )


@task(help={"json": "print the JSON document on stdout (logs go to stderr)"})
def outdated(c: Context, json_: bool = False) -> None:
    """Pinned modules with newer tags (minor/patch and major apart); skipped sources with reasons.

    Exit code 1 when a module repository could not be queried, or (after the
    report) when a unit's HCL does not parse.
    """
    from tooling.commands import bump
    from tooling.engine.detect import unreadable_exit

    def go() -> int:
        ws = workspace()
        code = bump.outdated(ws, as_json=json_)
        broken = unreadable_exit(ws.current_model)
        return 1 if code or broken else 0

    run(go, banner="units")


@task(help={"units": "only units matching these globs (comma-separated), for a staged rollout"})
def bump_all(c: Context, units: str = "") -> None:
    """Renovate-style: one pull request per module to its newest minor/patch, a flagged one per major.

    Idempotent: existing bump branches and pull requests are updated; one
    closed without merging is not reopened; a branch with someone else's
    commit is never force-pushed. Exit code 1 if a module failed.
    """
    from tooling.commands import bump

    run(lambda: bump.bump_all(workspace(), units=units or None), banner="units", tools=True)


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
    required={"unit": "UNIT", "address": "ADDRESS", "id_": "ID"},
    help={
        "apply": "apply the import plan (only if it shows no difference), then re-plan to confirm"
    },
)
def adopt(c: Context, unit: str, address: str, id_: str, apply: bool = False) -> None:
    """Adopt an existing resource into UNIT at ADDRESS by importing ID, only if nothing else changes.

    Plans the unit with a temporary import block (in a private working copy
    under .iac/, never in live/); accepts only a plan whose only actions are the
    import (0 to add, 0 to change, 0 to destroy). Otherwise prints what differs
    (sensitive values hidden) and exits 1: fix the code, not reality.
    """
    from tooling.commands.adopt import adopt as adopt_resource

    run(
        lambda: adopt_resource(workspace(), unit, address, id_, apply=apply),
        banner="units",
        tools=True,
    )


@task(
    required={"old": "OLD", "new": "NEW"},
    help={
        "remove_backup": "after a move: delete the old key's backup (refused if the new key holds no state)"
    },
)
def move_unit(c: Context, old: str, new: str, remove_backup: bool = False) -> None:
    """Move unit OLD to folder NEW (git mv) and migrate its state to NEW's key (local or S3).

    Refuses when NEW's key already holds state or either key is locked. The old
    key is kept as OLD_KEY.moved-backup until --remove-backup. If the folder was
    already moved by hand, migrates the state only.
    """
    from tooling.commands import move

    run(lambda: move.move_unit(workspace(), old, new, remove_backup=remove_backup), banner="units")


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
    from tooling.io import toolchain

    def go() -> int:
        toolchain.ensure_bin_dir_on_path()
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
