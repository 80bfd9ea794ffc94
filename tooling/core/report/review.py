"""The reviewer's page, piece by piece: what :mod:`tooling.core.report.comment` puts outside the folds. Pure.

- :func:`totals_line`: the run's totals in words (add / change / replace / destroy, and
  forget / import / move when the plan does any);
- :func:`warnings`: every destroy and replacement, then every forget, import and move, by
  unit (the warnings block), and :func:`drift_lines`: the changes outside OpenTofu;
- :func:`module_change`: a unit's module as ``terraform-proxmox v1.1.0 → v1.2.0``;
- :func:`replace_why`: the attributes that force a replacement (``replace_paths``);
- :func:`approval_lines`: who approves a manual unit, and how (CI and locally), and
  :func:`waiting_lines`: the same, as ``invoke apply`` prints it for the units it leaves;
- :func:`next_lines`: the dependents re-planned after a unit applies, with their trigger;
- :class:`RunLinks`: the commit, the workflow run and its artifacts, from Actions' variables;
- :func:`diff_text`: OpenTofu's plan text with its markers in the first column (```diff);
- :func:`apply_graph`: a Mermaid graph of the planned units in apply order, with gates;
- :func:`code` and :func:`plain`: a name (unit path, resource address) or a text (gate
  reason, error line) that can hold any character, as inline Markdown that cannot
  open HTML (``<!--``, ``</details>``), end its code span early or split a table row.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tooling.core.apply.record import UnitApply
from tooling.core.plan.planjson import ResourceChange, reason_text
from tooling.core.plan.results import Result
from tooling.core.plan.status import Status
from tooling.core.text.markdown import code
from tooling.core.text.terminal import escape
from tooling.model.sources import parse_source

#: the GitHub environment the apply workflow's manual job waits in
APPROVAL_ENVIRONMENT = "infra-manual"
_TOTALS = (("create", "to add"), ("update", "to change"), ("replace", "to replace"))
#: what OpenTofu does to the state alone, named in the totals when the run does it
_STATE_TOTALS = (("forget", "to forget"), ("import", "to import"), ("move", "to move"))


def totals(results: Sequence[Result]) -> dict[str, int]:
    """The run's resource counts, summed over units (``delete`` counts every destroy;
    ``forget``, ``import`` and ``move`` what OpenTofu does to the state alone)."""
    out = dict.fromkeys(("create", "update", "replace", "delete", "forget", "import", "move"), 0)
    for r in results:
        for key in out:
            out[key] += int(r.counts.get(key, 0))
    return out


def totals_line(results: Sequence[Result]) -> str:
    """``3 to add, 2 to change, 1 to replace, 1 to destroy``, then ``2 to forget``, ``1 to
    import``, ``1 to move`` when the run does any (``no resource changes`` when all zero)."""
    t = totals(results)
    words = [f"{t[key]} {word}" for key, word in _TOTALS] + [f"{t['delete']} to destroy"]
    words += [f"{t[key]} {word}" for key, word in _STATE_TOTALS if t[key]]
    return ", ".join(words) if any(t.values()) else "no resource changes"


def module_change(before: str | None, after: str | None) -> str | None:
    """``terraform-proxmox v1.1.0 → v1.2.0`` (or ``terraform-proxmox v1.2.0`` when unchanged
    or unknown before); None without a source."""
    if not after:
        return None
    new = parse_source(after)
    name = new.short_name or after
    old = parse_source(before) if before else None
    if old is not None and old.ref and new.ref and old.ref != new.ref:
        if old.short_name and old.short_name != name:
            return f"{old.short_name} {old.ref} → {name} {new.ref}"
        return f"{name} {old.ref} → {new.ref}"
    return f"{name} {new.ref}" if new.ref else name


def replace_why(change: ResourceChange) -> str | None:
    """Why OpenTofu replaces ``change``: the attributes that force it, and the plan's reason."""
    reason = reason_text(change.reason)
    if change.replace_paths:
        forced = ", ".join(code(p) for p in change.replace_paths)
        verb = "forces" if len(change.replace_paths) == 1 else "force"
        return f"{forced} {verb} replacement" + (f" ({reason})" if reason else "")
    return reason


def approval_lines(plans_dir: str | None = ".iac/plans") -> list[str]:
    """How a manual unit is approved: the CI environment, and the local command
    (``plans_dir`` None: in CI, where the folder is the run's plan artifact)."""
    local = (
        f"`invoke apply --plans {plans_dir} --approve-manual`."
        if plans_dir is not None
        else "download the run's plan artifact to DIR, then "
        "`invoke apply --plans DIR --approve-manual`."
    )
    return [
        f"Approve in CI: the `{APPROVAL_ENVIRONMENT}` environment's review on the apply run "
        "after merge (these exact plans, nothing else).",
        f"Approve locally: {local}",
    ]


