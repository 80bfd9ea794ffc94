"""The workflows' own decisions, as pure functions over plain data.

The GitHub workflows stay thin: each step calls one ``invoke`` task, and the
logic between the jobs lives here, where table tests reach it:

- :func:`checked_legs`: the matrix of ``invoke matrix``, checked against the
  routes the workflow declares (each executor on its own runner, nowhere else);
- :func:`choose_base`: the commit ``apply.yml`` plans from (the last one it
  applied, else the push's ``before``);
- :func:`combined_report`: several executors' reports as one comment within
  GitHub's size limit;
- :func:`manual_units` and :func:`apply_report`: what waits for a human after
  the auto applies, and the merged pull request's report;
- :func:`plan_statuses`, :func:`apply_statuses` and :func:`manual_statuses`: one
  commit status per executor (``iac/plan (hosted)``) that branch protection can
  require, on the pull request's head, then on the merge commit before and after
  the approval;
- :func:`output_lines`: values for ``$GITHUB_OUTPUT``.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tooling.core.apply.record import ApplyRecord
from tooling.core.plan.status import Status as PlanStatus
from tooling.core.plan.summary import Summary
from tooling.core.report import pages
from tooling.core.text import markdown
from tooling.errors import ToolingError

#: the sticky comment of a pull request's plans (the same as ``core.report.comment.MARKER``)
PLAN_MARKER = "<!-- iac-tooling:plan-report -->"
#: the comment on a merged pull request with what the merge applied
APPLY_MARKER = "<!-- iac-tooling:apply-report -->"
#: GitHub refuses comments over 65,536 characters; keep room for the framing
BUDGET = 65_536 - 2_000

_SHA = re.compile(r"[0-9a-f]{40}")
_ZERO = "0" * 40
_OUTPUT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def parse_routes(text: str) -> dict[str, list[str]]:
    """The workflow's ``ROUTES`` JSON: ``{executor: [runner labels]}``."""
    try:
        routes = json.loads(text)
    except ValueError as exc:
        raise ToolingError(
            f'--routes is not JSON ({exc}): pass e.g. \'{{"hosted": ["ubuntu-latest"]}}\''
        ) from None
    if not isinstance(routes, dict) or not all(
        isinstance(k, str) and isinstance(v, list) and v and all(isinstance(x, str) for x in v)
        for k, v in routes.items()
    ):
        raise ToolingError("--routes must map each executor to a non-empty list of runner labels")
    return routes


def checked_legs(
    doc: Mapping[str, Any], routes: Mapping[str, Sequence[str]]
) -> list[dict[str, Any]]:
    """The legs of a matrix document, refused unless each executor runs where ``routes`` says.

    LAN secrets must never reach a hosted runner and cloud plans never run on
    the LAN runner: an unknown executor, other runner labels, or an executor
    listed twice is an error.
    """
    include = doc.get("include") if isinstance(doc, Mapping) else None
    if not isinstance(include, list):
        raise ToolingError("the matrix has no 'include' list")
    seen: set[str] = set()
    for leg in include:
        executor = leg.get("executor") if isinstance(leg, Mapping) else None
        if not isinstance(executor, str) or executor not in routes:
            raise ToolingError(
                f"the matrix names executor {executor!r}, which the workflow's routes do not declare "
                f"({', '.join(routes) or 'none'}): add it to the workflow's ROUTES and policy.toml together"
            )
        if list(leg.get("runs_on") or []) != list(routes[executor]):
            raise ToolingError(
                f"executor {executor} must run on {list(routes[executor])}, not {leg.get('runs_on')!r}: "
                f"policy.toml and the workflow's ROUTES disagree"
            )
        name = leg.get("leg") or executor
        if name in seen:
            what = "leg" if leg.get("leg") else "executor"
            raise ToolingError(f"the matrix lists {what} {name} twice")
        seen.add(name)
    return [dict(leg) for leg in include]


