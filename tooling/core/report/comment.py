"""The reviewer report (``comment.md``) and the terminal table. Pure.

The report is the product's face on a pull request:

- a one-line verdict first: the run's totals in words (add / change / replace /
  destroy, then forget / import / move when there are any), the warning sign only
  when something is destroyed, replaced, forgotten, imported or moved;
  then the commit, the workflow run and the plan artifact as links (in
  Actions), and what the run planned against (a note when it is the embedded
  default: the sandbox module catalog with local state);
- a warnings block: every delete and replace by address (deleted units'
  destroy plans first), each replacement with the attributes that force it, then
  every forget (the resource left in place, no longer managed), import and move;
- the changes outside OpenTofu (refresh-detected drift), in their own section;
- a note naming every unit planned against a dependency's mock outputs, the
  mocked dependency, and that it is re-planned after the upstream applies;
- who approves the manual units and how, each with its gate's reasons;
- what happens next: the dependents re-planned after a unit applies;
- one table row per unit in DAG order: counts, module change, status, gate
  with its reasons;
- a collapsed Mermaid graph of the units to apply, in apply order, with gates;
- per unit a collapsed ``<details>`` with resources by action and the plan text
  in a ``diff`` fence (coloured by GitHub); units without changes on one line;
- a hidden marker so the comment is updated in place;
- a size budget (GitHub refuses comments over 65,536 characters): plan text is
  shed first, then per-resource lists of units without destroys; counts and
  warnings always stay; nothing is cut inside a code fence.

Nothing here ever reads a value from a plan: only addresses, actions and the
plan text OpenTofu already redacted. Nothing here reads a file either: each
:class:`~tooling.core.plan.results.Result` carries its gate and its plan text.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

from tooling.core.plan.planjson import ResourceChange
from tooling.core.plan.results import Result
from tooling.core.plan.status import Status
from tooling.core.plan.summary import PlannedAgainst
from tooling.core.report import review
from tooling.core.text import markdown

MARKER = "<!-- iac-tooling:plan-report -->"
BUDGET = 65_536
_SAFETY = 1_000  # room for the "left out" note
_ICON = {
    "changes": "changes",
    "no-changes": "no changes",
    "error": "**error**",
    "withheld": "withheld",
    "blocked": "**blocked**",
    "not-planned": "not planned",
    "excluded": "excluded",
}


def _counts_cell(c: Mapping[str, int]) -> tuple[str, str, str, str]:
    return (
        str(c.get("create", 0)),
        str(c.get("update", 0)),
        str(c.get("delete", 0)),
        str(c.get("replace", 0)),
    )


#: the counts that put the warning sign in the verdict (each is listed in the warnings block)
WARNED = ("delete", "replace", "forget", "import", "move")


def _state_cell(c: Mapping[str, int]) -> str:
    """``2 forget, 1 move``: what the unit does to the state alone; empty when nothing."""
    return ", ".join(f"{c[k]} {k}" for k in ("forget", "import", "move") if c.get(k))


def verdict(results: Sequence[Result]) -> str:
    """The first line: the totals in words, the units, and a sign (❌ a failure,
    ⚠️ only when something is destroyed, replaced, forgotten, imported or moved,
    ✅ otherwise)."""
    planned = [r for r in results if r.status in (Status.CHANGES, Status.NO_CHANGES, Status.ERROR)]
    changed = sum(1 for r in results if r.status == Status.CHANGES)
    errors = sum(1 for r in results if r.status == Status.ERROR)
    others = {
        s: sum(1 for r in results if r.status == s)
        for s in (Status.BLOCKED, Status.WITHHELD, Status.EXCLUDED, Status.NOT_PLANNED)
    }
    extra = "".join(f", {n} {s}" for s, n in others.items() if n)
    t = review.totals(results)
    mark = (
        "❌"
        if errors or others[Status.BLOCKED] or others[Status.NOT_PLANNED]
        else ("⚠️" if any(t[k] for k in WARNED) else "✅")
    )
    return (
        f"{mark} **Plan: {review.totals_line(results)}** · {len(planned)} unit(s) planned, "
        f"{changed} with changes, {errors} failed{extra}"
    )


def failure_lines(results: Sequence[Result]) -> list[str]:
    """Each unit whose plan failed (or never ran), with the first line of why."""
    failed = [r for r in results if r.status in (Status.ERROR, Status.BLOCKED, Status.NOT_PLANNED)]
    if not failed:
        return []
    return [
        "**❌ Failed** (nothing of these units can be applied; the reasons are in their folds):",
        "",
        *(
            f"- {markdown.code(r.path)} ({_ICON.get(r.status, r.status)}): "
            + markdown.plain(
                ((r.error or "").strip().splitlines() or ["no reason recorded"])[0][:200]
            )
            for r in failed
        ),
        "",
    ]


def _decision(r: Result) -> str:
    return r.gate.decision if r.gate is not None else "none"


def _gate_cell(r: Result) -> str:
    """``manual: touches 3 nodes/VMs: node-1, node-2, node-3``; ``auto`` and ``none`` alone."""
    if r.gate is None or r.gate.decision != "manual":
        return _decision(r)
    return "manual: " + markdown.plain("; ".join(r.gate.reasons))


def table_md(results: Sequence[Result], *, reasons: bool = True) -> str:
    """One row per unit; ``reasons=False`` leaves the gate's reasons out (a report that
    would not fit otherwise: each destroy's reason is in the warnings block). A run
    that forgets, imports or moves anything has a column saying what, per unit."""
    state = any(_state_cell(r.counts) for r in results)
    rows = [
        "| unit | tier / executor | add | change | replace | destroy "
        + ("| forget, import, move " if state else "")
        + "| module | status | gate |",
        "|---|---|--:|--:|--:|--:|" + ("---|" if state else "") + "---|---|---|",
    ]
    for r in results:
        a, u, d, x = _counts_cell(r.counts)
        change = f" ({r.change})" if r.change not in ("all", "named", "modified") else ""
        mocked = " (mock inputs)" if r.mocked_dependencies else ""
        module = review.module_change(r.source_before, r.source) or ""
        mocked += " (model error)" if r.model_error else ""
        rows.append(
            f"| {markdown.code(r.path, cell=True)}{change} | {r.tier} / {r.executor} | {a} | {u} | {x} | {d} "
            + (f"| {_state_cell(r.counts)} " if state else "")
            + f"| {module} | {_ICON.get(r.status, r.status)}{mocked} "
            f"| {_gate_cell(r) if reasons else _decision(r)} |"
        )
    return "\n".join(rows)


def _by_action(changes: Sequence[ResourceChange]) -> list[str]:
    out: list[str] = []
    known = ("delete", "replace", "forget", "forget+create", "create", "update")
    others = list(dict.fromkeys(c.action for c in changes if c.action not in (*known, "no-op")))
    for action in (*known, *others):
        items = [c for c in changes if c.action == action]
        if items:
            out.append(f"**{action}** ({len(items)}):")
            out.extend(
                f"- {markdown.code(c.address)}"
                + (
                    f" ({', '.join(c.changed_attributes)})"
                    if action == "update" and c.changed_attributes
                    else ""
                )
                for c in items
            )
    imports = [c for c in changes if c.importing]
    moves = [c for c in changes if c.moves]
    if imports:
        out.append(f"**import** ({len(imports)}):")
        out.extend(f"- {markdown.code(c.address)}" for c in imports)
    if moves:
        out.append(f"**move** ({len(moves)}):")
        out.extend(
            f"- {markdown.code(c.moved_from or '')} -> {markdown.code(c.address)}" for c in moves
        )
    return out


def _fence(text: str) -> str:
    """The plan text in a ``diff`` fence (markers in the first column: GitHub colours it)."""
    return markdown.fenced(review.diff_text(markdown.block(text).rstrip()), "diff")


def _details(r: Result, plan_text: str | None, with_resources: bool) -> str:
    # markdown is not rendered inside <summary>: emphasis there is HTML
    label = _ICON.get(r.status, r.status).replace("**", "")
    if label != _ICON.get(r.status, r.status):
        label = f"<b>{label}</b>"
    title = f"<summary><code>{html.escape(markdown.block(r.path))}</code>: {label}</summary>"
    body: list[str] = []
    if r.model_error:
        body.append(
            "**The model cannot evaluate this unit**, so apply refuses it: "
            + markdown.plain(r.model_error)
            + ". Fix it (`invoke check` names the file and line) and plan again."
        )
    if r.gate is not None and r.gate.decision != "none":
        body.append(f"Gate: **{r.gate.decision}**: " + markdown.plain("; ".join(r.gate.reasons)))
    if r.mocked_dependencies:
        body.append(_mocked_sentence(r))
    if r.source:
        body.append(
            f"Module: {review.module_change(r.source_before, r.source)} ({markdown.code(r.source)})"
        )
    if r.error:
        body.append(markdown.fenced(markdown.block(r.error), "text"))
    if r.summary is not None and with_resources and r.summary.changes:
        body.append("\n".join(_by_action(r.summary.changes)))
        if r.summary.output_changes:
            body.append(
                "**outputs changed:** " + ", ".join(f"`{o}`" for o in r.summary.output_changes)
            )
    if plan_text:
        body.append(_fence(plan_text))
    return "<details>\n" + title + "\n\n" + "\n\n".join(body) + "\n\n</details>"


def _mocked_sentence(r: Result) -> str:
    deps = ", ".join(f"`{d}`" for d in r.mocked_dependencies)
    return (
        f"Planned against the **mock outputs** of {deps} (no real outputs yet): values "
        f"that come from {'it' if len(r.mocked_dependencies) == 1 else 'them'} are "
        f"placeholders. The unit is re-planned against the real outputs after the "
        f"upstream applies; a manual unit then applies only if the re-plan makes the same "
        f"changes with the same values as this plan, else it waits for a new approval."
    )


def settings_lines(settings: PlannedAgainst | None) -> list[str]:
    """What the run planned against (``settings`` of summary.json); a note for the embedded default."""
    if settings is None:
        return []
    if settings.embedded_default:
        return [
            "> [!NOTE]",
            "> Planned on the **embedded default**: module sources from the sandbox "
            "catalog, local state under `.iac/state/`. A rehearsal of the pipeline, not "
            "a plan of real infrastructure.",
            "",
        ]
    return [f"Planned against: {settings.description.removeprefix('using ')}.", ""]


def mocked_lines(results: Sequence[Result]) -> list[str]:
    """A note naming each unit planned against mock outputs and the mocked dependency."""
    mocked = [r for r in results if r.mocked_dependencies]
    if not mocked:
        return []
    return [
        "> [!NOTE]",
        "> **Planned against mock outputs** (the upstream has no real outputs yet); "
        "each is re-planned against the real outputs after its upstream applies:",
        ">",  # a list after a paragraph needs a blank line in Markdown (GitHub does not)
        *(
            f"> - `{r.path}`: mocked " + ", ".join(f"`{d}`" for d in r.mocked_dependencies)
            for r in mocked
        ),
        "",
    ]


def render(
    results: Sequence[Result],
    *,
    head: str | None = None,
    base: str | None = None,
    settings: PlannedAgainst | None = None,
    budget: int = BUDGET,
    artifact_hint: str = "the job summary and the plan artifact (summary.json, units/*/plan.txt)",
    interrupted: bool = False,
    links: review.RunLinks | None = None,
    dependents: Sequence[tuple[str, str]] = (),
    upstreams: Mapping[str, Sequence[str]] | None = None,
    plans_dir: str | None = ".iac/plans",
    uncommitted: int = 0,
) -> str:
    """The whole comment for ``results`` (planned at commit ``head`` against the
    merge base ``base``, with ``settings``: summary.json's, what the run planned
    against), within ``budget`` characters; an ``interrupted`` run says so first.

    ``links`` (in Actions) link the commit, the run's logs and the plan artifact;
    ``dependents`` are the ``(dependent, via)`` pairs re-planned after their
    upstream applies (:class:`tooling.core.plan.affected.Dependent`); ``upstreams``
    maps each unit to the units it reads, for the apply-order graph;
    ``plans_dir`` is the folder named in the local approval command (None in CI:
    the run's plan artifact).
    ``uncommitted``: how many uncommitted changes the planned working tree held
    (plans read the working tree: the header says they are included).
    """
    texts = {r.path: r.plan_text for r in results if r.plan_text is not None}
    lines = [MARKER, verdict(results), ""]
    if interrupted:
        lines += [
            "> [!CAUTION]",
            "> **Interrupted:** the run was stopped before every unit finished planning. "
            "This plan cannot be applied; plan again.",
            "",
        ]
    if links is not None:
        lines += [
            f"Planned at {links.line()}"
            + (f", against merge base `{base[:12]}`" if base else "")
            + ".",
            "",
        ]
    elif head:
        lines.append(
            f"Planned at `{head[:12]}`"
            + (f" against merge base `{base[:12]}`" if base else "")
            + (
                f", including {uncommitted} uncommitted change(s) of the working tree"
                " (not in any commit)"
                if uncommitted
                else ""
            )
            + "."
        )
        lines.append("")
    lines += settings_lines(settings)
    lines += failure_lines(results)
    warn = review.warnings(results)
    if (
        sum(len(w) + 3 for w in warn) > budget // 2
    ):  # a warnings block must leave room for the table
        warn = review.warnings(results, per_group=max(5, (budget // 2) // (60 * max(1, len(warn)))))
    if warn:
        lines += [
            "> [!WARNING]",
            "> **Destroys and replacements:**"
            if not any(review.totals(results)[k] for k in ("forget", "import", "move"))
            else "> **Destroys, replacements, and what OpenTofu forgets, imports or moves:**",
            *(f"> {w}" for w in warn),
            "",
        ]
    drift = review.drift_lines(results)
    if drift:
        lines += [
            "**🔀 Changes outside OpenTofu** (found by the refresh before planning; the "
            "plan below is computed against them):",
            "",
            *drift,
            "",
        ]
    lines += mocked_lines(results)
    manual = [r for r in results if _decision(r) == "manual" and r.status == Status.CHANGES]
    if manual:
        lines += [
            "**Waiting for a human after merge (manual gate; each unit's reasons are in the "
            "table's gate column):** " + ", ".join(markdown.code(r.path) for r in manual),
            "",
            *(f"- {line}" for line in review.approval_lines(plans_dir)),
            "",
        ]
    after = review.next_lines(results, dependents)
    if after:
        lines += [
            "**What happens next** (dependents re-planned after their upstream applies):",
            "",
            *after,
            "",
        ]
    table_at = len(lines)
    lines += [table_md(results), ""]
    if len("\n".join(lines)) > budget - _SAFETY:  # the head must fit: gate reasons go first
        lines[table_at] = table_md(results, reasons=False)
    graph = review.apply_graph(results, upstreams or {})
    if graph and len("\n".join(lines)) + len(graph) < budget // 2:  # shed before the table
        lines += [
            "<details>",
            "<summary>Apply order (graph)</summary>",
            "",
            "```mermaid",
            graph,
            "```",
            "",
            "</details>",
            "",
        ]
    # manual units first in the details, then DAG order
    quiet = [r for r in results if r.status == Status.NO_CHANGES and not r.mocked_dependencies]
    ordered = sorted((r for r in results if r not in quiet), key=lambda r: _decision(r) != "manual")
    quiet_line = (
        [f"**No changes** ({len(quiet)}): " + ", ".join(markdown.code(r.path) for r in quiet)]
        if quiet
        else []
    )

    # each unit's block in each of its (at most four) forms, rendered once: shedding
    # re-assembles the report once per unit shed, which must not render every unit again
    blocks: dict[tuple[str, bool, bool], str] = {}

    def block(r: Result, text: bool, resources: bool) -> str:
        key = (r.path, text, resources)
        if key not in blocks:
            blocks[key] = _details(r, texts.get(r.path) if text else None, resources)
        return blocks[key]

    def assemble(text_for: set[str], resources_for: set[str]) -> str:
        parts = [*lines]
        for r in ordered:
            parts.append(block(r, r.path in text_for, r.path in resources_for))
        return "\n".join([*parts, "", *quiet_line]).rstrip() + "\n"

    all_paths = {r.path for r in results}
    with_text = set(texts)
    with_res = set(all_paths)
    doc = assemble(with_text, with_res)
    left_out: list[str] = []
    # 1. shed plan text, largest first
    for path in sorted(with_text, key=lambda p: -len(texts[p])):
        if len(doc) <= budget - _SAFETY:
            break
        with_text.discard(path)
        left_out.append(f"plan text of `{path}`")
        doc = assemble(with_text, with_res)
    # 2. shed per-resource lists of units without destroys
    for r in results:
        if len(doc) <= budget - _SAFETY:
            break
        if r.summary is not None and not r.summary.destructive and r.path in with_res:
            with_res.discard(r.path)
            left_out.append(f"resource list of `{r.path}`")
            doc = assemble(with_text, with_res)
    if left_out:
        note = (
            f"\n_Left out to stay under GitHub's {budget:,}-character limit: "
            + ", ".join(left_out[:20])
            + (f" and {len(left_out) - 20} more" if len(left_out) > 20 else "")
            + f". The full text is in {artifact_hint}._\n"
        )
        doc += note
    if len(doc) > budget:  # last resort: drop whole detail blocks, keep verdict, warnings, table
        doc = (
            "\n".join(lines).rstrip()
            + f"\n\n_Per-unit details left out (too large); see {artifact_hint}._\n"
        )
        if len(doc) > budget:
            cut = doc[: budget - 200]
            doc = (
                cut[: cut.rfind("\n")]
                + "\n\n_Report truncated at a line boundary; see the artifact._\n"
            )
    return doc


#: the statuses whose reason the console table prints under the unit
_EXPLAINED = (Status.ERROR, Status.BLOCKED, Status.EXCLUDED, Status.NOT_PLANNED)


def table(results: Sequence[Result]) -> str:
    """The per-unit table printed on the terminal, with each unit's gate (and what it
    forgets, imports or moves, when the run does any)."""
    width = max([len(r.path) for r in results] + [4])
    state = max([len(_state_cell(r.counts)) for r in results] + [0])
    if state:
        state = max(state, len("forget/import/move"))
    lines = [
        f"{'unit':<{width}}  {'tier/executor':<16} {'add':>4} {'change':>6} {'replace':>7} "
        f"{'destroy':>7}  "
        + (f"{'forget/import/move':<{state}}  " if state else "")
        + f"{'status':<11} gate"
    ]
    for r in results:
        a, u, d, x = _counts_cell(r.counts)
        lines.append(
            f"{r.path:<{width}}  {r.tier + '/' + r.executor:<16} {a:>4} {u:>6} {x:>7} {d:>7}  "
            + (f"{_state_cell(r.counts) or '-':<{state}}  " if state else "")
            + f"{r.status:<11} {_decision(r)}"
        )
        if r.error and r.status in _EXPLAINED:
            lines.append(f"{'':<{width}}    {r.error.splitlines()[0][:160]}")
    return "\n".join(lines)
