"""The module bumps: ``bump-module``, ``outdated`` and ``bump-all``. Part of the one
collection of :mod:`tooling.tasks`.
"""

from __future__ import annotations

from invoke.context import Context

from tooling.cli import run, task, workspace


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
    from tooling.engine.plan.affected import unreadable_exit

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
