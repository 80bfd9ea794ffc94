"""The tasks: the command surface (see README, docs/commands.md), run as ``iac TASK``
(the console script installed with the package, :func:`main`) or, in this repository,
as ``invoke TASK`` (``tasks.py`` at its root loads this collection).

Thin on purpose: each task declares its options and help, and calls one
function of the ``tooling`` package through :func:`tooling.cli.run`,
which runs the preamble every task shares (the first line and the tools' check
declared there, once each) and maps a ``ToolingError`` to its exit code (1 for
a failure to act on, 2 for bad usage) so a known failure never prints a
traceback. A task's required options are declared once, ``@task(required=...)``. This file is the
command-line contract: most of its lines are the help texts ``invoke --help
TASK`` shows.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from invoke.collection import Collection
from invoke.context import Context

from tooling.cli import project, run, task, use_usage_exit_codes, workspace


def _project_root() -> Path:
    """The repository the task runs in (the nearest folder above the current one holding
    the root file and live folders, as the task's preamble found it), else the current
    folder."""
    found = project()
    return found.root if found is not None else Path.cwd()


#: --reviewed of plan and apply
_REVIEWED_HELP = (
    "the pull request's reviewed plan folder (its plan artifact, or a folder of its legs' "
    "artifacts): a unit whose plan differs from it, or that it did not plan, is manual"
)

# from here on, invoke's usage errors (unknown flag, missing value...) exit 2
use_usage_exit_codes()


@task(
    help={
        "pipeline": "only the tools the pipeline's tasks need (leave out act, which only the tests use)"
    }
)
def setup(c: Context, pipeline: bool = False) -> None:
    """Install the pinned OpenTofu, Terragrunt, actionlint and act (from .tool-versions), and
    build the pipeline's guard (tooling/guard, with Go).

    For each tool: a cached build, else a binary of the right version on PATH,
    else the official release verified against its checksums, else a build from
    the Go module. Links them into this Python environment's bin directory. The
    guard, which Terragrunt runs instead of OpenTofu to check each command, is built
    from its source beside the pinned OpenTofu, once per version of that source.
    Idempotent: on a warm machine it takes well under a second.
    """
    from tooling.io import guardbin, toolchain

    def go() -> None:
        installed = toolchain.setup(_project_root(), test_tools=not pipeline)
        guardbin.ensure()
        print(toolchain.summary_line(installed), file=sys.stderr)

    run(go)


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
    from tooling.engine import detect
    from tooling.errors import UsageError

    def go() -> int:
        if committed and uncommitted:
            raise UsageError("--committed and --uncommitted exclude each other")
        ws = workspace()
        whole_tree = not committed and not head
        result, model = detect.compute_affected(
            ws, base or None, head or None, uncommitted=whole_tree or uncommitted, disk_model=False
        )
        ignored = None if whole_tree or uncommitted else detect.left_out(ws)
        if json_:
            print(json.dumps(result.to_json(), indent=2))
            if ignored:
                print(f"note: {ignored}", file=sys.stderr)
        else:
            detect.print_affected(result, ignored=ignored)
        return detect.unreadable_exit(model)

    run(go, banner="units")


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
    help={
        "format": "mermaid (default; renders on GitHub) or dot (Graphviz)",
        "affected": "highlight the units affected by the current change",
        "base": "with --affected: compare with the merge base of this ref",
    }
)
def graph(c: Context, format: str = "mermaid", affected: bool = False, base: str = "") -> None:
    """The unit DAG (dependencies -> dependents), grouped and coloured by tier."""
    from tooling.commands import listing
    from tooling.engine.detect import unreadable_exit

    def go() -> int:
        ws = workspace()
        print(listing.graph(ws, fmt=format, affected_base=base or None, highlight=affected), end="")
        return unreadable_exit(ws.current_model)

    run(go, banner="units")


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


@task(help={"plans": "a plan folder to remove too (the job's copy of the plans)"})
def clean_runner(c: Context, plans: str = "") -> None:
    """Remove what a job leaves on a runner: PLANS, .iac/ and every .terragrunt-cache/.

    A folder holding an errored.tfstate (a state an apply could not save) is
    kept, and each kept folder is named: push the state back first
    (docs/runbooks.md, "The state could not be saved").
    """
    from tooling.engine import applysafety

    def clean() -> None:
        applysafety.clean_runner(_project_root(), [Path(plans)] if plans else [])

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
    from tooling.engine.detect import unreadable_exit
    from tooling.engine.matrix import matrix as affected_matrix
    from tooling.engine.matrix import parse_max_legs

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


from tooling.citasks import (  # noqa: E402  (after use_usage_exit_codes(), as every task)
    apply_base,
    apply_report,
    manual_gate,
    manual_status,
    plan_comment,
    report,
    reviewed_check,
    reviewed_run,
)
from tooling.repotasks import (  # noqa: E402
    adopt,
    app_apply,
    app_plan,
    bump_all,
    bump_module,
    check,
    crosscheck,
    doctor,
    move_unit,
    outdated,
)

ns = Collection(
    setup,
    units,
    affected,
    graph,
    plan,
    report,
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
    reviewed_run,
    reviewed_check,
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


def main() -> None:
    """The ``iac`` console script: these tasks, run from the repository's project root (the
    folder holding policy.toml) or any folder below it."""
    from importlib.metadata import PackageNotFoundError, version

    from tooling.cli import UsageProgram

    try:
        release = version("tooling")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree
        release = "unknown"
    UsageProgram(namespace=ns, name="iac", binary="iac", version=release).run()
