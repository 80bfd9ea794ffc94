"""Change detection for the tasks: what a change affects (``invoke affected``, the
plan's selection, the matrix), and the listings' exit code.

Apart from :mod:`tooling.commands.plan` so that detection imports only what
it needs: no planner, no verifier, no check rules.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from itertools import chain
from pathlib import Path
from typing import TypeVar

from tooling.core.plan.affected import Affected, affected
from tooling.errors import UsageError
from tooling.io import git
from tooling.io.stacks import NOT_GENERATED
from tooling.io.ui import say, show
from tooling.io.workspace import Workspace
from tooling.model.units import Change, Model

T = TypeVar("T")

# --------------------------------------------------------------------------- affected


def default_base(root: Path) -> str:
    """The PR's base branch in GitHub Actions, else the default branch."""
    pr_base = os.environ.get("GITHUB_BASE_REF")
    if pr_base:
        return f"origin/{pr_base}"
    return git.default_branch(root)


def compute_affected(
    ws: Workspace,
    base: str | None = None,
    head: str | None = None,
    *,
    uncommitted: bool = False,
    disk_model: bool = True,
    pending: list[Change] | None = None,
) -> tuple[Affected, Model]:
    """The units a change affects, and the head model they were read from.

    The warm path is two git processes (rev-parse, which also finds the merge base,
    and diff) and a cached model found by the head's tree SHA: no file is listed or
    parsed. With ``uncommitted`` a third (status, started first and run meanwhile in a
    thread) adds the working tree's changes, and the model is the working tree's (:attr:`Workspace.current_model`, which
    walks the live folders and hashes every HCL file to find its cache) unless
    ``disk_model`` is false and git reports the working tree clean: then it is
    the head's, as without ``uncommitted`` (a listing that plans nothing does
    not need what only the disk holds; a tree with stacks keeps its generated
    units). ``pending``: the working tree's uncommitted changes, when the caller
    just asked git (:func:`tooling.io.git.uncommitted`).
    """
    root = ws.root
    # the working tree's status, git's slowest answer here, asked while the commits are
    # compared (its error, if any, comes after theirs, as when asked last)
    status = (
        _meanwhile(lambda: git.uncommitted(root, ws.git_prefix))
        if uncommitted and pending is None and head is None
        else None
    )
    _, head_sha, head_tree, merge_base = git.resolve_range(
        root, base or default_base(root), head or "HEAD"
    )
    changes = git.changed(root, merge_base, head_sha, ws.git_prefix)
    if uncommitted:
        if head is not None and head_sha != git.rev_parse(root, "HEAD"):
            raise UsageError(
                "--uncommitted compares the working tree: do not combine it with --head"
            )
        if pending is None:
            pending = status() if status is not None else git.uncommitted(root, ws.git_prefix)
        changes = [*changes, *pending]
        # "+ uncommitted changes" only when there are some
        uncommitted = bool(pending)
        head_model = None if pending or disk_model else _committed_model(ws, head_sha, head_tree)
        if head_model is None:
            head_model = ws.current_model
    else:
        head_model = ws.model(ws.tree_at(head_sha, head_tree))
    result = affected(
        changes,
        head_model,
        lambda: ws.model(ws.tree_at(merge_base)),
        base_sha=merge_base,
        head_sha=head_sha,
        uncommitted=uncommitted,
    )
    return result, head_model


def worktree_affected(
    root: Path,
    git_prefix: str,
    base: str | None,
    *,
    model: Model,
    model_at: Callable[[str], Model],
    pending: list[Change],
) -> Affected:
    """What a plan of the working tree plans: the units its commits since the merge base
    with ``base`` and its uncommitted changes ``pending`` (git's status, just asked)
    affect, read in ``model`` (the working tree's); ``model_at``: a revision's model (the
    merge base's, for the deleted and moved units). :func:`compute_affected` with
    ``uncommitted`` and ``pending``, from values."""
    _, head_sha, _, merge_base = git.resolve_range(root, base or default_base(root), "HEAD")
    changes = [*git.changed(root, merge_base, head_sha, git_prefix), *pending]
    return affected(
        changes,
        model,
        lambda: model_at(merge_base),
        base_sha=merge_base,
        head_sha=head_sha,
        uncommitted=bool(pending),
    )


