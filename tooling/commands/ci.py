"""The workflows' steps between the plan and apply tasks: routing, base, reports.

Each function is one ``run:`` step of ``.github/workflows/*.yml`` (one
``invoke`` task each, see docs/pipelines.md); the decisions are the pure
functions of :mod:`tooling.core.ci.steps`. Values for later jobs go to
``$GITHUB_OUTPUT`` (when set), reports to ``$GITHUB_STEP_SUMMARY``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from tooling.core.apply.record import ApplyRecord
from tooling.core.ci import legs, steps
from tooling.core.ci.legs import leg_names
from tooling.core.plan.summary import Summary
from tooling.core.report import pages
from tooling.engine.ci.matrix import matrix as affected_matrix
from tooling.engine.plan import planfolder, store
from tooling.errors import ToolingError, UsageError
from tooling.io import artifacts, git, outdir
from tooling.io.actions import append_outputs
from tooling.io.actions import event as _event
from tooling.io.actions import run_url as _run_url
from tooling.io.ui import say
from tooling.io.workspace import Workspace

T = TypeVar("T")


def write_outputs(values: Mapping[str, str], environ: Mapping[str, str] | None = None) -> None:
    """Append ``values`` to ``$GITHUB_OUTPUT`` when the step has one; always log them."""
    append_outputs(steps.output_lines(values), values, environ)


def checked_matrix(
    ws: Workspace,
    *,
    base: str | None,
    routes: str,
    check_runners: bool = False,
    max_legs: int | None = None,
    timings: Path | None = None,
) -> dict[str, Any]:
    """``invoke matrix --routes JSON``: the matrix, refused unless every leg runs where the routes say.

    With ``check_runners``, a self-hosted leg without an online runner is not
    dispatched (it would wait in GitHub's queue for a day): it goes to the
    ``unavailable`` output (``{"include": [{"executor", "message"}]}``) for a
    hosted job that fails with its message; the other legs go on.
    """
    doc = affected_matrix(ws, base=base, max_legs=max_legs, timings=timings)
    legs = steps.checked_legs(doc, steps.parse_routes(routes))
    missing: list[dict[str, Any]] = []
    if check_runners:
        from tooling.engine.ci import runners

        missing = runners.unavailable_legs(ws, legs)
        for leg in missing:
            say(f"::error::{leg['message']}")
        gone = {leg["executor"] for leg in missing}
        legs = [leg for leg in legs if leg["executor"] not in gone]
    outputs = steps.matrix_outputs(legs)
    if check_runners:
        outputs["unavailable"] = json.dumps({"include": missing}, separators=(",", ":"))
        outputs["any_unavailable"] = "true" if missing else "false"
    write_outputs(outputs)
    return {"include": legs}


def apply_base(
    ws: Workspace,
    *,
    before: str = "",
    workflow: str = "apply.yml",
    branch: str = "main",
    forge: Any = None,
) -> str:
    """The commit ``apply.yml`` plans from: the head of its last successful run on
    ``branch``, else the push's ``before``, each only if it is an ancestor of
    HEAD; else ``HEAD^``. Writes ``base`` to ``$GITHUB_OUTPUT``."""
    if forge is None:
        from tooling.io.forge import Forge

        forge = Forge.from_env()
    last = forge.last_successful_run_sha(workflow, branch)
    say(f"last successful {workflow} run on {branch}: {last or 'none'}")

    def is_ancestor(sha: str) -> bool:
        return (
            git.git(
                ws.root, "merge-base", "--is-ancestor", sha, "HEAD", ok_codes=(0, 1, 128)
            ).returncode
            == 0
        )

    base = steps.choose_base([last, before], is_ancestor)
    if base is None:
        parent = git.git(ws.root, "rev-parse", "--verify", "--quiet", "HEAD^", ok_codes=(0, 1))
        if parent.returncode != 0:
            raise ToolingError(
                "no base to plan from: no successful run, no usable `before`, and HEAD has no parent. "
                "Check out the full history (actions/checkout with fetch-depth: 0)."
            )
        base = parent.stdout.strip()
    head = git.rev_parse(ws.root, "HEAD")
    say(f"planning the changes from {base} to {head}")
    write_outputs({"base": base})
    return base


def _sections(plans: Path, executors: list[str]) -> list[steps.Section]:
    sections = []
    for executor in executors:
        report = plans / f"plan-{executor}" / "comment.md"
        sections.append(
            steps.Section(
                executor, report.read_text(encoding="utf-8") if report.is_file() else None
            )
        )
    return sections


def _waiting_in(folder: Path, executor: str) -> list[steps.Waiting]:
    """The units an auto apply's record (``folder/apply.json``, an artifact) leaves
    waiting, with the text of each re-plan it names inside ``folder/cascade/``."""
    record = planfolder.read_record(folder / planfolder.RECORD)
    texts: dict[str, str | None] = {}
    for unit in record.units:
        try:
            plan = unit.waiting()
        except ValueError as exc:
            say(f"::error::{folder / planfolder.RECORD}: {unit.path}: {exc}")
            continue
        if plan is not None:
            texts[unit.path] = store.text(folder, plan.text_file)
    return steps.waiting_in_record(record, executor, texts)


def _matrix(text: str, *, empty: bool = True) -> dict[str, Any]:
    """``--matrix``: the matrix job's output (``{"include": [...]}``; an empty text is no
    leg where ``empty``), read as any artifact is (:mod:`tooling.io.artifacts`), before
    anything is built from it."""
    if empty and not text.strip():
        text = '{"include": []}'
    doc: dict[str, Any] = artifacts.parse(text, artifacts.MATRIX, source="--matrix")
    if "include" not in doc:
        raise UsageError('--matrix must be the matrix job\'s `matrix` output ({"include": [...]})')
    return doc


def _summaries(plans: Path, executors: list[str]) -> dict[str, Summary | None]:
    """Each leg's summary.json (``plan-<leg>/``; None when the leg left none, or it is
    refused)."""
    return {
        executor: _read_or_none(
            plans / f"plan-{executor}" / planfolder.SUMMARY, planfolder.read_summary
        )
        for executor in executors
    }


def _records(folders: Path, names: list[str]) -> dict[str, ApplyRecord | None]:
    """Each leg's apply record (``apply-manual-<leg>/apply.json``; None when the leg left
    none, or it is refused)."""
    return {
        name: _read_or_none(
            folders / f"apply-manual-{name}" / planfolder.RECORD, planfolder.read_record
        )
        for name in names
    }


def _read_or_none(path: Path, read: Callable[[Path], T]) -> T | None:
    """The document at ``path`` read by ``read``; None when there is none, or it is
    refused (said as an error line)."""
    if not path.exists():
        return None
    try:
        return read(path)
    except ToolingError as exc:
        say(f"::error::{exc}")
        return None


def _merge_legs(plans: Path, doc: Mapping[str, Any]) -> None:
    """A split executor's ``plan-<leg>`` folders merged into ``plan-<executor>`` first."""
    if any(e.get("leg") for e in doc["include"]):
        from tooling.engine.ci.legs import merge_matrix

        merge_matrix(Path.cwd(), plans, doc)