def waiting_lines(units: Sequence[UnitApply], plans_dir: str) -> list[str]:
    """What ``invoke apply`` prints for the units it leaves waiting: each with its
    reason, then how to approve them (the same two ways the report names)."""
    waiting = [u for u in units if u.result == "waiting-approval"]
    if not waiting:
        return []
    return [
        *(f"{u.path} waits for approval: {u.reason}" for u in waiting),
        *approval_lines(plans_dir),
    ]


def next_lines(results: Sequence[Result], dependents: Sequence[tuple[str, str]]) -> list[str]:
    """One line per planned unit whose apply re-plans others: each dependent with its trigger.

    ``dependents`` are ``(dependent, via)`` pairs (``via``: the upstream it reads),
    transitive, as :class:`tooling.core.plan.affected.Dependent`; a dependent of a
    dependent is traced back to the planned unit that starts the chain. Units
    of this run planned against mock outputs are re-planned too.
    """
    planned = {r.path for r in results if r.status == Status.CHANGES}
    via = dict(dependents)

    def trigger(path: str) -> str | None:
        seen: set[str] = set()
        while path in via and path not in seen:
            seen.add(path)
            path = via[path]
            if path in planned:
                return path
        return None

    chains: dict[str, list[str]] = {}
    for path, upstream in dependents:
        root = trigger(path)
        if root is not None:
            chains.setdefault(root, []).append(
                code(path) + ("" if upstream == root else f" (reads {code(upstream)})")
            )
    for r in results:
        for dep in r.mocked_dependencies:
            if dep in planned:
                chains.setdefault(dep, []).append(f"{code(r.path)} (in this plan, on mock outputs)")
    return [
        f"- after {code(root)} applies: {', '.join(items)}"
        for root in [r.path for r in results]
        if (items := chains.get(root))
    ]


@dataclass(frozen=True)
class RunLinks:
    """Where a reviewer clicks: the commit, the workflow run (its logs) and its artifacts."""

    server: str
    repository: str
    sha: str
    run_id: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str], sha: str | None = None) -> RunLinks | None:
        """From GitHub Actions' ``GITHUB_SERVER_URL``, ``GITHUB_REPOSITORY``,
        ``GITHUB_RUN_ID`` and ``GITHUB_SHA`` (``sha`` wins over it); None outside Actions."""
        repository = environ.get("GITHUB_REPOSITORY", "").strip()
        commit = (sha or environ.get("GITHUB_SHA", "")).strip()
        if not repository or not commit:
            return None
        server = environ.get("GITHUB_SERVER_URL", "").strip().rstrip("/") or "https://github.com"
        run_id = environ.get("GITHUB_RUN_ID", "").strip() or None
        return cls(server, repository, commit, run_id)

    @property
    def commit_url(self) -> str:
        return f"{self.server}/{self.repository}/commit/{self.sha}"

    @property
    def run_url(self) -> str | None:
        if not self.run_id:
            return None
        return f"{self.server}/{self.repository}/actions/runs/{self.run_id}"

    def line(self) -> str:
        """``[commit abc…](url) · [workflow run logs](url) · [plan artifact](url)``."""
        parts = [f"commit [`{self.sha[:12]}`]({self.commit_url})"]
        if self.run_url:
            parts += [
                f"[workflow run logs]({self.run_url})",
                f"[plan artifact]({self.run_url}#artifacts)",
            ]
        return " · ".join(parts)


_MARKER = re.compile(r"^(?P<indent>\s*)(?P<mark>-/\+|\+/-|[-+~]|<=)(?P<rest>\s.*|)$")


def diff_text(text: str) -> str:
    """OpenTofu's plan text for a ```diff fence: each line's marker moved to the first
    column (``+`` added, ``-`` removed and ``-/+`` replaced in red, ``~`` as ``!``
    changed), so GitHub colours it; every line keeps its length and alignment."""
    out: list[str] = []
    for line in text.splitlines():
        m = _MARKER.match(line)
        if m is None:
            out.append(line)
            continue
        mark = "!" if m["mark"] == "~" else m["mark"]
        out.append(f"{mark}{m['indent']}{m['rest']}")
    return "\n".join(out)


