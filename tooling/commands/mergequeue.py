"""The merge queue's steps: which run's plans are the reviewed ones (``invoke
reviewed-run``), and the required check that fails naming each unit whose plan
is not the one its pull request's review saw (``invoke reviewed-check``).
docs/pipelines.md, "The reviewed plan follows the change to main"."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tooling.core.ci import steps
from tooling.engine.plan import planfolder
from tooling.errors import ToolingError, UsageError
from tooling.io.actions import append_outputs
from tooling.io.actions import event as _event
from tooling.io.ui import say


def write_outputs(values: Mapping[str, str], environ: Mapping[str, str] | None = None) -> None:
    """Append ``values`` to ``$GITHUB_OUTPUT`` when the step has one; always log them."""
    append_outputs(steps.output_lines(values), values, environ)


def reviewed_run(
    *,
    out: Path,
    workflow: str = "plan.yml",
    forge: Any = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The run whose plan artifacts are the reviewed plans of this event: ``run_id`` (for
    ``actions/download-artifact``'s ``run-id``) and ``compare`` (``true``: plan and apply
    with ``--reviewed OUT``) in ``$GITHUB_OUTPUT``; ``OUT`` is created, empty.

    - ``merge_group``: the last successful ``pull_request`` run of ``workflow`` at the head
      of the pull request the group was made for; none is an error (the check fails: plan
      the pull request, then queue it again);
    - ``push`` (the apply after a merge): the merge group's successful run at this commit
      (a merge through the queue); else the merged pull request's last successful run at
      its head; a commit of no pull request (a direct push), or of one without such a
      run, compares nothing (``compare=false``, a warning says so).
    """
    env = os.environ if environ is None else environ
    if forge is None:
        from tooling.io.forge import Forge

        forge = Forge.from_env()
    out.mkdir(parents=True, exist_ok=True)
    name = env.get("GITHUB_EVENT_NAME", "")
    event = _event(env)
    run_id: int | None = None
    compare = True
    if name == "merge_group":
        group = event.get("merge_group")
        head_ref = str(group.get("head_ref") or "") if isinstance(group, dict) else ""
        number = steps.queued_pull(head_ref)
        if number is None:
            raise ToolingError(
                f"merge group branch {head_ref!r} names no pull request "
                "(expected gh-readonly-queue/<base>/pr-<number>-<sha>)"
            )
        head = _pull_head(forge, number)
        run_id = forge.last_successful_run_id(workflow, event="pull_request", head_sha=head)
        if run_id is None:
            raise ToolingError(
                f"pull request #{number} has no successful {workflow} run at its head "
                f"{head[:12]}: its plan is what the queue compares with; push to plan it, "
                "then queue it again"
            )
        say(f"reviewed plans: {workflow} run {run_id} of pull request #{number} at {head[:12]}")
    elif name == "push":
        sha = env.get("GITHUB_SHA", "")
        run_id = forge.last_successful_run_id(workflow, event="merge_group", head_sha=sha)
        if run_id is not None:
            say(f"reviewed plans: the merge group's {workflow} run {run_id} at {sha[:12]}")
        else:
            merged = [p for p in forge.pulls_of_commit(sha) if p.get("merged_at")]
            if not merged:
                compare = False
                say(f"{sha[:12]} is no pull request's merge: no reviewed plan to compare with")
            else:
                number = int(merged[0]["number"])
                head = _pull_head(forge, number)
                run_id = forge.last_successful_run_id(workflow, event="pull_request", head_sha=head)
                compare = run_id is not None
                say(
                    f"reviewed plans: {workflow} run {run_id} of pull request #{number}"
                    if run_id is not None
                    else f"::warning::pull request #{number} has no successful {workflow} run "
                    f"at its head {head[:12]}: no reviewed plan to compare with (gates as planned)"
                )
    else:
        raise UsageError(
            f"reviewed-run runs on merge_group and push events, not {name or 'no event'!r}"
        )
    outputs = {"run_id": str(run_id or ""), "compare": "true" if compare else "false"}
    write_outputs(outputs)
    return outputs


def _pull_head(forge: Any, number: int) -> str:
    pull = forge.get_pull(number)
    head = pull.get("head") if isinstance(pull, dict) else None
    sha = head.get("sha") if isinstance(head, dict) else None
    if not steps.is_commit(sha if isinstance(sha, str) else None):
        raise ToolingError(f"pull request #{number}: GitHub's answer names no head commit")
    return str(sha)


def reviewed_check(*, plans: Path, plan_result: str) -> int:
    """The merge group's required check: 1 (naming each unit and what differs) when a
    unit's plan differs from its pull request's reviewed plan, or the plan legs did not
    all succeed; else 0. ``plans``: the run's plan folders (``plan-<leg>/``), or one."""
    folders = (
        [plans]
        if (plans / "summary.json").exists()
        else sorted(p for p in plans.iterdir() if p.is_dir() and not p.is_symlink())
        if plans.is_dir()
        else []
    )
    failed: list[str] = []
    for folder in folders:
        try:
            summary = planfolder.read_summary(folder / planfolder.SUMMARY)
        except ToolingError as exc:
            failed.append(str(exc))
            continue
        failed += [f"{unit}: {reason}" for unit, reason in steps.reviewed_differences(summary)]
    if plan_result not in ("success", "skipped", ""):
        failed.append(f"the plan job's result is {plan_result}: its plans cannot be compared")
    for line in failed:
        say(f"::error::{line}")
    if failed:
        say(
            f"{len(failed)} unit(s) of this merge group differ from their pull request's "
            "reviewed plan: review the new plan (push to plan the pull request again), then queue it"
        )
        return 1
    say("every unit's plan is the one its pull request's review saw")
    return 0
