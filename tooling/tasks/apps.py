"""The application tier's tasks: ``app-plan`` and ``app-apply``. Part of the one collection
of :mod:`tooling.tasks`.
"""

from __future__ import annotations

from pathlib import Path

from invoke.context import Context

from tooling.cli import run, task, workspace

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
