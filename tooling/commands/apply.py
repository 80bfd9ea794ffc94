"""Apply exactly the reviewed plans, in DAG order, and stop where a human must look.

For each unit of ``DIR/summary.json``, in order:

1. a unit whose plan did not succeed, or whose upstream failed, was refused or
   did not run, is ``not-run``; one whose upstream waits for approval waits too;
2. ``no-changes`` plans are reported and skipped;
3. ``manual`` units wait (``waiting-approval``) unless ``--approve-manual``;
4. the binding is verified: the plan file's SHA-256 equals the one in the
   summary, HEAD is the commit the plans were made for, the tools are the
   versions the plans were made with; any mismatch refuses the unit (never a
   silent re-plan);
5. the saved plan is applied; OpenTofu's own stale-plan refusal and lock
   errors are reported as such (never an automatic force-unlock);
6. after a unit applies, each dependent planned against its mock outputs, or
   against outputs this apply changed, is re-planned (the "cascade"): applied
   if its gate is still ``auto``; with ``--approve-manual`` a ``manual`` one is
   applied only if it changes exactly the same resources, with the same
   actions, as the plan the reviewer approved; otherwise it waits.

SIGINT/SIGTERM are forwarded once to the running apply; the tool waits for
OpenTofu to persist state and release the lock, marks the rest ``not-run``,
writes the report and exits non-zero.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tooling.commands import preflight
from tooling.commands.plans import Target, plan_unit, sha256_file
from tooling.core.gates import decide, parse_policy
from tooling.errors import ToolingError
from tooling.io import git, proc, terragrunt
from tooling.io.workspace import Workspace

RESULTS = ("applied", "no-changes", "waiting-approval", "refused", "failed", "not-run")


@dataclass
class UnitApply:
    path: str
    result: str
    reason: str
    cascaded: bool = False
    gate: str = "none"

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "result": self.result,
            "reason": self.reason,
            "cascaded": self.cascaded,
            "gate": self.gate,
        }


@dataclass
class ApplyRun:
    units: list[UnitApply] = field(default_factory=list)
    interrupted: bool = False

    def by_path(self) -> dict[str, UnitApply]:
        return {u.path: u for u in self.units}


# ------------------------------------------------------------------ pure parts


def binding_problems(
    unit: Mapping[str, Any],
    *,
    plan_sha256: str | None,
    head: str,
    summary_head: str | None,
    tools_now: Mapping[str, str],
    tools_then: Mapping[str, str],
) -> list[str]:
    """Why the saved plan is not the reviewed one (empty: it is)."""
    problems: list[str] = []
    if plan_sha256 is None:
        problems.append(f"plan file {unit.get('plan_file')} is missing")
    elif plan_sha256 != unit.get("plan_sha256"):
        problems.append(
            f"plan file {unit.get('plan_file')} does not match the reviewed plan "
            f"(sha256 {plan_sha256[:12]}…, reviewed {str(unit.get('plan_sha256'))[:12]}…)"
        )
    if summary_head != head:
        problems.append(
            f"the plans were made for commit {str(summary_head)[:12]}, HEAD is {head[:12]}: re-plan"
        )
    for name, version in tools_then.items():
        if tools_now.get(name) != version:
            problems.append(f"{name} {tools_now.get(name)} now, the plan was made with {version}")
    return problems


_LOCK_ID = re.compile(r"^\s*ID:\s*(\S+)", re.M)
_LOCK_WHO = re.compile(r"^\s*Who:\s*(.+)$", re.M)


def explain_failure(output: str) -> tuple[str, str]:
    """(result, reason) for a failed ``apply``: stale plan and lock errors are named."""
    if "Saved plan is stale" in output:
        return (
            "refused",
            'state changed since this plan was made (OpenTofu: "Saved plan is stale"); re-plan',
        )
    if "Error acquiring the state lock" in output:
        lock_id = _LOCK_ID.search(output)
        who = _LOCK_WHO.search(output)
        return "failed", (
            "the state is locked by another run"
            + (f" (lock ID {lock_id.group(1)}" if lock_id else " (")
            + (f", held by {who.group(1).strip()})" if who else ")")
            + ". Wait for it to finish; see docs/runbooks.md before any force-unlock."
        )
    return "failed", terragrunt.error_summary(output)


def change_set(changes: Sequence[Mapping[str, Any]]) -> set[tuple[str, str]]:
    return {(str(c["address"]), str(c["action"])) for c in changes}


# ------------------------------------------------------------------ the run


class Applier:
    def __init__(self, ws: Workspace, plans_dir: Path, *, approve_manual: bool) -> None:
        self.ws = ws
        self.dir = plans_dir.resolve()
        self.approve = approve_manual
        summary_path = self.dir / "summary.json"
        if not summary_path.is_file():
            raise ToolingError(
                f"{summary_path}: no summary.json; run `invoke plan --out {plans_dir}` first"
            )
        try:
            self.summary: dict[str, Any] = json.loads(summary_path.read_text())
        except ValueError as exc:
            raise ToolingError(f"{summary_path}: not valid JSON ({exc}); re-plan") from None
        self.head = git.rev_parse(ws.root, "HEAD")
        self.tools_now = self._tools_now()
        self.policy = parse_policy(ws.policy)
        self.run = ApplyRun()
        self.model = ws.model()
        self.worktree: Path | None = None

    def _tools_now(self) -> dict[str, str]:
        from tooling.io import toolchain

        return {tool.name: tool.version for tool in toolchain.check_versions(self.ws.root)}

    # -- helpers
    def record(
        self, path: str, result: str, reason: str, *, cascaded: bool = False, gate: str = "none"
    ) -> None:
        self.run.units.append(UnitApply(path, result, reason, cascaded, gate))
        mark = {
            "applied": "✓",
            "no-changes": "=",
            "waiting-approval": "⏸",
            "refused": "✗",
            "failed": "✗",
            "not-run": "-",
        }[result]
        print(f"  {mark} {path}: {result}" + (f" ({reason})" if reason else ""), flush=True)

    def run_dir(self, unit: Mapping[str, Any]) -> Path:
        if unit.get("destroy"):
            if self.worktree is None:
                base = self.summary.get("base")
                if not base:
                    raise ToolingError(
                        "summary.json has a destroy plan but no base revision; re-plan"
                    )
                self.worktree = git.add_worktree(
                    self.ws.root,
                    self.ws.root / ".iac" / "worktrees" / f"apply-{str(base)[:12]}",
                    str(base),
                )
            return self.worktree / str(unit["path"])
        return self.ws.root / str(unit["path"])

    def apply_plan(self, run_dir: Path, plan_file: Path) -> tuple[int, str]:
        args = terragrunt.apply_args(plan_file)
        code, output, interrupted = proc.run_forwarding_signals(
            args, cwd=run_dir, env=self.ws.tool_env
        )
        if interrupted:
            self.run.interrupted = True
        log = plan_file.parent / "apply.log"
        with log.open("a") as fh:
            fh.write(f"$ {' '.join(args)}\n{output}\n[exit {code}]\n")
        return code, output

    # -- the walk
    def execute(self) -> ApplyRun:
        units: list[dict[str, Any]] = list(self.summary.get("units", []))
        # deleted units' destroy plans run last: nothing left may depend on them
        ordered = [u for u in units if not u.get("destroy")] + [
            u for u in units if u.get("destroy")
        ]
        try:
            for unit in ordered:
                self.one(unit)
        finally:
            if self.worktree is not None:
                git.remove_worktree(self.ws.root, self.worktree)
        return self.run

    def upstream_block(self, unit: Mapping[str, Any]) -> tuple[str, str] | None:
        done = self.run.by_path()
        model_unit = self.model.units.get(str(unit["path"]))
        deps = model_unit.dependencies if model_unit else ()
        for dep in deps:
            r = done.get(dep)
            if r is None:
                continue
            if r.result == "waiting-approval":
                return "waiting-approval", f"its dependency {dep} waits for approval"
            if r.result in ("refused", "failed", "not-run"):
                return "not-run", f"its dependency {dep} {r.result.replace('-', ' ')}"
        return None

    def one(self, unit: Mapping[str, Any]) -> None:
        path = str(unit["path"])
        gate = (unit.get("gate") or {}).get("decision", "none")
        if self.run.interrupted:
            self.record(path, "not-run", "interrupted before this unit", gate=gate)
            return
        status = unit.get("status")
        if status == "no-changes":
            self.record(path, "no-changes", "", gate=gate)
            return
        if status != "changes":
            self.record(
                path,
                "not-run",
                f"plan status is {status}"
                + (f": {unit.get('error')}" if unit.get("error") else ""),
                gate=gate,
            )
            return
        blocked = self.upstream_block(unit)
        if blocked:
            self.record(path, blocked[0], blocked[1], gate=gate)
            return
        if gate == "manual" and not self.approve:
            self.record(
                path,
                "waiting-approval",
                "manual gate: " + "; ".join((unit.get("gate") or {}).get("reasons", [])[:3]),
                gate=gate,
            )
            return
        plan_file = self.dir / str(unit.get("plan_file"))
        problems = binding_problems(
            unit,
            plan_sha256=sha256_file(plan_file) if plan_file.is_file() else None,
            head=self.head,
            summary_head=self.summary.get("head"),
            tools_now=self.tools_now,
            tools_then=self.summary.get("tools") or {},
        )
        if problems:
            self.record(path, "refused", "; ".join(problems), gate=gate)
            return
        if self.needs_cascade(unit):
            self.cascade(unit, gate)
            return
        code, output = self.apply_plan(self.run_dir(unit), plan_file)
        if code == 0 and not self.run.interrupted:
            self.record(path, "applied", "", gate=gate)
        elif self.run.interrupted:
            self.record(
                path,
                "failed",
                "interrupted: OpenTofu stopped and saved what it had applied; re-plan",
                gate=gate,
            )
        else:
            result, reason = explain_failure(output)
            self.record(path, result, reason, gate=gate)

    def needs_cascade(self, unit: Mapping[str, Any]) -> bool:
        """Planned against mock outputs, or against outputs this run changed?"""
        done = self.run.by_path()
        applied = {p for p, r in done.items() if r.result == "applied"}
        by_path = {str(u["path"]): u for u in self.summary.get("units", [])}
        for dep in unit.get("mocked_dependencies") or ():
            if dep in applied:
                return True
        model_unit = self.model.units.get(str(unit["path"]))
        for dep in model_unit.dependencies if model_unit else ():
            if dep in applied and (by_path.get(dep) or {}).get("output_changes"):
                return True
        return False

    def cascade(self, unit: Mapping[str, Any], reviewed_gate: str) -> None:
        """Re-plan a dependent against its upstream's real outputs, then apply if allowed."""
        path = str(unit["path"])
        model_unit = self.model.units[path]
        out = self.dir / "cascade"
        target = Target(
            path,
            model_unit.tier,
            model_unit.executor,
            "cascade",
            self.ws.root / path,
            model_unit.dependencies,
            gate_class=model_unit.gate,
            source=model_unit.source,
        )
        print(f"  ↻ {path}: upstream applied; re-planning against its real outputs", flush=True)
        fresh = plan_unit(target, out, self.ws.tool_env)
        if fresh.status == "error":
            self.record(
                path,
                "failed",
                f"re-plan after upstream apply failed: {fresh.error}",
                cascaded=True,
                gate=reviewed_gate,
            )
            return
        gate = decide(
            status=fresh.status,
            declared=model_unit.gate,
            summary=fresh.summary,
            destroy=False,
            policy=self.policy,
        )
        if fresh.status == "no-changes":
            self.record(
                path,
                "no-changes",
                "re-planned after upstream apply: nothing left to do",
                cascaded=True,
                gate=gate.decision,
            )
            return
        assert fresh.summary is not None and fresh.plan_file is not None
        same = change_set(
            [{"address": c.address, "action": c.action} for c in fresh.summary.changes]
        ) == change_set(unit.get("changes") or [])
        if gate.decision == "manual" and not (self.approve and same):
            why = (
                "the re-plan changes other resources than the approved plan"
                if self.approve
                else "manual gate: " + "; ".join(gate.reasons[:3])
            )
            self.record(
                path,
                "waiting-approval",
                f"re-planned after upstream apply ({out / fresh.plan_file}); {why}",
                cascaded=True,
                gate=gate.decision,
            )
            return
        code, output = self.apply_plan(self.ws.root / path, out / fresh.plan_file)
        if code == 0 and not self.run.interrupted:
            self.record(
                path,
                "applied",
                "re-planned against its upstream's real outputs, then applied",
                cascaded=True,
                gate=gate.decision,
            )
        else:
            result, reason = (
                explain_failure(output) if not self.run.interrupted else ("failed", "interrupted")
            )
            self.record(path, result, reason, cascaded=True, gate=gate.decision)


