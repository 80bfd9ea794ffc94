"""``invoke plan``: plan the affected (or named) units and write the report; one leg of a
split matrix (``--from-matrix M --leg ID``).

It prints progress and diagnostics on stderr (:mod:`tooling.io.ui`) and returns an
exit code or raises :class:`ToolingError`; the mechanisms it calls are in
:mod:`tooling.engine` (detection, refusals, preflight, the planners, summary.json).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tooling.core import binding, legs
from tooling.core.approval import DIFFERS, against_reviewed
from tooling.core.changes import Affected
from tooling.core.gates import parse_policy
from tooling.core.results import Result, with_gates
from tooling.core.status import Status
from tooling.core.targets import check_options, never_run_loops, select_targets
from tooling.core.termtext import escape_line
from tooling.engine import preflight
from tooling.engine.batchplanner import run_batch
from tooling.engine.detect import compute_affected, print_affected

# re-exported: the task files' exit code for a unit that does not parse (graph, matrix, outdated)
from tooling.engine.detect import unreadable_exit as unreadable_exit
from tooling.engine.legs import read_matrix
from tooling.engine.preplan import prepared
from tooling.engine.reviewed import ReviewedPlans
from tooling.engine.summary import summary_document, write_summary
from tooling.engine.unitplanner import Progress
from tooling.errors import UsageError
from tooling.io import backends, git, outdir, proc, redacting
from tooling.io.ui import say, show
from tooling.io.workspace import Workspace
from tooling.model.repo import Model

# --------------------------------------------------------------------------- plan


def _pr_context() -> bool:
    return os.environ.get("GITHUB_EVENT_NAME", "") in ("pull_request", "pull_request_review")


def blocked_moves(
    root: Path,
    model: Model,
    change: Affected | None,
    executor: str | None,
    env: Mapping[str, str] | None = None,
) -> set[str]:
    """The moved units that must wait: their state is still at the old key (the state stores tell)."""
    if change is None or not any(u.change == "moved" for u in change.units):
        return set()
    from tooling.engine import moves  # the state stores: only when a unit moved

    return {
        u.path
        for u in change.units
        if u.change == "moved"
        and not (executor and u.executor != executor)
        and moves.moved_unit_blocked(root, model, change, u.path, env)
    }


def parse_jobs(text: str) -> int | None:
    """``--jobs``: a whole number >= 1, or None (not given: one per CPU)."""
    if text == "":
        return None
    try:
        jobs = int(text)
    except ValueError:
        jobs = 0
    if jobs < 1:
        raise UsageError(f"--jobs {text}: give a whole number of parallel plans, 1 or more")
    return jobs


def known_executors(ws: Workspace, model: Model) -> set[str]:
    """The executors policy.toml declares and the ones the units name."""
    from tooling.core import executors

    return set(executors.parse(ws.policy)) | {u.executor for u in model.units.values()}


def plan(
    ws: Workspace,
    *,
    base: str | None = None,
    all_units: bool = False,
    units: Sequence[str] = (),
    executor: str | None = None,
    jobs: int | None = None,
    out: Path | None = None,
    comment: bool = False,
    leg: legs.Leg | None = None,
    reviewed: Path | None = None,
) -> int:
    """``invoke plan``; ``leg``: only its units of the affected ones (:func:`legs.select`);
    ``reviewed``: the pull request's plan folder, each plan compared with it
    (:mod:`tooling.engine.reviewed`)."""
    check_options(
        all_units=all_units,
        units=units,
        executor=executor,
        executors=known_executors(ws, ws.current_model),
    )
    root = ws.root
    out_dir = (out or root / ".iac" / "plans").resolve()
    # read before anything is planned: a folder that is not one stops the run here
    prior = ReviewedPlans(reviewed) if reviewed is not None else None
    # checked and locked now; emptied only once parsing and preflight succeeded
    with outdir.ReportDir.claim(out_dir, outdir.PLAN_LAYOUT, root=root) as folder:
        return _plan_into(
            ws,
            folder,
            base=base,
            all_units=all_units,
            units=units,
            executor=executor,
            jobs=jobs,
            comment=comment,
            leg=leg,
            reviewed=prior,
        )


def _plan_into(
    ws: Workspace,
    folder: outdir.ReportDir,
    *,
    base: str | None,
    all_units: bool,
    units: Sequence[str],
    executor: str | None,
    jobs: int | None,
    comment: bool,
    leg: legs.Leg | None = None,
    reviewed: ReviewedPlans | None = None,
) -> int:
    from tooling.core import declared, report

    root = ws.root
    out_dir = folder.path
    started = datetime.now(UTC)
    head_sha = git.rev_parse(root, "HEAD")
    # plans read the working tree: its uncommitted changes are planned, and the report says so
    pending = git.uncommitted(root, ws.git_prefix)
    # before any tool runs: the files planned are these, not HEAD's when the tree is dirty
    tree_state = binding.worktree_record(
        *git.worktree_changes(root, besides=out_dir, pending=pending)
    )
    model = (
        ws.current_model
    )  # the one load of the head model: affected and the tool environment share it
    change: Affected | None = None
    base_root: Path | None = None
    base_model: Model | None = None
    worktree: Path | None = None
    differs: dict[str, list[str]] = {}
    if not all_units and not units:
        change, _ = compute_affected(ws, base, uncommitted=True, pending=pending)
        change = legs.select(change, leg) if leg else change
        print_affected(change, say)
        if any(u.change == "deleted" for u in change.units):
            worktree = git.add_worktree(
                root, root / ".iac" / "worktrees" / change.base[:12], change.base
            )
            base_root = worktree / git.prefix(root)  # the project root inside it
            base_model = ws.model(ws.tree_at(change.base))
    on_pr = _pr_context()
    if change is not None and any(u.change == "moved" for u in change.units):
        preflight.check_state_backend(ws.settings)  # a moved unit's state is looked up first
    try:
        targets = select_targets(
            model,
            root=root,
            all_units=all_units,
            units=units,
            change=change,
            executor=executor,
            on_pr=on_pr,
            blocked_moves=blocked_moves(root, model, change, executor, ws.tool_env),
            base_root=base_root,
            base_model=base_model,
        )
        # a stack's generated units run in the scratch copy they were generated in
        targets = [t if t.destroy else replace(t, run_dir=ws.run_dir(t.path)) for t in targets]
        targets = never_run_loops(targets, model)
        # the base revision's modules too: a deleted unit's destroy plan fetches them
        env = ws.env_for(t.source for t in targets if t.source) if targets else {}
        if worktree is not None:  # a deleted unit's state where its backend puts it
            top = git.toplevel(root)
            for t in targets:
                if t.destroy:
                    backends.share_repository_state(t.run_dir, worktree.resolve(), top, env)
        # On pull requests the plan identity is read-only: it cannot write the
        # S3 lock object, and a plan never writes state. Main takes the lock.
        # Ctrl-C or SIGTERM from here on: OpenTofu stops gracefully (once), nothing new
        # starts, and the report below says the run was interrupted.
        with prepared(
            ws,
            model,
            targets,
            env,
            folder=folder,
            jobs=jobs or os.cpu_count() or 2,
            what="the plans",
        ) as (targets, env):
            if not targets:
                say("nothing to plan")
            results = run_batch(
                targets,
                out_dir,
                env,
                jobs=jobs or os.cpu_count() or 2,
                progress=Progress(len(targets)),
                lock=not on_pr,
                declared=declared.parse_policy(ws.policy),
            )
            if reviewed is not None:  # in the working copies the plans were read in
                differs = _reviewed_differences(reviewed, targets, results, env)
        interrupted = proc.interrupted()
    finally:
        if worktree is not None:
            git.remove_worktree(root, worktree)
    results = with_gates(_explain_lock_errors(ws, results), parse_policy(ws.policy))
    results = [
        replace(r, gate=against_reviewed(r.gate, differs[r.path]))
        if r.gate is not None and r.path in differs
        else r
        for r in results
    ]
    results = _with_sources_before(ws, results, change)
    summary = summary_document(
        results,
        base=change.base if change else None,
        head=head_sha,
        executor=executor,
        root=root,
        policy=parse_policy(ws.policy),
        settings=ws.run_settings,
        interrupted=interrupted,
        worktree=tree_state,
        planned_at=started,
    )
    write_summary(out_dir, summary)
    page = _page_context(ws, model, change, head_sha, out_dir)

    def rendered_within(budget: int) -> str:
        return report.render(
            results,
            head=head_sha,
            base=change.base if change else None,
            settings=summary.get("settings"),
            interrupted=interrupted,
            uncommitted=len(pending),
            budget=budget,
            **page,
        )

    rendered = rendered_within(report.BUDGET)
    folder.write_text("comment.md", rendered)
    show(report.table(results))
    folder.job_summary(rendered)
    if comment:
        from tooling.core import pages
        from tooling.io import forge

        bodies = pages.paginate("", [("", rendered_within(10**9))], budget=forge.MAX_BODY)
        forge.post_sticky_pages([redacting.redact(b) for b in bodies])
    say(f"wrote {out_dir / 'summary.json'} and {out_dir / 'comment.md'}")
    if interrupted:
        say("interrupted: the report above is incomplete and cannot be applied; plan again")
        return 130
    failed = [r for r in results if r.status in (Status.ERROR, Status.NOT_PLANNED, Status.BLOCKED)]
    return 1 if failed else 0


def _reviewed_differences(
    reviewed: ReviewedPlans,
    targets: Sequence[Any],
    results: Sequence[Result],
    env: Mapping[str, str],
) -> dict[str, list[str]]:
    """Per unit with changes: what its plan does otherwise than the reviewed plan."""
    run_dirs = {t.path: t.run_dir for t in targets}
    out: dict[str, list[str]] = {}
    for r in results:
        if r.status == Status.CHANGES and r.summary is not None and r.path in run_dirs:
            out[r.path] = reviewed.differences(r.path, r.summary, run_dirs[r.path], env)
            if out[r.path]:
                say(f"{r.path}: {DIFFERS}{'; '.join(out[r.path])}")
    return out


def _with_sources_before(
    ws: Workspace, results: Sequence[Result], change: Affected | None
) -> list[Result]:
    """Each modified unit's module source at the merge base, when it differs (a bump)."""
    if change is None or not any(r.source and r.change == "modified" for r in results):
        return list(results)
    before = ws.model(ws.tree_at(change.base)).units
    return [
        replace(r, source_before=before[r.path].source)
        if r.change == "modified" and r.path in before and before[r.path].source != r.source
        else r
        for r in results
    ]


