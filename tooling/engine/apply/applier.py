"""Apply exactly the reviewed plans, in DAG order, and stop where a human must look.

For each unit of ``DIR/summary.json``, in order (what to do with it is
:func:`tooling.core.apply.decision.decide`'s, the same decision as the app tier's;
the checks that read files and run processes are here):

1. a unit the folder's record (``apply.json``) says was applied by an earlier
   run is reported as ``applied`` (``earlier``) and left alone; one an earlier
   run was killed while applying is settled from OpenTofu's own output;
2. ``no-changes`` plans are reported and skipped; a unit whose upstream failed,
   was refused or did not run is ``not-run``;
3. a unit whose plan failed, was blocked or not planned is ``refused``, one
   withheld or excluded ``not-run``; one whose upstream waits for approval waits too;
4. the binding is verified: the plan file's SHA-256 equals the one in the
   summary, HEAD is the commit the plans were made for, the tools are the
   versions the plans were made with, the state the plan file records is the
   unit's own, no state an earlier apply could not save is waiting; any
   mismatch refuses the unit (never a silent re-plan). Plans of a dirty tree
   are refused as a whole;
5. the gate is recomputed from the saved plan itself (``show -json``) and
   policy.toml, never read from ``summary.json``; with ``--reviewed PR_DIR`` a
   plan that differs from the pull request's reviewed plan is ``manual``
   (:mod:`tooling.engine.plan.reviewed`): ``manual`` units wait
   (``waiting-approval``) unless ``--approve-manual``;
6. the saved plan is applied; OpenTofu's own stale-plan and lineage refusals
   are ``refused``, a lock error names the lock's ID, holder and age and the
   runbook's recovery command (never an automatic force-unlock); a state
   OpenTofu could not save (``errored.tfstate``) is copied into the plan folder
   and named with the push command, objects reported created but absent from
   the state are named with their import command;
7. after a unit applies, each dependent planned against its mock outputs, or
   against outputs this apply changed, is re-planned (the "cascade"): applied
   if its gate is still ``auto``; with ``--approve-manual`` a ``manual`` one is
   applied only if it changes exactly the same resources, with the same
   actions and the same values, as the plan the reviewer approved
   (:mod:`tooling.core.apply.approval`); otherwise it waits, its new plan in apply.md.
8. an apply is ``applied`` only when OpenTofu completed without reporting an
   error, whatever Terragrunt's exit code; a unit the model cannot evaluate is
   ``refused``.

The record is merged, never overwritten: each run adds itself to ``runs`` and
updates ``units`` (the latest result per unit), and is saved after every unit,
so a re-run after a failure continues from the failure point.

SIGINT/SIGTERM are forwarded once to the running apply's process group; the
tool waits for OpenTofu to persist state and release the lock, records what
OpenTofu really did (its exit status and output), marks the rest ``not-run``,
writes the report and exits non-zero. The apply writes its output to a file,
not a pipe: if the tool itself is killed, OpenTofu still finishes.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import replace
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path

from tooling.core.apply import age, binding, encryption
from tooling.core.apply.approval import against_reviewed, cascade_wait
from tooling.core.apply.decision import Action, Facts, Verified, binding_problems, decide
from tooling.core.apply.record import (
    REPLANS,
    RUNNING,
    ApplyRecord,
    ApplyRun,
    UnitApply,
    WaitingPlan,
    record_document,
    report_md,
    result_line,
)
from tooling.core.apply.record import outcome as _outcome
from tooling.core.plan import sensitive
from tooling.core.plan.gates import Gate
from tooling.core.plan.gates import decide as decide_gate
from tooling.core.plan.planjson import PlanSummary, summarize
from tooling.core.plan.results import Result
from tooling.core.plan.status import Status
from tooling.core.plan.summary import Summary
from tooling.core.plan.targets import model_refusal, unit_target
from tooling.core.report import review
from tooling.engine import secrets
from tooling.engine.apply import safety
from tooling.engine.plan import planfolder, store
from tooling.engine.plan.reviewed import ReviewedPlans
from tooling.engine.plan.unitplanner import learn_secrets, plan_unit
from tooling.engine.rules import execguard, verify
from tooling.errors import ToolingError
from tooling.io import backends, git, outdir, proc, terragrunt
from tooling.io.ui import say, show
from tooling.io.workspace import Workspace


def outcome(code: int, output: str, interrupted: bool, unit_path: str = "") -> tuple[str, str]:
    """What an apply really did (:func:`tooling.core.apply.record.outcome`)."""
    return _outcome(code, output, interrupted, unit_path, summary=terragrunt.error_summary(output))


# ------------------------------------------------------------------ the run


class Applier:
    def __init__(
        self,
        ws: Workspace,
        plans_dir: Path,
        *,
        approve_manual: bool,
        reviewed: ReviewedPlans | None = None,
    ) -> None:
        self.ws = ws
        #: the pull request's reviewed plans (``--reviewed``): a unit whose saved plan
        #: differs from its reviewed plan is manual (:meth:`gate_of`)
        self.reviewed = reviewed
        self._differs: dict[str, list[str]] = {}
        self.dir = plans_dir.resolve()
        self.approve = approve_manual
        summary_path = self.dir / planfolder.SUMMARY
        if not summary_path.is_file():
            raise ToolingError(
                f"{summary_path}: no summary.json; run `invoke plan --out {plans_dir}` first"
            )
        # an artifact downloaded from the pull request's run: checked before it is used
        self.summary: Summary = planfolder.read_summary(summary_path)
        age.refuse_stale(
            self.summary.planned_at, datetime.now(UTC), ws.policy.apply, str(summary_path)
        )
        if self.summary.interrupted:
            # not the set a reviewer approved: some units stopped half way, and the
            # units after them were never planned
            raise ToolingError(
                f"{summary_path}: this plan was interrupted before every unit finished; "
                f"nothing applied. Plan again: `invoke plan --out {plans_dir}`"
            )
        #: the planned units, in the summary's (DAG) order
        self.units = list(self.summary.units)
        dirty = binding.dirty_refusal(self.summary, str(summary_path), str(plans_dir))
        if dirty:
            raise ToolingError(dirty)
        self.head = git.rev_parse(ws.root, "HEAD")
        self.tools_now = self._tools_now()
        #: policy.toml, as the task's preamble read it
        self.policy = ws.policy
        self.run = ApplyRun()
        self.model = ws.model()
        self.worktree: Path | None = None
        self.record_doc = planfolder.earlier_record(self.dir, self.summary)
        self.earlier = {u.path: u for u in self.record_doc.units} if self.record_doc else {}
        self.started_at = datetime.now(UTC).replace(microsecond=0).isoformat()
        self.running: str | None = None
        self._armed: dict[str, dict[str, str]] = {}  # per unit: see armed()
        key = hashlib.sha256(str(self.dir).encode()).hexdigest()[:16]
        # raw OpenTofu output, outside the report folder (which is uploaded): redacted into apply.log after
        self.raw_dir = ws.root / ".iac" / "apply-output" / key

    @cached_property
    def env(self) -> dict[str, str]:
        """The tools' environment, with the modules of every planned unit mapped (a deleted
        unit's destroy is applied from the base revision, whose module the tree may no longer pin)."""
        return self.ws.env_for(u.source for u in self.units if u.source)

    def _tools_now(self) -> dict[str, str]:
        # the versions the task's preamble checked (a workspace checks them once)
        return {tool.name: tool.version for tool in self.ws.checked_tools}

    # -- the record, saved after every unit
    def document(self) -> ApplyRecord:
        return record_document(
            self.run,
            order=[u.path for u in self.units],
            earlier=self.record_doc,
            head=self.head,
            plans_head=self.summary.head,
            approve_manual=self.approve,
            started_at=self.started_at,
            running=self.running,
        )

    def save(self) -> None:
        planfolder.write_record(self.dir, self.document())

    def record(self, entry: UnitApply) -> None:
        self.run.units.append(entry)
        if self.running == entry.path:
            self.running = None
        show(result_line(entry))
        self.save()

    def run_dir(self, unit: Result) -> Path:
        if unit.destroy:
            if self.worktree is None:
                base = self.summary.base
                if not base:
                    raise ToolingError(
                        "summary.json has a destroy plan but no base revision; re-plan"
                    )
                self.worktree = git.add_worktree(
                    self.ws.root,
                    # the plan's own path: a saved plan names its backend as resolved
                    # there (a local path under get_repo_root() is inside it)
                    self.ws.root / ".iac" / "worktrees" / str(base)[:12],
                    str(base),
                )
            run_dir = self.worktree / git.prefix(self.ws.root) / unit.path
            # a deleted unit's state where its backend puts it (never in the worktree)
            backends.share_repository_state(
                run_dir, self.worktree.resolve(), git.toplevel(self.ws.root), self.env
            )
            return run_dir
        return self.ws.run_dir(unit.path)

    def raw_file(self, path: str) -> Path:
        return self.raw_dir / (path.replace("/", "__") + ".out")

    def state_key(self, unit: Result) -> str | None:
        """The unit's own state key, from the model of the tree it is applied from."""
        base = str(self.summary.base)
        model = self.ws.model(self.ws.tree_at(base)) if unit.destroy else self.model
        model_unit = model.units.get(unit.path)
        return model_unit.state_key if model_unit else None

    def applied(self, unit: Result, run_dir: Path, plan_file: Path) -> tuple[str, str]:
        """Apply a saved plan: (result, reason), naming what a failed apply left behind."""
        path = unit.path
        since = time.time_ns()
        code, output, interrupted = self.apply_plan(path, run_dir, plan_file)
        result, reason = outcome(code, output, interrupted, path)
        if result != "applied":
            folder = store.stored(self.dir, unit.plan_file).parent  # units/UNIT, even for a cascade
            left, whole = safety.after_failure(
                path, run_dir, folder, output, self.env, since_ns=since
            )
            reason = left if whole else f"{left}; {reason}" if left else reason
        return result, reason

    def armed(self, path: str, run_dir: Path) -> dict[str, str]:
        """The environment a unit is re-planned and applied in: the guard armed for it
        (:func:`execguard.armed`: its module as planned, the units it reads outputs
        from), once per unit and run."""
        if path not in self._armed:
            planned = self.summary.unit(path)
            base = str(self.summary.base)
            self._armed[path] = execguard.armed_unit(
                path,
                run_dir,
                planned.source if planned is not None else None,
                self.env,
                cache_dir=self.ws.settings.cache_dir,
                model=self.ws.model(self.ws.tree_at(base))
                if planned is not None and planned.destroy
                else self.model,
                policy=self.policy,
            )
        return self._armed[path]

    def apply_plan(self, path: str, run_dir: Path, plan_file: Path) -> tuple[int, str, bool]:
        """Apply a saved plan; its output goes to a file (redacted into apply.log after)."""
        args = terragrunt.apply_args(plan_file)
        env = self.armed(path, run_dir)
        raw = self.raw_file(path)
        raw.parent.mkdir(parents=True, exist_ok=True)
        raw.write_text(f"# plan {plan_file}\n")
        self.running = path
        self.save()
        code, interrupted = proc.run_to_file(args, output=raw, cwd=run_dir, env=env)
        if interrupted:
            self.run.interrupted = True
        output = raw.read_text(errors="replace")
        outdir.append_text(
            plan_file.parent / "apply.log", f"$ {' '.join(args)}\n{output}\n[exit {code}]\n"
        )
        raw.unlink(missing_ok=True)
        return code, output, interrupted

    def settle_killed(self, unit: Result) -> bool:
        """An earlier run was killed while applying this unit: did OpenTofu finish?
        (:func:`tooling.engine.apply.safety.settle_killed`)"""
        return safety.settle_killed(
            self.raw_file(unit.path), store.stored(self.dir, unit.plan_file)
        )

    # -- the walk
    def execute(self) -> ApplyRun:
        # deleted units' destroy plans run last: nothing left may depend on them
        ordered = [u for u in self.units if not u.destroy] + [u for u in self.units if u.destroy]
        try:
            for unit in ordered:
                self.one(unit)
        finally:
            if self.worktree is not None:
                git.remove_worktree(self.ws.root, self.worktree)
        return self.run

    def gate_of(self, unit: Result, summary: PlanSummary) -> Gate:
        """The gate, recomputed from the saved plan and policy.toml (never from summary.json)."""
        model_unit = self.model.units.get(unit.path)
        gate_class = "manual" if unit.destroy or model_unit is None else model_unit.gate
        gate = decide_gate(
            status=Status.CHANGES,
            declared=gate_class,
            summary=summary,
            destroy=unit.destroy,
            policy=self.policy.gates,
        )
        if self.reviewed is not None and unit.path not in self._differs:
            self._differs[unit.path] = self.reviewed.differences(
                unit.path, summary, self.run_dir(unit), self.env
            )
        return against_reviewed(gate, self._differs.get(unit.path))

    def one(self, unit: Result) -> None:
        """Settle one unit: what the folder's record and this run say of it, then what its
        saved plan says (:func:`tooling.core.apply.decision.decide`, asked once for each)."""
        path = unit.path
        facts = self.facts(unit)
        decision = decide(unit, facts)
        verified: Verified | None = None
        if decision.action is Action.VERIFY:
            if decision.waiting is not None:  # the re-plan its approval is for
                unit = replace(
                    unit,
                    plan_file=decision.waiting.plan_file,
                    plan_sha256=decision.waiting.plan_sha256,
                )
            verified = self.verify(unit, replanned=decision.waiting is not None)
            decision = decide(unit, replace(facts, verified=verified))
        if decision.action is Action.CASCADE:
            assert verified is not None and verified.plan is not None  # decided on the read plan
            self.cascade(unit, verified.plan)
        elif decision.action is Action.APPLY:
            run_dir, plan_file = self.run_dir(unit), store.stored(self.dir, unit.plan_file)
            result, reason = self.applied(unit, run_dir, plan_file)
            note = decision.note if result == "applied" else ""
            self.record(UnitApply(path, result, reason + note, gate=decision.gate))
        else:
            waiting = decision.waiting if decision.result == "waiting-approval" else None
            text = store.text(self.dir, waiting.text_file) if waiting else None
            self.record(decision.entry(path, plan_text=text))

    def facts(self, unit: Result) -> Facts:
        """What the folder's record and this run say of ``unit`` (its plan not read yet)."""
        before = self.earlier.get(unit.path)
        model_unit = self.model.units.get(unit.path)
        done = self.run.by_path()
        dependencies = model_unit.dependencies if model_unit is not None else ()
        return Facts(
            claimed=unit.gate.decision if unit.gate is not None else "none",
            approved=self.approve,
            interrupted=self.run.interrupted,
            earlier=before,
            killed_applied=not self.run.interrupted
            and before is not None
            and before.result == RUNNING
            and self.settle_killed(unit),
            upstream=tuple(done[d] for d in dependencies if d in done),
            model_error=model_refusal(model_unit) if model_unit is not None else None,
        )

    def verify(self, unit: Result, *, replanned: bool) -> Verified:
        """What the saved plan of ``unit`` is: bound to the review (its digest, the commit,
        the tools), planned against the unit's own state, no state an earlier apply left
        unsaved, the rules where OpenTofu runs; then read back, its secrets learnt and
        its gate recomputed. The first step that finds a problem ends it."""
        path = unit.path
        plan_file, run_dir = store.stored(self.dir, unit.plan_file), self.run_dir(unit)
        problems = binding_problems(
            unit,
            plan_sha256=store.digest(plan_file),
            head=self.head,
            summary_head=self.summary.head,
            tools_now=self.tools_now,
            tools_then=self.summary.tools,
        ) or verify.before_apply(
            # its static form read again; the guard checks what the apply runs with
            run_dir,
            path,
            unit.tier,
            self.armed(path, run_dir),
            self.policy,
        )
        if not problems:
            unbound = safety.unbound_plan(
                plan_file,
                str(unit.plan_file),
                self.state_key(unit),
                self.ws.settings.state_bucket,
            )
            left = safety.unsaved_state(path, run_dir, plan_file.parent)
            left = left or safety.cut_short_earlier(path, run_dir, plan_file.parent, self.env)
            problems = [p for p in (unbound, left) if p]
        if problems:
            return Verified(tuple(problems))
        try:
            shown = store.show(run_dir, plan_file, self.env)
        except ToolingError as exc:
            return Verified((encryption.unreadable_plan(str(exc)),))
        # what the apply's output may echo: the plan's sensitive values and its upstreams'
        if unreadable := learn_secrets(shown, path, run_dir, self.model.units.get(path), self.env):
            return Verified((unreadable,))
        secrets.register(sensitive.values_in_plan(shown, self.policy.sensitive_attributes))
        reviewed = summarize(shown)
        if not reviewed.has_changes:
            return Verified(plan=reviewed)
        return Verified(
            plan=reviewed,
            gate=self.gate_of(unit, reviewed),
            cascade=self.needs_cascade(unit, replanned=replanned),
        )

    def needs_cascade(self, unit: Result, *, replanned: bool = False) -> bool:
        """Planned against mock outputs, or against outputs this run changed? A unit
        ``replanned`` by an earlier run (its waiting re-plan) was planned after the
        upstreams that run applied: only those this run applies count."""
        done = self.run.by_path()
        applied = {
            p for p, r in done.items() if r.result == "applied" and not (replanned and r.earlier)
        }
        changed_outputs = {u.path for u in self.units if u.summary and u.summary.output_changes}
        if applied.intersection(unit.mocked_dependencies):
            return True
        model_unit = self.model.units.get(unit.path)
        return any(
            dep in applied and dep in changed_outputs
            for dep in (model_unit.dependencies if model_unit else ())
        )

    def cascade(self, unit: Result, reviewed: PlanSummary) -> None:
        """Re-plan a dependent against its upstream's real outputs, then apply if allowed."""
        path = unit.path
        model_unit = self.model.units[path]
        out = self.dir / "cascade"
        target = unit_target(model_unit, "cascade", self.ws.run_dir(path))
        say(f"  ↻ {path}: upstream applied; re-planning against its real outputs")
        fresh = plan_unit(target, out, self.armed(path, self.ws.run_dir(path)), policy=self.policy)
        if fresh.status == Status.ERROR:
            self.record(
                UnitApply(
                    path,
                    "failed",
                    f"re-plan after upstream apply failed: {fresh.error}",
                    cascaded=True,
                    gate=self.gate_of(unit, reviewed).decision,
                )
            )
            return
        # a merge plan that differs from the pull request's reviewed one stays manual
        gate = against_reviewed(
            decide_gate(
                status=fresh.status,
                declared=model_unit.gate,
                summary=fresh.summary,
                destroy=False,
                policy=self.policy.gates,
            ),
            self._differs.get(path),
        )
        if fresh.status == Status.NO_CHANGES:
            self.record(
                UnitApply(
                    path,
                    "no-changes",
                    "re-planned after upstream apply: nothing left to do",
                    cascaded=True,
                    gate=gate.decision,
                )
            )
            return
        assert fresh.summary is not None and fresh.plan_file is not None
        # compared with the saved plan the reviewer saw (changes and values), not summary.json
        why = cascade_wait(gate, approved=self.approve, reviewed=reviewed, fresh=fresh.summary)
        if why is not None:
            # this re-plan is what the next approval is asked for, and what it applies
            waiting = WaitingPlan(
                REPLANS + str(fresh.plan_file),
                str(store.digest(store.stored(out, fresh.plan_file))),
                REPLANS + fresh.text_file if fresh.text_file else None,
            )
            self.record(
                UnitApply(
                    path,
                    "waiting-approval",
                    f"re-planned against its upstream's real outputs ({waiting.text_file or waiting.plan_file}); {why}",
                    cascaded=True,
                    gate=gate.decision,
                    plan_text=fresh.plan_text,
                    waiting_plan=waiting,
                )
            )
            return
        result, reason = self.applied(
            unit, self.ws.run_dir(path), store.stored(out, fresh.plan_file)
        )
        if result == "applied" and not reason:
            reason = "re-planned against its upstream's real outputs, then applied"
        self.record(UnitApply(path, result, reason, cascaded=True, gate=gate.decision))


def finish(folder: outdir.ReportDir, record: ApplyRecord, run: ApplyRun, summary: Summary) -> None:
    """Write the record (``apply.json``) and the report (``apply.md``, also the job summary)."""
    planfolder.write_record(folder.path, record)
    md = report_md(run, summary)
    folder.write_text("apply.md", md)
    folder.job_summary(md)
    waiting = review.waiting_lines(run.units, str(folder.path))
    say("\n".join([*waiting, f"wrote {folder.path / 'apply.json'} and {folder.path / 'apply.md'}"]))