def report_md(run: ApplyRun, summary: Mapping[str, Any]) -> str:
    counts = {r: sum(1 for u in run.units if u.result == r) for r in RESULTS}
    bad = counts["failed"] + counts["refused"]
    mark = "❌" if bad or run.interrupted else ("⏸" if counts["waiting-approval"] else "✅")
    lines = [
        "<!-- iac-tooling:apply-report -->",
        f"{mark} **Apply:** {counts['applied']} applied, {counts['no-changes']} without changes, "
        f"{counts['waiting-approval']} waiting for approval, {counts['refused']} refused, {counts['failed']} failed, "
        f"{counts['not-run']} not run" + (" — **interrupted**" if run.interrupted else ""),
        "",
        f"Plans made at `{str(summary.get('head'))[:12]}`.",
        "",
        "| unit | result | gate | reason |",
        "|---|---|---|---|",
    ]
    for u in run.units:
        reason = u.reason.replace("|", "\\|").replace("\n", " ")
        lines.append(
            f"| `{u.path}` | {u.result}{' (cascaded)' if u.cascaded else ''} | {u.gate} | {reason} |"
        )
    cascaded = [u.path for u in run.units if u.cascaded]
    if cascaded:
        lines += [
            "",
            "Cascaded (re-planned after their upstream applied): "
            + ", ".join(f"`{p}`" for p in cascaded),
        ]
    return "\n".join(lines) + "\n"


def apply(ws: Workspace, plans_dir: Path, *, approve_manual: bool) -> int:
    print(ws.settings.describe(), flush=True)
    ws.check_tools()
    applier = Applier(ws, plans_dir, approve_manual=approve_manual)
    preflight.check(
        ws, [(str(u.get("path")), u.get("executor")) for u in applier.summary.get("units", [])]
    )
    run = applier.execute()
    doc = {
        "head": applier.head,
        "plans_head": applier.summary.get("head"),
        "approve_manual": approve_manual,
        "interrupted": run.interrupted,
        "units": [u.to_json() for u in run.units],
    }
    tmp = applier.dir / "apply.json.tmp"
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    os.replace(tmp, applier.dir / "apply.json")
    md = report_md(run, applier.summary)
    (applier.dir / "apply.md").write_text(md)
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        with open(step_summary, "a") as fh:
            fh.write(md + "\n")
    print(f"wrote {applier.dir / 'apply.json'} and {applier.dir / 'apply.md'}", flush=True)
    if run.interrupted:
        return 130
    return 1 if any(u.result in ("failed", "refused") for u in run.units) else 0
