"""invoke tasks: the command surface of the repository (see README, docs/commands.md).

Thin on purpose: each task declares its options and help, and calls one
function of the ``tooling`` package through :func:`tooling.commands.cli.run`,
which maps a ``ToolingError`` to its exit code (1 for a failure to act on, 2
for bad usage) so a known failure never prints a traceback. This file is the
command-line contract: most of its lines are the help texts ``invoke --help
TASK`` shows.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from invoke.collection import Collection
from invoke.context import Context
from invoke.exceptions import Exit
from invoke.tasks import task

from tooling.commands.cli import run, say_settings, use_usage_exit_codes, workspace

ROOT = Path(__file__).resolve().parent

# from here on, invoke's usage errors (unknown flag, missing value...) exit 2
use_usage_exit_codes()


@task(
    help={
        "pipeline": "only the tools the pipeline's tasks need (leave out act, which only the tests use)"
    }
)
def setup(c: Context, pipeline: bool = False) -> None:
    """Install the pinned OpenTofu, Terragrunt, actionlint and act (from .tool-versions).

    For each tool: a cached build, else a binary of the right version on PATH,
    else the official release verified against its checksums, else a build from
    the Go module. Links them into this Python environment's bin directory.
    Idempotent: on a warm machine it takes well under a second.
    """
    from tooling.io import toolchain

    def go() -> None:
        installed = toolchain.setup(ROOT, test_tools=not pipeline)
        print(toolchain.summary_line(installed), file=sys.stderr)

    run(go)


@task(help={"json": "print the units as JSON on stdout"})
def units(c: Context, json_: bool = False) -> None:
    """Every unit: path, tier, executor, declared gate class, module source/ref, dependencies, files read, state key.

    The declared gate class is the unit's (or its tier's) `gate` local; a plan that
    touches a node/VM, or deletes or replaces anything, waits for approval whatever
    it declares.
    """
    from tooling.commands import pipeline

    def go() -> int:
        ws = workspace()
        say_settings(ws)
        return pipeline.units(ws, as_json=json_)

    run(go)


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
    from tooling.commands import pipeline
    from tooling.errors import UsageError

    def go() -> int:
        if committed and uncommitted:
            raise UsageError("--committed and --uncommitted exclude each other")
        ws = workspace()
        say_settings(ws)
        whole_tree = not committed and not head
        result, model = pipeline.compute_affected(
            ws, base or None, head or None, uncommitted=whole_tree or uncommitted
        )
        ignored = None if whole_tree or uncommitted else pipeline.left_out(ws)
        if json_:
            print(json.dumps(result.to_json(), indent=2))
            if ignored:
                print(f"note: {ignored}", file=sys.stderr)
        else:
            pipeline.print_affected(result, ignored=ignored)
        return pipeline.unreadable_exit(model)

    run(go)


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
) -> None:
    """Plan the affected (or named, or all) units; write OUT/summary.json and OUT/comment.md.

    Plans read the working tree: its uncommitted changes are planned, and count
    as changes when choosing the affected units (as `invoke affected` does by
    default); the report's header says how many there were.

    Units are named by path (live/cloud/dns; ./live/cloud/dns/ as tab
    completion writes it is the same); naming units excludes planning all.
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
    """
    from tooling.commands import pipeline

    run(
        lambda: pipeline.plan(
            workspace(),
            base=base or None,
            all_units=all_,
            units=unit or [],
            executor=executor or None,
            jobs=pipeline.parse_jobs(jobs),
            out=Path(out) if out else None,
            comment=comment,
        )
    )


@task(
    help={
        "format": "mermaid (default; renders on GitHub) or dot (Graphviz)",
        "affected": "highlight the units affected by the current change",
        "base": "with --affected: compare with the merge base of this ref",
    }
)
def graph(c: Context, format: str = "mermaid", affected: bool = False, base: str = "") -> None:
    """The unit DAG (dependencies -> dependents), grouped and coloured by tier."""
    from tooling.commands import pipeline

    def go() -> int:
        ws = workspace()
        say_settings(ws)
        print(
            pipeline.graph(ws, fmt=format, affected_base=base or None, highlight=affected), end=""
        )
        return pipeline.unreadable_exit(ws.current_model)

    run(go)


@task(
    help={
        "plans": "the folder `invoke plan --out` wrote (summary.json and the binary plans)",
        "approve_manual": "also apply the manual-gate units (the protected-environment job passes this)",
    }
)
def apply(c: Context, plans: str = "", approve_manual: bool = False) -> None:
    """Apply exactly the reviewed plans in PLANS, by gate, in DAG order; write PLANS/apply.json.

    Before each unit the binding is verified (plan SHA-256, HEAD commit, tool
    versions, the plan's state key is the unit's own); a mismatch refuses the
    unit. Plans made from a tree with uncommitted changes are refused (no
    override: commit, then plan again). Manual units wait unless
    --approve-manual. Exit code 1 if anything failed or was refused, or a unit
    had no plan to apply (its plan failed: a destroy that could not be planned too).
    """
    from tooling.commands import apply as applying

    if not plans:
        raise Exit(
            "error: --plans DIR is required (the folder `invoke plan --out DIR` wrote)", code=2
        )
    run(lambda: applying.apply(workspace(), Path(plans), approve_manual=approve_manual))


@task(help={"plans": "a plan folder to remove too (the job's copy of the plans)"})
def clean_runner(c: Context, plans: str = "") -> None:
    """Remove what a job leaves on a runner: PLANS, .iac/ and every .terragrunt-cache/.

    A folder holding an errored.tfstate (a state an apply could not save) is
    kept, and each kept folder is named: push the state back first
    (docs/runbooks.md, "The state could not be saved").
    """
    from tooling.commands import applysafety

    def clean() -> None:
        applysafety.clean_runner(ROOT, [Path(plans)] if plans else [])

    run(clean)


@task(
    help={"args": "extra pytest arguments, quoted as in a shell, e.g. '-k \"plan and not e2e\" -x'"}
)
def test(c: Context, args: str = "") -> None:
    """Run the whole test suite (pytest, in parallel on the CPUs this machine has)."""
    import shlex

    run(lambda: None)  # policy.toml checked first, as every task does

    # split as a shell would and join again: every argument reaches pytest whole
    argv = [sys.executable, "-m", "pytest", "-n", "auto", "--dist", "loadgroup", *shlex.split(args)]
    c.run(shlex.join(argv), pty=False)


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
    from tooling.commands import drift as drifting

    run(
        lambda: drifting.run(
            workspace(), executor=executor or None, out=Path(out) if out else None, issue=issue
        )
    )


@task(
    help={
        "since": "only records written on or after this day (YYYY-MM-DD, UTC)",
        "json": 'print the records as JSON on stdout ({"records": [...]})',
    }
)
def audit(c: Context, since: str = "", json_: bool = False) -> None:
    """The audit trail: one line per apply (commit, result, who approved, run, units), oldest first.

    Every `invoke apply` appends one record under audit/ in the state bucket
    (IAC_STATE_BUCKET), else under .iac/state/audit/.
    """
    from tooling.commands import audit as trail

    run(lambda: trail.run(workspace(), since=since or None, as_json=json_))


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
    from tooling.commands import runners as health

    run(lambda: health.run(workspace(), as_json=json_, require=require or None, issue=issue))


@task(
    help={
        "base": "compare with the merge base of this ref and HEAD (default: the PR base in GitHub Actions, else the default branch)",
        "routes": "JSON {executor: [runner labels]}: refuse a leg routed elsewhere; write matrix/any to $GITHUB_OUTPUT",
        "runners": "with --routes: leave out self-hosted legs without an online runner (IAC_RUNNERS_TOKEN) and write them to the `unavailable` output",
    }
)
def matrix(c: Context, base: str = "", routes: str = "", runners: bool = False) -> None:
    """The CI matrix as JSON on stdout: one entry per executor with affected units (runner labels from policy.toml).

    With --routes (the workflows' routing guard), a leg on other runners than
    the routes name, or an executor they do not name, is an error (exit 1), and
    the job outputs `matrix` and `any` are written to $GITHUB_OUTPUT.
    """
    from tooling.commands import ci, pipeline
    from tooling.commands import matrix as matrices

    def go() -> int:
        ws = workspace()
        if runners and not routes:
            from tooling.errors import UsageError

            raise UsageError("--runners needs --routes (it writes the job outputs)")
        if routes:
            doc = ci.checked_matrix(ws, base=base or None, routes=routes, check_runners=runners)
        else:
            doc = matrices.matrix(ws, base=base or None)
        print(json.dumps(doc, indent=2))
        return pipeline.unreadable_exit(ws.current_model)

    run(go)


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


@task(help=_REPORTS_HELP)
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
    from tooling.core import executors

    if not plans:
        raise Exit(
            "error: --plans DIR is required (the folder holding the plan-EXECUTOR folders)", code=2
        )

    def go() -> int:
        configured = list(executors.parse(workspace().policy))
        return ci.plan_comment(plans=Path(plans), matrix=matrix, configured=configured)

    run(go)


@task(
    help={
        **_REPORTS_HELP,
        "apply_result": "the auto apply job's result (success, failure, cancelled, skipped)",
    }
)
def apply_report(c: Context, plans: str = "", matrix: str = "", apply_result: str = "") -> None:
    """After the auto applies: job summary, comment on the merged pull request, and the manual job's matrix.

    Writes `manual_matrix` and `manual_any` to $GITHUB_OUTPUT: the executors
    with units waiting for approval, offered only when the auto job succeeded.
    """
    from tooling.commands import ci

    if not plans or not apply_result:
        raise Exit("error: --plans DIR and --apply-result RESULT are required", code=2)
    run(lambda: ci.apply_report(plans=Path(plans), matrix=matrix, apply_result=apply_result))


@task(
    help={
        "records": "folder holding one apply-manual-EXECUTOR folder (its apply.json) per approval leg",
        "matrix": "the report job's `manual_matrix` output: the executors the approval job applied",
        "result": "the approval job's result (success, failure, cancelled, skipped)",
    }
)
def manual_status(c: Context, records: str = "", matrix: str = "", result: str = "") -> None:
    """After the approval job: the merge commit's status iac/plan (NAME) per executor, from waiting for approval to success or failure.

    Success when the leg's apply record shows every unit applied or without
    changes; failure when a unit was not applied, or the leg left no record
    (the approval was rejected or the job failed before applying).
    """
    from tooling.commands import ci

    if not records or not matrix or not result:
        raise Exit("error: --records DIR, --matrix JSON and --result RESULT are required", code=2)
    run(lambda: ci.manual_status(records=Path(records), matrix=matrix, result=result))


@task(help={"plans": "the folder `invoke app-plan --out` wrote"})
def manual_gate(c: Context, plans: str = "") -> None:
    """Whether a plan waits for a human (a manual-gate unit with changes): `manual` in $GITHUB_OUTPUT."""
    from tooling.commands import ci

    if not plans:
        raise Exit("error: --plans DIR is required", code=2)
    run(lambda: print("true" if ci.manual_gate(plans=Path(plans)) else "false") or 0)


_APP_HELP = {
    "app": "the application's name ([a-z0-9-]+); its state lives under apps/APP/",
    "dir": "the folder of the application's OpenTofu code (its terraform/ folder)",
}


@task(
    help={
        **_APP_HELP,
        "out": "output folder, new or holding an earlier plan report, not inside .git (default: .iac/app-plans/APP)",
    }
)
def app_plan(c: Context, app: str = "", dir: str = "", out: str = "") -> None:
    """Plan an application's folder (plain OpenTofu, state apps/APP/terraform.tfstate); same report and gates.

    Refuses a bad name, any backend configuration pointing at the foundation,
    and resource types outside policy.toml's [apps] allowlist.
    """
    from tooling.commands import apptier

    if not app or not dir:
        raise Exit("error: --app NAME and --dir DIR are required", code=2)
    run(
        lambda: apptier.plan(
            workspace(), app=app, directory=Path(dir), out=Path(out) if out else None
        )
    )


@task(
    help={
        **_APP_HELP,
        "plans": "the folder `invoke app-plan --out` wrote",
        "approve_manual": "also apply a plan whose gate is manual (after a human approved it)",
    }
)
def app_apply(
    c: Context, app: str = "", dir: str = "", plans: str = "", approve_manual: bool = False
) -> None:
    """Apply exactly the reviewed application plan in PLANS; write PLANS/apply.json."""
    from tooling.commands import apptier

    if not app or not dir or not plans:
        raise Exit("error: --app NAME, --dir DIR and --plans DIR are required", code=2)
    run(
        lambda: apptier.apply(
            workspace(),
            app=app,
            directory=Path(dir),
            plans=Path(plans),
            approve_manual=approve_manual,
        )
    )


@task(
    help={
        "module": "the module repository's URL or short name (terraform-proxmox)",
        "version": "a tag of that repository (v1.2.0, dns-v1.3.0)",
        "units": "only units matching these globs (comma-separated; a folder selects the units below it)",
        "dry_run": "show the edits, branch, title and body; change nothing",
    }
)
def bump_module(
    c: Context, module: str, version: str, units: str = "", dry_run: bool = False
) -> None:
    """Bump MODULE (repository URL or short name) to the tag VERSION in every unit pinning it.

    Branch bump/MODULE-VERSION from the default branch, one line per unit,
    a conventional commit, push to origin and a pull request (GITHUB_TOKEN).
    Without a token: stops after the local commit and prints the PR text.
    """
    from tooling.commands import bump as bumpflow

    def go() -> int:
        ws = workspace()
        ws.check_tools()
        return bumpflow.bump_module(ws, module, version, units=units or None, dry_run=dry_run)

    run(go)


@task(help={"json": "print the JSON document on stdout (logs go to stderr)"})
def outdated(c: Context, json_: bool = False) -> None:
    """Pinned modules with newer tags (minor/patch and major apart); skipped sources with reasons.

    Exit code 1 when a module repository could not be queried, or (after the
    report) when a unit's HCL does not parse.
    """
    from tooling.commands import bump as bumpflow
    from tooling.commands import pipeline

    def go() -> int:
        ws = workspace()
        code = bumpflow.outdated(ws, as_json=json_)
        broken = pipeline.unreadable_exit(ws.current_model)
        return 1 if code or broken else 0

    run(go)


@task(help={"units": "only units matching these globs (comma-separated), for a staged rollout"})
def bump_all(c: Context, units: str = "") -> None:
    """Renovate-style: one pull request per module to its newest minor/patch, a flagged one per major.

    Idempotent: existing bump branches and pull requests are updated; one
    closed without merging is not reopened; a branch with someone else's
    commit is never force-pushed. Exit code 1 if a module failed.
    """
    from tooling.commands import bump as bumpflow

    def go() -> int:
        ws = workspace()
        ws.check_tools()
        return bumpflow.bump_all(ws, units=units or None)

    run(go)


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
    from tooling.commands import check as checking

    def go() -> int:
        ws = workspace()
        return checking.check(
            ws.root, apps=[Path(a) for a in apps or []], as_json=json_, cache_dir=ws.cache_dir
        )

    run(go)


@task(
    help={
        "apply": "apply the import plan (only if it shows no difference), then re-plan to confirm"
    }
)
def adopt(c: Context, unit: str, address: str, id_: str, apply: bool = False) -> None:
    """Adopt an existing resource into UNIT at ADDRESS by importing ID, only if nothing else changes.

    Plans the unit with a temporary import block (in a private working copy
    under .iac/, never in live/); accepts only a plan whose only actions are the
    import (0 to add, 0 to change, 0 to destroy). Otherwise prints what differs
    (sensitive values hidden) and exits 1: fix the code, not reality.
    """
    from tooling.commands import adopt as adopting

    run(lambda: adopting.adopt(workspace(), unit, address, id_, apply=apply))


@task(
    help={
        "remove_backup": "after a move: delete the old key's backup (refused if the new key holds no state)"
    }
)
def move_unit(c: Context, old: str, new: str, remove_backup: bool = False) -> None:
    """Move unit OLD to folder NEW (git mv) and migrate its state to NEW's key (local or S3).

    Refuses when NEW's key already holds state or either key is locked. The old
    key is kept as OLD_KEY.moved-backup until --remove-backup. If the folder was
    already moved by hand, migrates the state only.
    """
    from tooling.commands import move as moving

    def go() -> int:
        ws = workspace()
        return moving.move_unit(ws, old, new, remove_backup=remove_backup)

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
    from tooling.commands import crosscheck as xcheck
    from tooling.io import toolchain

    def go() -> int:
        toolchain.ensure_bin_dir_on_path()
        if path:
            return xcheck.run(Path(path), as_json=json_)
        ws = workspace()
        ws.check_tools()
        return xcheck.run(ws.root, as_json=json_, live=ws.layout.live)

    run(go)


@task(
    help={
        "path": "the repository to examine (default: the current folder)",
        "json": "print the findings as JSON on stdout",
    }
)
def doctor(c: Context, path: str = "", json_: bool = False) -> None:
    """What a Terragrunt repository needs to adopt this tooling, and what the model cannot read.

    Read-only. Exit 1 when something must be done first.
    """
    from tooling.commands import doctor as doc

    run(lambda: doc.run(Path(path or "."), as_json=json_))


ns = Collection(
    setup,
    units,
    affected,
    graph,
    plan,
    apply,
    drift,
    matrix,
    runners,
    audit,
    apply_base,
    plan_comment,
    apply_report,
    manual_status,
    manual_gate,
    clean_runner,
    bump_module,
    outdated,
    bump_all,
    check,
    crosscheck,
    doctor,
    adopt,
    move_unit,
    app_plan,
    app_apply,
    test,
)
