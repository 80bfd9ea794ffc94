"""The pipeline's own tasks: ``plan``, ``apply``, ``drift`` and the audit trail of applies
(``audit``). Part of the one collection of :mod:`tooling.tasks`.
"""

from __future__ import annotations

from pathlib import Path

from invoke.context import Context

from tooling.cli import run, task, workspace

#: --reviewed of plan and apply
_REVIEWED_HELP = (
    "the pull request's reviewed plan folder (its plan artifact, or a folder of its legs' "
    "artifacts): a unit whose plan differs from it, or that it did not plan, is manual"
)


@task(
    iterable=["unit"],
    help={
        "base": "plan what changed since the merge base with this ref, plus the working tree's uncommitted changes (default: the default branch)",
        "all": "plan every unit",
        "unit": "=PATH: plan the unit at PATH, e.g. --unit=live/cluster/vms (repeatable)",
        "executor": "plan only this executor's units (hosted | lan)",
        "jobs": "N plans run in parallel, N >= 1 (default: CPU count)",
        "out": "output folder, new or holding an earlier plan report, not inside .git (default: .iac/plans)",
        "comment": "post or update the sticky PR comment (GitHub Actions); a report over "
        "GitHub's 65,536 characters continues in follow-up comments, edited in place",
        "from_matrix": "`invoke matrix`'s JSON (or one entry of it), or a file holding it: with --leg, plan only that leg's affected units",
        "leg": "with --from-matrix: the leg to plan (its `leg` id, e.g. hosted-2-of-4, or the executor of an unsplit one)",
        "reviewed": _REVIEWED_HELP,
    },
)
def plan(
    c: Context,
    base: str = "",
    all_: bool = False,
    unit: list[str] | None = None,
    executor: str = "",
    jobs: str = "",
    out: str = "",
    comment: bool = False,
    from_matrix: str = "",
    leg: str = "",
    reviewed: str = "",
) -> None:
    """Plan the affected (or named, or all) units; write OUT/summary.json and OUT/comment.md.

    Plans read the working tree: its uncommitted changes are planned, and count
    as changes when choosing the affected units (as `invoke affected` does by
    default); the report's header says how many there were.

    Units are named by path (live/cloud/dns; ./live/cloud/dns/ as tab
    completion writes it is the same); naming units excludes planning all.
    Before any Terragrunt process starts, the run stops (exit 1) when a file
    the units read calls run_cmd (not allowlisted) or get_terraform_command(),
    or reads a dependency's outputs outside inputs (docs/rules.md).
    Each unit is verified first (`terragrunt render`): one that breaks an
    enforce-* rule of docs/rules.md is refused, not planned.
    A unit whose working copy is not exactly its module at the pinned tag plus
    root.hcl's generated files is refused before OpenTofu reads it (docs/rules.md,
    working-copy); other units go on.
    Exit code 0 when every planned unit succeeded, 1 otherwise, 2 bad usage,
    130 interrupted (OpenTofu is asked once to stop; the report says so and
    cannot be applied). Uncommitted changes are recorded in summary.json
    (worktree: dirty, files, digest); `invoke apply` refuses such plans.

    Secrets are redacted from every file and line: sensitive outputs and
    variables, environment variables whose names say secret (policy.toml
    [secrets]; not every TF_VAR_), also base64- and URL-encoded; one shorter
    than 4 characters only whole between quotes (a warning names it). Unit
    paths and addresses are never rewritten (docs/commands.md).

    One leg of a split matrix (--from-matrix M --leg ID): the affected
    units the matrix gave that leg, as its executor (--executor, if given, must
    be the leg's); summary.json records the leg, and `invoke report --merge`
    combines the legs' folders. Refused before any Terragrunt process starts:
    a matrix that breaks its schema, a leg without units, a unit the change
    does not affect or of another executor than the leg's, and (given all of
    the executor's legs) an affected unit none of them lists.

    --reviewed PR_DIR: each unit's plan is compared with the pull request's
    reviewed plan of it (PR_DIR: its plan folder, or a folder of its legs'
    folders); one that differs, or that the pull request did not plan, gets
    the manual gate with the reason "differs from the reviewed plan: ..."
    (docs/pipelines.md, "The reviewed plan follows the change").
    """
    from tooling.commands.plan import parse_jobs, plan_leg
    from tooling.commands.plan import plan as plan_units

    if from_matrix or leg:
        from tooling.errors import UsageError

        def one_leg() -> int:
            if not from_matrix or all_ or unit or comment:
                raise UsageError(
                    "--from-matrix and --leg go together, without --all, --unit "
                    "or --comment (the leg names its units; the merged report is commented)"
                )
            return plan_leg(
                workspace(),
                matrix=from_matrix,
                leg=leg,
                executor=executor or None,
                base=base or None,
                jobs=parse_jobs(jobs),
                out=Path(out) if out else None,
                reviewed=Path(reviewed) if reviewed else None,
            )

        run(one_leg, banner="units", tools=True)
        return
    run(
        lambda: plan_units(
            workspace(),
            base=base or None,
            all_units=all_,
            units=unit or [],
            executor=executor or None,
            jobs=parse_jobs(jobs),
            out=Path(out) if out else None,
            comment=comment,
            reviewed=Path(reviewed) if reviewed else None,
        ),
        banner="units",
        tools=True,
    )