def _page_context(
    ws: Workspace, model: Model, change: Affected | None, head: str, out_dir: Path
) -> dict[str, Any]:
    """What the report links and names beyond the results: the run's links (in
    Actions), the dependents re-planned after their upstream, the graph's edges,
    and the plans folder for the local approval command."""
    from tooling.core.review import RunLinks

    shown = out_dir.relative_to(ws.root) if out_dir.is_relative_to(ws.root) else out_dir
    return {
        "links": RunLinks.from_env(os.environ, head),
        "dependents": [(d.path, d.via) for d in change.dependents] if change else [],
        "upstreams": {p: u.dependencies for p, u in model.units.items()},
        # in Actions the folder is the run's artifact, not a path a reviewer has
        "plans_dir": None if os.environ.get("GITHUB_ACTIONS") == "true" else shown.as_posix(),
    }


def _explain_lock_errors(ws: Workspace, results: Sequence[Result]) -> list[Result]:
    """A plan that failed on its unit's lock file says which file, and the command that fixes it."""
    if not any(r.error for r in results):
        return list(results)
    from tooling.core import executors
    from tooling.core.bump import lock_hint

    platforms = executors.lock_platforms(executors.parse(ws.policy))
    out = []
    for result in results:
        hint = lock_hint(result.error, result.path, platforms) if result.error else None
        out.append(replace(result, error=f"{result.error}\n{hint}") if hint else result)
    return out