def _set_statuses(forge: Any, sha: str, statuses: list[steps.Status], run_url: str) -> None:
    """One commit status per executor on ``sha`` (skipped without a full SHA)."""
    if len(sha) != 40:
        say("no commit SHA: no commit status set")
        return
    for status in statuses:
        forge.set_status(sha, status.state, status.context, status.description, run_url)
        say(f"commit status {status.context}: {status.state} ({status.description})")


def _upsert_own_comment(
    forge: Any, number: int, marker: str, body: str, *, create: bool
) -> tuple[int | None, str]:
    """Update the oldest comment a bot posted that starts with ``marker``; else create one
    (only if ``create``). A person's comment that copies the marker is left alone."""
    for existing in forge.list_comments(number):
        user = existing.get("user") or {}
        if user.get("type") == "Bot" and (existing.get("body") or "").startswith(marker):
            forge.update_comment(int(existing["id"]), body)
            return int(existing["id"]), "updated"
    if not create:
        return None, "skipped"
    created = forge.comment(number, body)
    return int(created["id"]), "posted"


def _upsert_pages(
    forge: Any, number: int, bodies: list[str], *, create: bool
) -> tuple[int | None, str]:
    """The sticky comment (``bodies[0]``) and its follow-ups, each edited in place by its
    marker; a follow-up an earlier, longer report left is edited to say it is unused."""
    comment_id, action = _upsert_own_comment(
        forge, number, steps.PLAN_MARKER, bodies[0], create=create
    )
    parts: dict[int, int] = {}
    for existing in forge.list_comments(number):
        n = pages.part_number(existing.get("body") or "")
        if n is not None and (existing.get("user") or {}).get("type") == "Bot":
            parts.setdefault(n, int(existing["id"]))
    for n, body in enumerate(bodies[1:], 2):
        if n in parts:
            forge.update_comment(parts[n], body)
        else:
            forge.comment(number, body)
    for n, old in parts.items():
        if n > len(bodies):
            forge.update_comment(old, pages.retired(n))
    return comment_id, action