@task(
    required={"plans": "DIR"},
    help={
        "plans": "the folder `invoke plan --out` wrote (summary.json and the binary plans)",
        "approve_manual": "also apply the manual-gate units (the protected-environment job passes this)",
        "reviewed": _REVIEWED_HELP,
    },
)
def apply(c: Context, plans: str = "", approve_manual: bool = False, reviewed: str = "") -> None:
    """Apply exactly the reviewed plans in PLANS, by gate, in DAG order; write PLANS/apply.json.

    Before each unit the binding is verified (plan SHA-256, HEAD commit, tool
    versions, the plan's state key is the unit's own); a mismatch refuses the
    unit. Plans made from a tree with uncommitted changes are refused (no
    override: commit, then plan again). Encrypted plans need the key they were
    made with (IAC_ENCRYPTION_PASSPHRASE or IAC_ENCRYPTION_KMS_KEY_ID): without
    it nothing is applied. Plans older than [apply] max_plan_age (policy.toml,
    24h by default) are refused whole. Manual units wait unless --approve-manual;
    one whose upstream applied in this run is re-planned on the real outputs
    first and waits with that re-plan, which the next --approve-manual on the
    same folder applies exactly (one approval per wave). Exit code 1 if anything failed or was refused, or a unit
    had no plan to apply (its plan failed: a destroy that could not be planned too).
    With --reviewed PR_DIR, a unit whose plan differs from the pull request's
    reviewed plan (or that the pull request did not plan) is manual, the
    difference named in apply.md.
    """
    from tooling.commands.apply import apply as apply_plans

    run(
        lambda: apply_plans(
            workspace(),
            Path(plans),
            approve_manual=approve_manual,
            reviewed=Path(reviewed) if reviewed else None,
        ),
        banner="units",
        tools=True,
    )


@task(
    help={
        "executor": "check only this executor's units (hosted | lan)",
        "out": "output folder, new or holding an earlier drift report, not inside .git (default: .iac/drift)",
        "issue": "open, update or close the one drift issue on GitHub (GITHUB_TOKEN, GITHUB_REPOSITORY)",
    }
)
def drift(c: Context, executor: str = "", out: str = "", issue: bool = False) -> None:
    """Plan every unit against reality; report drifted units in OUT/drift.json and OUT/drift.md.

    Plans with -detailed-exitcode and without the state lock; never applies.
    --issue keeps one GitHub issue (label `drift`) listing the drifted units.
    Exit code 0 when every unit was planned (drift is reported, not an error),
    1 when a plan failed, 2 bad usage, 130 interrupted (the issue is left alone).
    """
    from tooling.commands.drift import run as plan_against_reality

    run(
        lambda: plan_against_reality(
            workspace(), executor=executor or None, out=Path(out) if out else None, issue=issue
        ),
        banner="units",
        tools=True,
    )


@task(
    help={
        "since": "only records written on or after this day (YYYY-MM-DD, UTC)",
        "json": 'print the records as JSON on stdout ({"records": [...], "problems": [...]})',
    }
)
def audit(c: Context, since: str = "", json_: bool = False) -> None:
    """The audit trail: one line per apply (commit, result, who approved, run, units), oldest first.

    Every `invoke apply` writes a record under audit/ in the state bucket
    (IAC_STATE_BUCKET), else under .iac/state/audit/, before it applies anything,
    and one after: an apply with only the first is listed as interrupted. A damaged
    record, or one deleted or changed after a later record named it (each names
    the previous one's SHA-256), is named after the listing, and the task exits 1.
    """
    from tooling.commands.audit import run as read_trail

    run(lambda: read_trail(workspace(), since=since or None, as_json=json_), banner="settings")