def plan_leg(
    ws: Workspace,
    *,
    matrix: str,
    leg: str,
    base: str | None,
    jobs: int | None,
    out: Path | None,
    executor: str | None = None,
    reviewed: Path | None = None,
) -> int:
    """Plan leg ``leg`` of ``matrix``: the affected units it lists, as its executor; the
    folder's summary.json records the leg (``leg``) for :func:`merge`."""
    if not leg:
        raise UsageError("--from-matrix needs --leg ID (a `leg` of the matrix, or an executor)")
    doc = read_matrix(matrix)
    chosen = legs.leg_of(doc, leg)
    if executor is not None and executor != chosen.executor:
        raise UsageError(
            f"--leg {escape_line(leg)} is a leg of executor {escape_line(chosen.executor)}, not {executor}: "
            f"this job runs {executor}'s legs only"
        )
    executor, units = chosen.executor, list(chosen.units)
    index, count = chosen.index, chosen.count
    code = plan(ws, base=base, executor=executor, jobs=jobs, out=out, leg=chosen, reviewed=reviewed)
    summary = (out or ws.root / ".iac" / "plans").resolve() / "summary.json"
    if not summary.is_file():
        return code
    written = json.loads(summary.read_text(encoding="utf-8"))
    written["leg"] = legs.leg_record(leg, index, count, units)
    outdir.write_json(summary, written)
    say(f"leg {leg} ({index} of {count} of executor {executor}): {len(units)} unit(s)")
    return code