def _meanwhile(ask: Callable[[], T]) -> Callable[[], T]:
    """Start ``ask`` in a thread now; the function returned waits for its answer (or
    raises its error)."""
    box: list[T] = []
    failed: list[BaseException] = []

    def work() -> None:
        try:
            box.append(ask())
        except BaseException as exc:  # handed to the caller, who raises it
            failed.append(exc)

    thread = threading.Thread(target=work, name="git-status", daemon=True)
    thread.start()

    def answer() -> T:
        thread.join()
        if failed:
            raise failed[0]
        return box[0]

    return answer


def _committed_model(ws: Workspace, head_sha: str, head_tree: str) -> Model | None:
    """The head commit's model, cached by its tree SHA; None when the live folders hold
    stacks (their units are generated on disk, :attr:`Workspace.current_model`): the
    model ties every unit a stack declares to its stack file."""
    from tooling.model.stacks import STACK_FILE, is_stack_file

    model = ws.model(ws.tree_at(head_sha, head_tree))
    reads = list(chain.from_iterable(u.reads for u in model.units.values()))
    # a stack file's path ends with its name: one search of them all before each is asked
    stacked = STACK_FILE in "\n".join(reads) and any(is_stack_file(f) for f in reads)
    return None if stacked else model


def left_out(ws: Workspace) -> str | None:
    """For ``invoke affected --committed`` (or ``--head``): the working tree's uncommitted
    changes that were not included, if there are any (plans would include them)."""
    pending = git.uncommitted(ws.root)
    if not pending:
        return None
    return (
        f"{len(pending)} uncommitted change(s) of the working tree not included "
        "(commits only); `invoke plan` plans the working tree: commit them, or drop --committed"
    )


def print_affected(
    result: Affected, emit: Callable[[str], None] = show, *, ignored: str | None = None
) -> None:
    """The human listing: the result of `invoke affected` on stdout; progress (``say``)
    where another command lists what it is about to do. ``ignored``: what the working
    tree holds that was left out (:func:`left_out`)."""
    emit(
        f"base {result.base[:12]} (merge base) -> head {result.head[:12]}"
        + (" + uncommitted changes" if result.uncommitted else "")
        + (f" ({ignored})" if ignored else "")
    )
    if not result.units:
        emit("no unit is affected")
    for unit in result.units:
        extra = (
            f" (from {unit.moved_from}: state key changes, migrate state)"
            if unit.moved_from
            else ""
        )
        emit(f"  {unit.change:<9} {unit.path}{extra}")
        for reason in unit.reasons:
            emit(f"              because {reason} changed")
        if unit.error:
            emit(f"              and the model cannot evaluate it: {unit.error}")
    if result.dependents:
        emit("dependents (re-planned after their upstream applies):")
        for dep in result.dependents:
            emit(f"  {dep.path}  via {dep.via}")


def unparsable(model: Model) -> list[str]:
    """``file:line:col: message`` of every unit whose HCL (or an included file's) does not parse."""
    return [str(u.error) for u in model.units.values() if "HCL syntax error" in (u.error or "")]


def unreadable_exit(model: Model) -> int:
    """For the read-only listings, after their full result: 1, with each parse error on
    stderr (``file:line:col: message``), when a unit's HCL does not parse or a stack was
    refused before generation (its files break a rule); else 0."""
    refused = [
        str(u.error) for u in model.units.values() if (u.error or "").startswith(NOT_GENERATED)
    ]
    broken = list(dict.fromkeys([*unparsable(model), *refused]))
    for error in broken:
        say(f"error: {error}")
    return 1 if broken else 0
