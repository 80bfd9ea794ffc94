"""The tasks' logic, one function per command; ``tasks.py`` only parses options.

Each function takes a :class:`~tooling.io.workspace.Workspace` and plain
arguments, prints its result on stdout (human text, or the ``--json`` document)
and progress and diagnostics on stderr (:mod:`tooling.io.ui`), and returns an
exit code or raises :class:`ToolingError`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from tooling.commands import preflight, verify, workcopies
from tooling.commands.batch import run_batch

# re-exported: the planners' and the tests' way in to detection
from tooling.commands.detect import compute_affected as compute_affected
from tooling.commands.detect import print_affected as print_affected
from tooling.commands.detect import unreadable_exit as unreadable_exit
from tooling.commands.plans import Progress
from tooling.core import binding
from tooling.core.changes import Affected
from tooling.core.gates import GatePolicy, parse_policy
from tooling.core.results import Result, with_gates
from tooling.core.targets import Target, check_options, never_run_loops, select_targets
from tooling.errors import ToolingError, UsageError
from tooling.io import git, outdir, proc
from tooling.io.config import Settings
from tooling.io.ui import say, show
from tooling.io.workspace import Workspace
from tooling.model.evaluator import READ_CYCLE
from tooling.model.repo import Model

SUMMARY_VERSION = 1


# --------------------------------------------------------------------------- plan


def _pr_context() -> bool:
    return os.environ.get("GITHUB_EVENT_NAME", "") in ("pull_request", "pull_request_review")


def blocked_moves(
    root: Path, model: Model, change: Affected | None, executor: str | None
) -> set[str]:
    """The moved units that must wait: their state is still at the old key (the state stores tell)."""
    if change is None or not any(u.change == "moved" for u in change.units):
        return set()
    from tooling.commands import move as moving  # the state stores: only when a unit moved

    return {
        u.path
        for u in change.units
        if u.change == "moved"
        and not (executor and u.executor != executor)
        and moving.moved_unit_blocked(root, model, change, u.path)
    }


def refuse_unparsable(model: Model, paths: Sequence[str], *, doing: str = "plan") -> None:
    """Fail closed, before the report folder is touched, when a unit to plan has an
    HCL syntax error: its dependencies and state key are unknown, so neither the
    plan order nor the change set can be trusted. (A unit the model merely cannot
    *evaluate* is planned: Terragrunt is the authority on what it means.)"""
    wanted = set(paths)
    broken = list(
        dict.fromkeys(
            str(u.error)
            for u in model.units.values()
            if u.path in wanted and "HCL syntax error" in (u.error or "")
        )
    )
    if broken:
        raise ToolingError(
            f"cannot {doing}: a unit's HCL does not parse"
            + (" (the previous report is kept)" if doing == "plan" else "")
            + ":\n  "
            + "\n  ".join(broken)
        )


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


def refuse_bad_names(ws: Workspace, model: Model, paths: Sequence[str]) -> None:
    """Fail closed before any state key is used or command built when a unit to plan has a
    folder name outside the naming rule (``invoke check`` names the same units)."""
    from tooling.core import names

    wanted = set(paths)
    bad = [
        b
        for b in names.bad_unit_names(model.units, ws.layout.live, names.pattern_from(ws.policy))
        if b.path in wanted
    ]
    if bad:
        raise ToolingError(
            "cannot plan: a unit's folder name is not allowed (the previous report is kept):\n  "
            + "\n  ".join(f"{b.path}/terragrunt.hcl:1: {b.why}" for b in bad)
            + "\nRename the folder to lowercase letters, digits and dashes "
            "(`invoke move-unit OLD NEW` migrates its state); docs/rules.md, unit-name."
        )


def write_summary(out_dir: Path, data: dict[str, Any]) -> Path:
    return outdir.write_json(out_dir / "summary.json", data)


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
    leg: tuple[str, Sequence[str]] | None = None,
) -> int:
    """``invoke plan``; ``leg`` (its id and units): only those of the affected units."""
    say(ws.describe())
    check_options(
        all_units=all_units,
        units=units,
        executor=executor,
        executors=known_executors(ws, ws.current_model),
    )
    ws.check_tools()
    root = ws.root
    out_dir = (out or root / ".iac" / "plans").resolve()
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
        )


def preflight_rendered(
    ws: Workspace, targets: Sequence[Target], env: dict[str, str], *, jobs: int
) -> None:
    """The preflight of ``invoke plan`` and ``invoke drift``, with every unit to plan rendered meanwhile (``terragrunt render --all``
    in a thread): the roles the units will run as are checked once both are done, and the
    renders serve the verifier before each plan (no second render per unit)."""
    from concurrent.futures import ThreadPoolExecutor

    planned = [(t.run_dir, t.path, t.tier) for t in targets if not t.destroy and not t.preset]
    verify.avoid_loops(
        ws.root / path
        for path, unit in ws.current_model.units.items()
        if unit.error and READ_CYCLE in unit.error
    )
    with ThreadPoolExecutor(max_workers=1) as pool:
        rendering = pool.submit(verify.prerender, [(d, p) for d, p, _ in planned], env, jobs=jobs)
        try:
            preflight.check(ws, [(t.path, t.executor) for t in targets])
        finally:
            renders = rendering.result()
    preflight.check_roles(ws, verify.roles_of(planned, renders))


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
    leg: tuple[str, Sequence[str]] | None = None,
) -> int:
    from tooling.core import declared, report, shards

    root = ws.root
    out_dir = folder.path
    head_sha = git.rev_parse(root, "HEAD")
    # plans read the working tree: its uncommitted changes are planned, and the report says so
    pending = git.uncommitted(root)
    # before any tool runs: the files planned are these, not HEAD's when the tree is dirty
    tree_state = binding.worktree_record(*git.worktree_changes(root, besides=out_dir))
    model = (
        ws.current_model
    )  # the one load of the head model: affected and the tool environment share it
    change: Affected | None = None
    base_root: Path | None = None
    base_model: Model | None = None
    worktree: Path | None = None
    if not all_units and not units:
        change, _ = compute_affected(ws, base, uncommitted=True)
        change = shards.within(change, leg[1], leg[0]) if leg else change
        print_affected(change, say)
        if any(u.change == "deleted" for u in change.units):
            worktree = git.add_worktree(
                root, root / ".iac" / "worktrees" / change.base[:12], change.base
            )
            base_root = worktree
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
            blocked_moves=blocked_moves(root, model, change, executor),
            base_root=base_root,
            base_model=base_model,
        )
        # a stack's generated units run in the scratch copy they were generated in
        targets = [t if t.destroy else replace(t, run_dir=ws.run_dir(t.path)) for t in targets]
        targets = never_run_loops(targets, model)
        refuse_unparsable(model, [t.path for t in targets])
        refuse_bad_names(ws, model, [t.path for t in targets if not t.destroy])
        # the base revision's modules too: a deleted unit's destroy plan fetches them
        env = ws.env_for(t.source for t in targets if t.source) if targets else {}
        preflight_rendered(ws, targets, env, jobs=jobs or os.cpu_count() or 2)
        # after the checks: a plan that is refused removes nothing
        workcopies.prepare(
            [(t.path, t.run_dir) for t in targets if not t.destroy and not t.preset],
            ws.settings,
            ws.root,
        )
        folder.reset()
        if not targets:
            say("nothing to plan")
        targets, env = workcopies.guarded(
            targets,
            env,
            root=ws.root,
            cache_dir=ws.settings.cache_dir,
            reads={p: u.reads for p, u in model.units.items()},
        )
        # On pull requests the plan identity is read-only: it cannot write the
        # S3 lock object, and a plan never writes state. Main takes the lock.
        # Ctrl-C or SIGTERM from here on: OpenTofu stops gracefully (once), nothing new
        # starts, and the report below says the run was interrupted.
        with proc.forwarding_interrupts("the plans"):
            results = run_batch(
                targets,
                out_dir,
                env,
                jobs=jobs or os.cpu_count() or 2,
                progress=Progress(len(targets)),
                lock=not on_pr,
                declared=declared.parse_policy(ws.policy),
            )
        interrupted = proc.interrupted()
    finally:
        verify.forget_prerendered()
        if worktree is not None:
            git.remove_worktree(root, worktree)
    results = with_gates(_explain_lock_errors(ws, results), parse_policy(ws.policy))
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
        forge.post_sticky_pages([outdir.redact(b) for b in bodies])
    say(f"wrote {out_dir / 'summary.json'} and {out_dir / 'comment.md'}")
    if interrupted:
        say("interrupted: the report above is incomplete and cannot be applied; plan again")
        return 130
    failed = [r for r in results if r.status in ("error", "not-planned", "blocked")]
    return 1 if failed else 0


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


def summary_document(
    results: Sequence[Result],
    *,
    base: str | None,
    head: str,
    executor: str | None,
    root: Path,
    policy: GatePolicy,
    settings: Settings | None = None,
    interrupted: bool = False,
    worktree: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """summary.json: the run's revisions and tools, whether the tree was dirty
    (``worktree``, :func:`tooling.core.binding.worktree_record`), and per unit its
    result with its gate (decided here under ``policy`` for a result that has none yet)."""
    from tooling.io import toolchain

    doc: dict[str, Any] = {
        "version": SUMMARY_VERSION,
        "base": base,
        "head": head,
        "executor": executor,
        "tools": {tool.name: version for tool, version in toolchain.read_pins(root)},
        "interrupted": interrupted,
    }
    if worktree is not None:
        doc["worktree"] = dict(worktree)
    if settings is not None:
        doc["settings"] = settings.to_json()
    doc["units"] = [r.to_json() for r in with_gates(results, policy)]
    return doc