def plan_comment(
    *,
    plans: Path,
    matrix: str,
    configured: Sequence[str] = (),
    forge: Any = None,
    environ: Mapping[str, str] | None = None,
) -> int:
    """Upsert the pull request's one sticky comment with every executor's plan report,
    and set one commit status per executor on the pull request's head.

    ``plans`` holds one ``plan-<executor>`` folder per leg (the downloaded
    artifacts); ``matrix`` is the matrix job's output; ``configured`` the
    executors policy.toml declares (each without a leg gets success, "no units
    affected"). A leg without its report gets a "No report" section. With no
    affected executor, an existing comment is updated to say so and none is created.
    """
    env = os.environ if environ is None else environ
    doc = _matrix(matrix)
    executors = steps.legs_of(doc)
    _merge_legs(plans, doc)
    event = _event(env)
    head_sha = str(
        ((event.get("pull_request") or {}).get("head") or {}).get("sha")
        or env.get("GITHUB_SHA", "")
    )
    bodies = steps.plan_comment_pages(head_sha, _sections(plans, executors), _run_url(env))
    if forge is None:
        from tooling.io.forge import Forge

        forge = Forge.from_env(env)
    if forge.pr_number is None:
        raise UsageError(
            "plan-comment needs a pull request: run it from a pull_request workflow (or set IAC_PR_NUMBER)"
        )
    comment_id, action = _upsert_pages(forge, forge.pr_number, bodies, create=bool(executors))
    statuses = steps.plan_statuses(_summaries(plans, executors), configured)
    _set_statuses(forge, head_sha, statuses, _run_url(env))
    if comment_id is None:
        say("no unit affected and no earlier plan comment: nothing to post")
    else:
        say(
            f"{action} the plan comment {comment_id} on #{forge.pr_number}"
            + (f" and {len(bodies) - 1} follow-up(s)" if len(bodies) > 1 else "")
        )
    return 0


def apply_report(
    *,
    plans: Path,
    matrix: str,
    apply_result: str,
    forge: Any = None,
    environ: Mapping[str, str] | None = None,
) -> int:
    """After the auto applies: the job summary, the comment on the merged pull
    request, and the outputs ``manual_matrix``/``manual_any`` of the manual job.

    ``plans`` holds the ``plan-<executor>`` folders the auto legs uploaded.
    """
    env = os.environ if environ is None else environ
    doc = _matrix(matrix, empty=False)
    legs = doc["include"]
    executors = steps.legs_of(doc)
    _merge_legs(plans, doc)
    sections = _sections(plans, executors)
    waiting: list[steps.Waiting] = []
    for executor, names in leg_names(legs).items():
        records = [plans / f"apply-auto-{name}" for name in names]
        if all((r / "apply.json").exists() for r in records):
            # what the auto apply left waiting, re-plans included: the approval's plans
            for folder in records:
                waiting += _waiting_in(folder, executor)
            continue
        summary = plans / f"plan-{executor}" / planfolder.SUMMARY
        if summary.exists():
            waiting += steps.manual_units(planfolder.read_summary(summary), executor)
    sha = env.get("GITHUB_SHA", "")
    body = steps.apply_report(
        sha, sections, waiting, apply_result=apply_result, run_url=_run_url(env)
    )
    outdir.job_summary(body.replace(steps.APPLY_MARKER, ""), env)
    offered = steps.manual_legs(legs, waiting) if apply_result == "success" else []
    write_outputs(
        {
            "manual_matrix": json.dumps({"include": offered}, separators=(",", ":")),
            "manual_any": "true" if offered else "false",
        },
        env,
    )
    if forge is None:
        from tooling.io.forge import Forge

        forge = Forge.from_env(env)
    _set_statuses(
        forge,
        sha,
        steps.apply_statuses(executors, waiting, apply_result=apply_result),
        _run_url(env),
    )
    merged = [p for p in forge.pulls_of_commit(sha) if p.get("merged_at")] if sha else []
    if not merged:
        say(
            f"no merged pull request for {sha or 'this commit'}: the report is in the job summary only"
        )
        return 0
    number = int(merged[0]["number"])
    comment_id, action = _upsert_own_comment(forge, number, steps.APPLY_MARKER, body, create=True)
    say(f"{action} the apply report {comment_id} on #{number}")
    return 0


def manual_status(
    *,
    records: Path,
    matrix: str,
    result: str,
    forge: Any = None,
    environ: Mapping[str, str] | None = None,
) -> int:
    """After the approval job: the merge commit's status per executor it applied
    (``matrix``: the report job's ``manual_matrix``) moves from "waiting for
    approval" to success or failure, from each leg's record in
    ``records/apply-manual-<executor>/apply.json``."""
    env = os.environ if environ is None else environ
    include = _matrix(matrix)["include"]
    names = [n for ns in legs.leg_names(include).values() for n in ns]
    docs = legs.per_executor(include, _records(records, names))
    if forge is None:
        from tooling.io.forge import Forge

        forge = Forge.from_env(env)
    statuses = steps.manual_statuses(docs, result=result)
    _set_statuses(forge, env.get("GITHUB_SHA", ""), statuses, _run_url(env))
    return 0


def manual_gate(*, plans: Path) -> bool:
    """Whether the plan in ``plans`` waits for a human; writes ``manual`` to ``$GITHUB_OUTPUT``."""
    summary = plans / planfolder.SUMMARY
    if not summary.exists():
        raise ToolingError(f"{summary} not found: pass the folder the plan wrote (--plans)")
    waiting = steps.manual_units(planfolder.read_summary(summary))
    for unit in waiting:
        say(f"{unit.path} waits for approval: {'; '.join(unit.reasons)}")
    write_outputs({"manual": "true" if waiting else "false"})
    return bool(waiting)
