"""The workflows' tasks: the matrix (``matrix``), the runners' state (``runners``) and the
steps the CI workflows run between the pipeline's own tasks (apply-base, plan-comment,
apply-report, manual-status, manual-gate, report --merge, reviewed-run, reviewed-check).
Part of the one collection of :mod:`tooling.tasks`.
"""

from __future__ import annotations

import json
from pathlib import Path

from invoke.context import Context

from tooling.cli import run, task, workspace


@task(
    help={
        "before": "the push event's `before` commit (the fallback base)",
        "workflow": "the workflow file whose last successful run is the base (default: apply.yml)",
        "branch": "the branch of that run (default: main)",
    }
)
def apply_base(
    c: Context, before: str = "", workflow: str = "apply.yml", branch: str = "main"
) -> None:
    """The commit a merge is planned from, on stdout and as `base` in $GITHUB_OUTPUT.

    The head of the last successful run of WORKFLOW on BRANCH (GitHub API),
    else BEFORE, each only if it is an ancestor of HEAD; else HEAD^. Planning
    from the last applied commit re-plans what a failed or cancelled run left.
    """
    from tooling.commands import ci

    run(
        lambda: (
            print(ci.apply_base(workspace(), before=before, workflow=workflow, branch=branch)) or 0
        )
    )


_REPORTS_HELP = {
    "plans": "folder holding one plan-EXECUTOR folder per leg (the downloaded artifacts)",
    "matrix": 'the matrix job\'s `matrix` output ({"include": [...]})',
}


@task(required={"plans": "DIR"}, help=_REPORTS_HELP)
def plan_comment(c: Context, plans: str = "", matrix: str = "") -> None:
    """Post or update the pull request's one sticky plan comment from every executor's report.

    Needs GITHUB_TOKEN, GITHUB_REPOSITORY and the pull_request event
    (GITHUB_EVENT_PATH). A leg without a report shows "No report". Over
    GitHub's size limit, each section keeps its verdict and table. Sets the
    commit status `iac/plan (NAME)` on the pull request's head for every
    executor policy.toml declares: failure or success from its leg, success
    "no units affected" when it has none.
    """
    from tooling.commands import ci

    def go() -> int:
        configured = list(workspace().policy.executors)
        return ci.plan_comment(plans=Path(plans), matrix=matrix, configured=configured)

    run(go)


@task(
    required={"plans": "DIR", "apply_result": "RESULT"},
    help={
        **_REPORTS_HELP,
        "apply_result": "the auto apply job's result (success, failure, cancelled, skipped)",
    },
)
def apply_report(c: Context, plans: str = "", matrix: str = "", apply_result: str = "") -> None:
    """After the auto applies: job summary, comment on the merged pull request, and the manual job's matrix.

    Writes `manual_matrix` and `manual_any` to $GITHUB_OUTPUT: the executors
    with units waiting for approval, offered only when the auto job succeeded.
    """
    from tooling.commands import ci

    run(lambda: ci.apply_report(plans=Path(plans), matrix=matrix, apply_result=apply_result))


@task(
    required={"records": "DIR", "matrix": "JSON", "result": "RESULT"},
    help={
        "records": "folder holding one apply-manual-EXECUTOR folder (its apply.json) per approval leg",
        "matrix": "the report job's `manual_matrix` output: the executors the approval job applied",
        "result": "the approval job's result (success, failure, cancelled, skipped)",
    },
)
def manual_status(c: Context, records: str = "", matrix: str = "", result: str = "") -> None:
    """After the approval job: the merge commit's status iac/plan (NAME) per executor, from waiting for approval to success or failure.

    Success when the leg's apply record shows every unit applied or without
    changes; failure when a unit was not applied, or the leg left no record
    (the approval was rejected or the job failed before applying).
    """
    from tooling.commands import ci

    run(lambda: ci.manual_status(records=Path(records), matrix=matrix, result=result))


@task(required={"plans": "DIR"}, help={"plans": "the folder `invoke app-plan --out` wrote"})
def manual_gate(c: Context, plans: str = "") -> None:
    """Whether a plan waits for a human (a manual-gate unit with changes): `manual` in $GITHUB_OUTPUT."""
    from tooling.commands import ci

    run(lambda: print("true" if ci.manual_gate(plans=Path(plans)) else "false") or 0)


@task(
    iterable=["merge"],
    required={"merge": "DIR"},
    help={
        "merge": "=DIR: a leg's plan folder (`invoke plan --leg` wrote it); repeat for every leg",
        "out": "the merged report's folder, new or holding an earlier plan report (default: .iac/plans)",
    },
)
def report(c: Context, merge: list[str] | None = None, out: str = "") -> None:
    """Merge the legs' plan folders into one report: OUT/summary.json (same schema) and OUT/comment.md.

    Every leg is checked before OUT is touched. Refused, one line each: a
    summary.json that is not a regular file, is over 8 MiB or breaks its schema;
    legs of different commits, bases, tools or working trees; a unit in two
    legs; a leg of a split executor missing; a unit its leg does not own (not in
    leg.units) or of another executor; a file in the folder of a unit outside
    its leg; a symlink or non-regular file under a leg's units/ or cascade/; an
    OUT inside or holding a leg folder. The unit folders (plans, texts, logs)
    are copied as regular files, so OUT is the whole report.
    """
    from tooling.engine.ci import legs

    def go() -> int:
        ws = workspace()
        target = Path(out) if out else ws.root / ".iac" / "plans"
        legs.merge(ws.root, [Path(m) for m in merge or []], target)
        return 0

    run(go)