def matrix_outputs(legs: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """``matrix`` (compact JSON) and ``any`` for the job outputs."""
    return {
        "matrix": json.dumps({"include": list(legs)}, separators=(",", ":")),
        "any": "true" if legs else "false",
    }


def output_lines(values: Mapping[str, str]) -> str:
    """``name=value`` lines for ``$GITHUB_OUTPUT``; a value must be one line."""
    lines = []
    for name, value in values.items():
        if not _OUTPUT_NAME.fullmatch(name):
            raise ToolingError(f"not a step output name: {name!r}")
        if "\n" in value or "\r" in value:
            raise ToolingError(f"step output {name} must be one line")
        lines.append(f"{name}={value}\n")
    return "".join(lines)


def is_commit(value: str | None) -> bool:
    """A full commit SHA that is not the all-zero ``before`` of a new branch."""
    return bool(value) and bool(_SHA.fullmatch(value or "")) and value != _ZERO


def choose_base(candidates: Iterable[str | None], is_ancestor: Callable[[str], bool]) -> str | None:
    """The first candidate that is a commit and an ancestor of HEAD, or None."""
    for candidate in candidates:
        if candidate is not None and is_commit(candidate) and is_ancestor(candidate):
            return candidate
    return None


def legs_of(matrix: Mapping[str, Any]) -> list[str]:
    """The executors of a matrix (``{"include": [...]}``, read and checked against its
    schema by :mod:`tooling.io.artifacts`), in order; a split executor's legs once."""
    return list(dict.fromkeys(str(leg["executor"]) for leg in matrix.get("include") or ()))


@dataclass(frozen=True)
class Section:
    """One executor's report: its ``comment.md``, or None when its plan did not finish."""

    executor: str
    text: str | None


def _section(executor: str, text: str) -> str:
    return f"### Executor `{executor}`\n\n{text}\n"


def _report_text(section: Section, run_url: str, what: str) -> str:
    if section.text is None:
        return f"**No report**: the {section.executor} {what} did not finish; see [the run]({run_url})."
    return section.text.replace(PLAN_MARKER, "").strip()


def combined_report(
    top: Sequence[str],
    sections: Sequence[Section],
    run_url: str,
    *,
    details: str,
    what: str = "plan",
) -> str:
    """``top`` lines, then one section per executor, within :data:`BUDGET`.

    Too long: each section keeps its head (verdict, warnings, table: what
    comes before the first ``<details``) and points to ``details`` (where the
    per-unit details are, ``{executor}`` filled in); still too long: a pointer
    to the run alone.
    """
    texts = [(s.executor, _report_text(s, run_url, what)) for s in sections]
    body = "\n".join([*top, *(_section(e, t) for e, t in texts)])
    if len(body) <= BUDGET:
        return body
    short = [
        _section(
            e,
            t.split("\n<details")[0]
            + f"\n\n_Per-unit details: {details.format(executor=e)} of [the run]({run_url})._",
        )
        for e, t in texts
    ]
    body = "\n".join([*top, *short])
    if len(body) <= BUDGET:
        return body
    return "\n".join([*top, f"The report is too large for a comment: see [the run]({run_url})."])


def plan_comment(head_sha: str, sections: Sequence[Section], run_url: str) -> str:
    """The one sticky comment of a pull request: every executor's plan report."""
    top = [PLAN_MARKER, f"## Infrastructure plan for `{head_sha[:12]}`", ""]
    if not sections:
        top.append("No infrastructure unit is affected by this pull request.")
    return combined_report(
        top,
        sections,
        run_url,
        details="the `{executor}` job summary and artifact `plan-{executor}`",
    )


def plan_comment_pages(head_sha: str, sections: Sequence[Section], run_url: str) -> list[str]:
    """:func:`plan_comment`, as the sticky comment and its follow-ups when it does not
    fit one (:func:`tooling.core.report.pages.paginate`): the heads first, no fold cut."""
    body = plan_comment(head_sha, sections, run_url)
    full = [(e, _report_text(s, run_url, "plan")) for s in sections for e in (s.executor,)]
    if len("\n".join([_section(e, t) for e, t in full])) + 200 <= BUDGET:
        return [body]
    top = "\n".join([PLAN_MARKER, f"## Infrastructure plan for `{head_sha[:12]}`", ""])
    return pages.paginate(
        top,
        [(f"### Executor `{e}`", t) for e, t in full],
        budget=BUDGET,
        artifact_hint=f"the plan artifacts of [the run]({run_url})",
    )


@dataclass(frozen=True)
class Waiting:
    """A unit whose plan waits for approval; ``plan_text``: the re-plan it waits with
    (made on its upstream's real outputs after they applied), the plan the approval applies."""

    executor: str
    path: str
    reasons: tuple[str, ...]
    plan_text: str | None = None


#: the most of a waiting re-plan's text the apply report shows (the artifact has it whole)
REPLAN_SHOWN = 20_000


def waiting_in_record(
    record: ApplyRecord, executor: str, texts: Mapping[str, str | None]
) -> list[Waiting]:
    """The units an apply record (apply.json) leaves waiting for approval, each with its
    reason and, when it waits with a re-plan, that re-plan's text (``texts`` by path)."""
    return [
        Waiting(executor, u.path, (u.reason,), texts.get(u.path))
        for u in record.units
        if u.result == "waiting-approval"
    ]


def manual_units(summary: Summary, executor: str = "") -> list[Waiting]:
    """The units of a ``summary.json`` whose gate is ``manual`` and whose plan changes something."""
    return [
        Waiting(executor, unit.path, unit.gate.reasons)
        for unit in summary.units
        if unit.gate is not None
        and unit.gate.decision == "manual"
        and unit.status == PlanStatus.CHANGES
    ]


def apply_report(
    sha: str,
    sections: Sequence[Section],
    waiting: Sequence[Waiting],
    *,
    apply_result: str,
    run_url: str,
) -> str:
    """The report of a merge: the auto applies' outcome, what waits, and every executor's plan."""
    ok = apply_result == "success"
    top = [APPLY_MARKER, f"## Infrastructure apply for `{sha[:12]}`", ""]
    if ok:
        top.append(f"Auto units: applied ([run]({run_url})).")
    else:
        top.append(
            f"Auto units: **the plan-and-apply job did not succeed** ({apply_result}); nothing further "
            f"is applied. See [the run]({run_url})."
        )
    lines = [
        f"- {markdown.code(w.path)} ({w.executor}): {markdown.plain('; '.join(w.reasons))}"
        for w in waiting
    ]
    for w in waiting:
        if w.plan_text is not None:
            text = w.plan_text[:REPLAN_SHOWN] + (
                "\n… (cut: the whole plan is in the apply record's artifact)"
                if len(w.plan_text) > REPLAN_SHOWN
                else ""
            )
            lines += [
                "",
                f"  <details><summary>The plan to approve for <code>{html.escape(markdown.block(w.path))}</code>: "
                "re-planned on its upstream's real outputs</summary>",
                "",
                markdown.fenced(markdown.block(text.rstrip()), "hcl"),
                "",
                "  </details>",
            ]
    if waiting and ok:
        top += [
            "",
            "**Waiting for approval in the `infra-manual` environment** (these exact plans, nothing else):",
            *lines,
        ]
    elif waiting:
        top += ["", "Manual units (not offered for approval because the auto job failed):", *lines]
    top.append("")
    return combined_report(top, sections, run_url, details="artifact `plan-{executor}`")


def manual_legs(
    legs: Sequence[Mapping[str, Any]], waiting: Sequence[Waiting]
) -> list[dict[str, Any]]:
    """The legs (executor and runner) of the manual job: the executors with waiting units;
    of a split executor, the legs (with their ``leg`` id) that hold a waiting unit."""
    executors = {w.executor for w in waiting}
    paths = {(w.executor, w.path) for w in waiting}
    return [
        {"executor": leg["executor"], "runs_on": leg["runs_on"]}
        | ({"leg": leg["leg"]} if leg.get("leg") else {})
        for leg in legs
        if leg["executor"] in executors
        and (not leg.get("leg") or any((leg["executor"], u) in paths for u in leg.get("units", ())))
    ]


#: the commit status of one executor's plan, e.g. ``iac/plan (hosted)``
STATUS_CONTEXT = "iac/plan ({executor})"
_FAILED = ("error", "blocked", "not-planned")


@dataclass(frozen=True)
class Status:
    """One commit status: its context, state and (at most 140 characters) description."""

    context: str
    state: str  # success | failure | pending
    description: str


def _status(executor: str, state: str, description: str) -> Status:
    text = description if len(description) <= 140 else description[:139] + "…"
    return Status(STATUS_CONTEXT.format(executor=executor), state, text)


#: the description of an executor none of whose units a pull request affects
NOT_AFFECTED = "no units affected"


def plan_statuses(
    legs: Mapping[str, Summary | None], configured: Sequence[str] = ()
) -> list[Status]:
    """Per executor (``legs``: its summary.json, None when its plan did not finish): failure
    when a unit failed to plan or the leg did not finish, success otherwise. Every
    ``configured`` executor without a leg gets success, "no units affected", so a branch
    protection rule that requires its status never waits for a plan that never runs."""
    out = [_status(e, "success", NOT_AFFECTED) for e in configured if e not in legs]
    for executor, summary in legs.items():
        if summary is None:
            out.append(_status(executor, "failure", "the plan did not finish: see the run"))
            continue
        units = summary.units
        failed = [u.path for u in units if u.status in _FAILED]
        if failed or summary.interrupted:
            why = f"{len(failed)} unit(s) failed to plan: {', '.join(failed)}" if failed else ""
            out.append(_status(executor, "failure", why or "the plan was interrupted"))
            continue
        changed = sum(1 for u in units if u.status == PlanStatus.CHANGES)
        manual = len(manual_units(summary))
        out.append(
            _status(
                executor,
                "success",
                f"{len(units)} unit(s) planned, {changed} with changes"
                + (f", {manual} to approve after merge" if manual else ""),
            )
        )
    return out


def apply_statuses(
    executors: Sequence[str], waiting: Sequence[Waiting], *, apply_result: str
) -> list[Status]:
    """Per executor after a merge: failure when the auto applies failed, pending
    ("waiting for approval") while manual units wait, success when all is applied."""
    out = []
    for executor in executors:
        held = [w.path for w in waiting if w.executor == executor]
        if apply_result != "success":
            out.append(
                _status(executor, "failure", f"the auto applies did not succeed ({apply_result})")
            )
        elif held:
            out.append(
                _status(
                    executor,
                    "pending",
                    f"waiting for approval in infra-manual: {', '.join(held)}",
                )
            )
        else:
            out.append(_status(executor, "success", "applied"))
    return out


#: the apply results after which a unit needs nothing more
_DONE = ("applied", "no-changes")


def manual_statuses(records: Mapping[str, ApplyRecord | None], *, result: str) -> list[Status]:
    """Per executor offered to the approval job, once it ended (``records``: its apply
    record, None when the leg left none; ``result``: the job's result). Success when
    every unit is applied or has nothing to do; failure otherwise, naming the units,
    so the merge commit's status never stays "waiting for approval"."""
    out = []
    for executor, record in records.items():
        if record is None:
            out.append(
                _status(
                    executor,
                    "failure",
                    f"the approval job left no apply record ({result}): rejected, "
                    "cancelled or failed before applying; see the run",
                )
            )
            continue
        units = record.units
        left = [f"{u.path} {u.result}" for u in units if u.result not in _DONE]
        if left or record.interrupted:
            why = f"not applied after approval: {', '.join(left)}" if left else ""
            out.append(_status(executor, "failure", why or "the approved apply was interrupted"))
            continue
        applied = sum(1 for u in units if u.result == "applied")
        out.append(_status(executor, "success", f"applied after approval: {applied} unit(s)"))
    return out


#: the branch GitHub's merge queue makes for a merge group: ``gh-readonly-queue/<base>/pr-<N>-<sha>``
_QUEUE_REF = re.compile(
    r"(?:refs/heads/)?gh-readonly-queue/.+/pr-(?P<number>[0-9]{1,9})-[0-9a-f]{40}"
)


def queued_pull(head_ref: str) -> int | None:
    """The pull request a merge group's branch (``merge_group.head_ref``) was made for:
    the last one in the group (its commit holds the ones queued before it)."""
    match = _QUEUE_REF.fullmatch(head_ref)
    return int(match["number"]) if match else None


def reviewed_differences(summary: Summary) -> list[tuple[str, str]]:
    """``(unit, reason)`` of each unit of a plan folder's summary.json whose gate says
    its plan differs from the reviewed plan (``plan --reviewed``)."""
    from tooling.core.apply.approval import DIFFERS

    return [
        (unit.path, reason)
        for unit in summary.units
        if unit.gate is not None
        for reason in unit.gate.reasons
        if reason.startswith(DIFFERS)
    ]