def _label(text: str) -> str:
    """A text inside a Mermaid label (``["..."]``): quotes, angle brackets and ``#`` as
    Mermaid's entity codes, control and bidirectional characters escaped, ``@`` mentioning
    nobody, so a unit path can neither end the label nor add a line to the chart."""
    text = escape(" ".join(text.splitlines()))
    for char, entity in (("#", "#35;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;")):
        text = text.replace(char, entity)
    return text.replace("@", "@#8203;")


def _node(path: str) -> str:
    return "u_" + "".join(c if c.isalnum() else "_" for c in path)


def apply_graph(results: Sequence[Result], upstreams: Mapping[str, Sequence[str]]) -> str | None:
    """A Mermaid flowchart of the units with something to apply, in apply order (the
    results' DAG order), each labelled with its gate; None when fewer than two."""
    shown = [r for r in results if r.status in (Status.CHANGES, Status.ERROR)]
    if len(shown) < 2:
        return None
    paths = {r.path for r in shown}
    lines = ["flowchart LR"]
    for i, r in enumerate(shown, 1):
        gate = r.gate.decision if r.gate is not None else "none"
        label = (
            f"{i}. {_label(r.path)}<br/>{'failed' if r.status == Status.ERROR else 'gate: ' + gate}"
        )
        lines.append(f'  {_node(r.path)}["{label}"]')
    for r in shown:
        lines.extend(
            f"  {_node(up)} --> {_node(r.path)}" for up in upstreams.get(r.path, ()) if up in paths
        )
    lines.append("  classDef manual fill:#fff8c5,stroke:#9a6700")
    lines.append("  classDef failed fill:#ffebe9,stroke:#cf222e")
    manual = [_node(r.path) for r in shown if r.gate is not None and r.gate.decision == "manual"]
    failed = [_node(r.path) for r in shown if r.status == Status.ERROR]
    if manual:
        lines.append(f"  class {','.join(manual)} manual")
    if failed:
        lines.append(f"  class {','.join(failed)} failed")
    return "\n".join(lines)


def warnings(results: Sequence[Result], per_group: int | None = None) -> list[str]:
    """Every delete and replace by address, then every forget, import and move, one line
    per unit, action and reason.

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
        for label, why, address in _warned(r):
            groups.setdefault((label, why), []).append(address)
        for (label, why), addresses in groups.items():
            shown = addresses if per_group is None else addresses[:per_group]
            listed = ", ".join(shown)
            if len(shown) < len(addresses):
                listed += f" … and {len(addresses) - len(shown)} more (all in the unit's plan text)"
            lines.append(
                f"- {label} in {code(r.path)} ({len(addresses)}): {listed}"
                + (f". Why: {why}" if why else "")
            )
    return lines


#: the warnings block's label of each state action
_FORGET = "📤 **forget** (left in place, no longer managed by OpenTofu)"
_FORGET_CREATE = "♻️ **replace, the old one forgotten** (left in place, no longer managed)"
_IMPORT = "📥 **import** (brought under this unit's management)"
_MOVE = "🚚 **move** (a new address in the state)"


def _warned(r: Result) -> list[tuple[str, str | None, str]]:
    """``(label, why, address as Markdown)`` of each change of ``r`` the warnings block
    lists: its destroys and replacements, then its forgets, imports and moves."""
    assert r.summary is not None
    out: list[tuple[str, str | None, str]] = []
    for c in r.summary.destructive:
        label = (
            "🗑️ **destroy** (unit deleted)"
            if r.destroy
            else ("♻️ **replace**" if c.action == "replace" else "🗑️ **delete**")
        )
        out.append((label, replace_why(c) if not r.destroy else None, code(c.address)))
    for c in r.summary.forgotten:
        create = c.action != "forget"
        label = _FORGET_CREATE if create else _FORGET
        why = replace_why(c) if create else reason_text(c.reason)
        out.append((label, why, code(c.address)))
    out += [(_IMPORT, None, code(c.address)) for c in r.summary.imported]
    out += [
        (_MOVE, None, f"{code(c.moved_from or '')} → {code(c.address)}") for c in r.summary.moved
    ]
    return out


def drift_lines(results: Sequence[Result]) -> list[str]:
    """The changes outside OpenTofu (refresh-detected drift), one line per unit and action."""
    lines: list[str] = []
    for r in results:
        groups: dict[str, list[str]] = {}
        for d in r.summary.drift if r.summary is not None else ():
            groups.setdefault(d.action, []).append(d.address)
        lines.extend(
            f"- {code(r.path)}: {action} outside OpenTofu ({len(addresses)}): "
            + ", ".join(code(a) for a in addresses)
            for action, addresses in groups.items()
        )
    return lines