@task(
    required={"out": "DIR"},
    help={
        "out": "the folder the reviewed plan artifacts are downloaded into (created here)",
        "workflow": "the workflow whose plan artifacts are the reviewed plans (default: plan.yml)",
    },
)
def reviewed_run(c: Context, out: str = "", workflow: str = "plan.yml") -> None:
    """The run holding the reviewed plans: `run_id` and `compare` in $GITHUB_OUTPUT.

    On merge_group: the pull request's last successful plan run at its head (none
    fails the step). On push after a merge: the merge group's plan run at this
    commit, else the merged pull request's last plan run; a direct push compares
    nothing (compare=false). Needs GITHUB_TOKEN (actions: read, pull-requests: read).
    """
    from tooling.commands import mergequeue

    def go() -> int:
        mergequeue.reviewed_run(out=Path(out), workflow=workflow)
        return 0

    run(go)


@task(
    required={"plans": "DIR"},
    help={
        "plans": "folder holding this run's plan-LEG folders (the downloaded artifacts)",
        "plan_result": "the plan job's result (success, failure, cancelled, skipped)",
    },
)
def reviewed_check(c: Context, plans: str = "", plan_result: str = "") -> None:
    """The merge group's check: fails naming each unit whose plan differs from its pull request's reviewed plan."""
    from tooling.commands import mergequeue

    run(lambda: mergequeue.reviewed_check(plans=Path(plans), plan_result=plan_result))


@task(
    help={
        "json": "print the JSON document on stdout (tooling/schemas/runners.schema.json)",
        "require": "exit 1 with one line when this executor is self-hosted and none of its runners is online",
        "issue": "keep one issue per self-hosted executor open while it has no online runner (GITHUB_TOKEN)",
    }
)
def runners(c: Context, json_: bool = False, require: str = "", issue: bool = False) -> None:
    """Each executor's runners and their state (busy, idle, offline), from GitHub's API.

    Needs IAC_RUNNERS_TOKEN (Administration: read; bootstrap/README.md) and
    GITHUB_REPOSITORY. GitHub-hosted executors are listed without runners.
    """
    from tooling.commands.runners import run as list_runners

    run(lambda: list_runners(workspace(), as_json=json_, require=require or None, issue=issue))


@task(
    help={
        "base": "compare with the merge base of this ref and HEAD (default: the PR base in GitHub Actions, else the default branch)",
        "routes": "JSON {executor: [runner labels]}: refuse a leg routed elsewhere; write matrix/any to $GITHUB_OUTPUT",
        "runners": "with --routes: leave out self-hosted legs without an online runner (IAC_RUNNERS_TOKEN) and write them to the `unavailable` output",
        "max_legs": "split each executor's units over up to N legs, 1 <= N <= 256 (default: the executor's max_legs in policy.toml, else 1)",
        "timings": "an earlier run's summary.json: pack the legs by its per-unit plan times (default: by unit count)",
    }
)
def matrix(
    c: Context,
    base: str = "",
    routes: str = "",
    runners: bool = False,
    max_legs: str = "",
    timings: str = "",
) -> None:
    """The CI matrix as JSON on stdout: one entry per executor with affected units (runner labels from policy.toml).

    With --max-legs N (or max_legs in policy.toml) an executor's units are split
    over up to N legs, each entry with its `units` and a `leg` id (its artifact is
    plan-LEG); units that depend on each other stay in one leg (docs/pipelines.md,
    "Legs"). GitHub starts at most 256 jobs from one matrix: more is refused.

    With --routes (the workflows' routing guard), a leg on other runners than
    the routes name, or an executor they do not name, is an error (exit 1), and
    the job outputs `matrix` and `any` are written to $GITHUB_OUTPUT.
    """
    from tooling.commands import ci
    from tooling.engine.ci.matrix import matrix as affected_matrix
    from tooling.engine.ci.matrix import parse_max_legs
    from tooling.engine.plan.affected import unreadable_exit

    def go() -> int:
        ws = workspace()
        if runners and not routes:
            from tooling.errors import UsageError

            raise UsageError("--runners needs --routes (it writes the job outputs)")
        legs = parse_max_legs(max_legs)
        times = Path(timings) if timings else None
        if routes:
            doc = ci.checked_matrix(
                ws,
                base=base or None,
                routes=routes,
                check_runners=runners,
                max_legs=legs,
                timings=times,
            )
        else:
            doc = affected_matrix(ws, base=base or None, max_legs=legs, timings=times)
        print(json.dumps(doc, indent=2))
        return unreadable_exit(ws.current_model)

    run(go)
