"""The reviewer report (``comment.md``) and the terminal table. Pure.

The report is the product's face on a pull request:

- a one-line verdict first, then what the run planned against (a note when it
  is the embedded default: the sandbox module catalog with local state);
- a warnings block: every delete and replace by address (deleted units'
  destroy plans first) and every resource changed outside OpenTofu;
- a note naming every unit planned against a dependency's mock outputs, the
  mocked dependency, and that it is re-planned after the upstream applies;
- one table row per unit in DAG order, with its gate;
- per unit a collapsed ``<details>`` with resources by action and the plan text;
- a hidden marker so the comment is updated in place;
- a size budget (GitHub refuses comments over 65,536 characters): plan text is
  shed first, then per-resource lists of units without destroys; counts and
  warnings always stay; nothing is cut inside a code fence.

Nothing here ever reads a value from a plan: only addresses, actions and the
plan text OpenTofu already redacted. Nothing here reads a file either: each
:class:`~tooling.core.results.Result` carries its gate and its plan text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tooling.core.planjson import ResourceChange, reason_text
from tooling.core.results import Result

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


def verdict(results: Sequence[Result]) -> str:
    planned = [r for r in results if r.status in ("changes", "no-changes", "error")]
    changed = sum(1 for r in results if r.status == "changes")
    errors = sum(1 for r in results if r.status == "error")
    others = {
        s: sum(1 for r in results if r.status == s)
        for s in ("blocked", "withheld", "excluded", "not-planned")
    }
    extra = "".join(f", {n} {s}" for s, n in others.items() if n)
    mark = (
        "❌" if errors or others["blocked"] or others["not-planned"] else ("⚠️" if changed else "✅")
    )
    return f"{mark} **Plan:** {len(planned)} unit(s) planned, {changed} with changes, {errors} error(s){extra}"


def warnings(results: Sequence[Result], per_group: int | None = None) -> list[str]:
    """Every delete, replace and drift by address, one line per unit, action and reason.

    Deleted units' destroy plans come first. ``per_group`` caps the addresses
    listed per line (the rest is counted, never hidden silently); the report
    uses it only when the full list would not fit.
    """
    lines: list[str] = []
    ordered = sorted(results, key=lambda r: not r.destroy)  # destroy plans of deleted units first
    for r in ordered:
        if r.summary is None:
            continue
        groups: dict[tuple[str, str | None], list[str]] = {}
        for c in r.summary.destructive:
            label = (
                "🗑️ **destroy** (unit deleted)"
                if r.destroy
                else ("♻️ **replace**" if c.action == "replace" else "🗑️ **delete**")
            )
            groups.setdefault((label, reason_text(c.reason) if not r.destroy else None), []).append(
                c.address
            )
        for d in r.summary.drift:
            groups.setdefault(("🔀 **changed outside OpenTofu**", d.action), []).append(d.address)
        for (label, why), addresses in groups.items():
            shown = addresses if per_group is None else addresses[:per_group]
            listed = ", ".join(f"`{a}`" for a in shown)
            if len(shown) < len(addresses):
                listed += f" … and {len(addresses) - len(shown)} more (all in the unit's plan text)"
            lines.append(
                f"- {label} in `{r.path}` ({len(addresses)}): {listed}"
                + (f". Why: {why}" if why else "")
            )
    return lines


def _decision(r: Result) -> str:
    return r.gate.decision if r.gate is not None else "none"


def table_md(results: Sequence[Result]) -> str:
    rows = [
        "| unit | tier / executor | + | ~ | - | ± | status | gate |",
        "|---|---|--:|--:|--:|--:|---|---|",
    ]
    for r in results:
        a, u, d, x = _counts_cell(r.counts)
        change = f" ({r.change})" if r.change not in ("all", "named", "modified") else ""
        mocked = " (mock inputs)" if r.mocked_dependencies else ""
        mocked += " (model error)" if r.model_error else ""
        rows.append(
            f"| `{r.path}`{change} | {r.tier} / {r.executor} | {a} | {u} | {d} | {x} | {_ICON.get(r.status, r.status)}{mocked} | {_decision(r)} |"
        )
    return "\n".join(rows)


def _by_action(changes: Sequence[ResourceChange]) -> list[str]:
    out: list[str] = []
    for action in ("delete", "replace", "create", "update"):
        items = [c for c in changes if c.action == action]
        if items:
            out.append(f"**{action}** ({len(items)}):")
            out.extend(
                f"- `{c.address}`"
                + (
                    f" ({', '.join(c.changed_attributes)})"
                    if action == "update" and c.changed_attributes
                    else ""
                )
                for c in items
            )
    imports = [c for c in changes if c.importing]
    moves = [c for c in changes if c.moved_from and c.moved_from != c.address]
    if imports:
        out.append(f"**import** ({len(imports)}):")
        out.extend(f"- `{c.address}`" for c in imports)
    if moves:
        out.append(f"**move** ({len(moves)}):")
        out.extend(f"- `{c.moved_from}` -> `{c.address}`" for c in moves)
    return out


def _fence(text: str) -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}hcl\n{text.rstrip()}\n{fence}"


def _details(r: Result, plan_text: str | None, with_resources: bool) -> str:
    title = f"<summary><code>{r.path}</code>: {_ICON.get(r.status, r.status)}</summary>"
    body: list[str] = []
    if r.model_error:
        body.append(
            "**The model cannot evaluate this unit**, so apply refuses it: "
            + r.model_error.replace("`", "'")
            + ". Fix it (`invoke check` names the file and line) and plan again."
        )
    if r.gate is not None and r.gate.decision != "none":
        body.append(f"Gate: **{r.gate.decision}**: " + "; ".join(r.gate.reasons))
    if r.mocked_dependencies:
        body.append(_mocked_sentence(r))
    if r.source:
        body.append(f"Module: `{r.source}`")
    if r.error:
        body.append("```text\n" + r.error.replace("```", "'''") + "\n```")
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


def settings_lines(settings: Mapping[str, Any] | None) -> list[str]:
    """What the run planned against (``settings`` of summary.json); a note for the embedded default."""
    if not settings:
        return []
    if settings.get("embedded_default"):
        return [
            "> [!NOTE]",
            "> Planned on the **embedded default**: module sources from the sandbox "
            "catalog, local state under `.iac/state/`. A rehearsal of the pipeline, not "
            "a plan of real infrastructure.",
            "",
        ]
    return [f"Planned against: {str(settings.get('description', '')).removeprefix('using ')}.", ""]


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
    settings: Mapping[str, Any] | None = None,
    budget: int = BUDGET,
    artifact_hint: str = "the job summary and the plan artifact (summary.json, units/*/plan.txt)",
    interrupted: bool = False,
) -> str:
    """The whole comment for ``results`` (planned at commit ``head`` against the
    merge base ``base``, with ``settings``: summary.json's, what the run planned
    against), within ``budget`` characters; an ``interrupted`` run says so first."""
    texts = {r.path: r.plan_text for r in results if r.plan_text is not None}
    lines = [MARKER, verdict(results), ""]
    if interrupted:
        lines += [
            "> [!CAUTION]",
            "> **Interrupted:** the run was stopped before every unit finished planning. "
            "This plan cannot be applied; plan again.",
            "",
        ]
    lines += settings_lines(settings)
    if head:
        lines.append(
            f"Planned at `{head[:12]}`"
            + (f" against merge base `{base[:12]}`" if base else "")
            + "."
        )
        lines.append("")
    warn = warnings(results)
    if (
        sum(len(w) + 3 for w in warn) > budget // 2
    ):  # a warnings block must leave room for the table
        warn = warnings(results, per_group=max(5, (budget // 2) // (60 * max(1, len(warn)))))
    if warn:
        lines += [
            "> [!WARNING]",
            "> **Destroys, replacements and drift:**",
            *(f"> {w}" for w in warn),
            "",
        ]
    lines += mocked_lines(results)
    manual = [r for r in results if _decision(r) == "manual"]
    if manual:
        lines.append(
            "**Waiting for a human after merge (manual gate):** "
            + ", ".join(f"`{r.path}`" for r in manual)
        )
        lines.append("")
    lines += [table_md(results), ""]
    # manual units first in the details, then DAG order
    ordered = sorted(results, key=lambda r: _decision(r) != "manual")

    def assemble(text_for: set[str], resources_for: set[str]) -> str:
        parts = [*lines]
        for r in ordered:
            parts.append(
                _details(
                    r,
                    texts.get(r.path) if r.path in text_for else None,
                    r.path in resources_for,
                )
            )
        return "\n".join(parts).rstrip() + "\n"

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


def table(results: Sequence[Result]) -> str:
    """The per-unit table printed on the terminal."""
    width = max([len(r.path) for r in results] + [4])
    lines = [
        f"{'unit':<{width}}  {'tier/executor':<16} {'+':>3} {'~':>3} {'-':>3} {'±':>3}  status"
    ]
    for r in results:
        a, u, d, x = _counts_cell(r.counts)
        lines.append(
            f"{r.path:<{width}}  {r.tier + '/' + r.executor:<16} {a:>3} {u:>3} {d:>3} {x:>3}  {r.status}"
        )
        if r.error and r.status in ("error", "blocked", "excluded", "not-planned"):
            lines.append(f"{'':<{width}}    {r.error.splitlines()[0][:160]}")
    return "\n".join(lines)
