"""Plan many units through one ``terragrunt run --all plan`` process (a lone unit
through one ``terragrunt plan``).

The same results as planning one process per unit (:mod:`tooling.engine.plan.unitplanner`),
without a Terragrunt start-up per unit. Terragrunt's JSON log is split per unit
as it arrives; each unit's plan is read as soon as it is written (its
machine-readable UI, and ``tofu show -json`` when that shows a change, as the
per-unit planner does); its plan text and log are kept like the per-unit planner's.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from tooling.core.plan import runlog
from tooling.core.plan.outcomes import (
    FAILED,
    dependency_failed,
    failed_dependency,
    from_plan,
    presets,
    protected_reason,
    settled,
)
from tooling.core.plan.planjson import PlanSummary
from tooling.core.plan.results import Result
from tooling.core.plan.status import Status
from tooling.core.plan.targets import Target, tree_root, waves
from tooling.engine import secrets
from tooling.engine.plan import store
from tooling.engine.plan.store import unit_dir
from tooling.engine.plan.unitplanner import (
    Progress,
    mocked_dependencies,
    plan_unit,
    run_all,
    save_plan_text,
    upstream_secrets,
)
from tooling.engine.rules import verify
from tooling.errors import ToolingError
from tooling.io import outdir, proc, terragrunt
from tooling.model.policy import Declared, Policy


def run_batch(
    targets: Sequence[Target],
    out_dir: Path,
    env: Mapping[str, str],
    *,
    jobs: int,
    policy: Policy,
    progress: Progress | None = None,
    lock: bool = True,
) -> list[Result]:
    """Plan ``targets`` under ``policy`` through one ``terragrunt run --all plan`` per folder tree.

    Same results as :func:`run_all` with :func:`plan_unit`, without a Terragrunt
    start-up (version probe, configuration parsing) per unit: the head tree's
    units go through one process, a deleted unit's destroy plans through one
    more in the base revision's worktree. Terragrunt runs them in DAG order,
    ``jobs`` at a time; its JSON log is split per unit as it arrives, and each
    unit's ``tofu show -json`` runs as soon as that unit's plan is written.
    A unit that reads another target only through units outside the run goes
    into a later run (:func:`tooling.core.plan.targets.waves`): Terragrunt would not
    order the two, and the reader would run OpenTofu in the target's folder.
    Units whose path the ``--filter`` language cannot name exactly are planned
    one process per unit instead (:func:`run_all`), and so is a lone unit: a
    bare ``terragrunt plan`` skips ``run --all``'s discovery of the whole tree,
    which costs more than the one start-up it would save.
    """
    planned = [t for t in targets if not t.preset]
    if len(planned) <= 1 or any(
        runlog.filter_for(t.path) is None or tree_root(t) is None for t in planned
    ):
        return run_all(
            targets,
            out_dir,
            env,
            jobs=jobs,
            progress=progress,
            planner=partial(plan_unit, policy=policy, lock=lock),
        )
    results: dict[str, Result] = {}
    for preset in presets(targets):
        results[preset.path] = preset
        if progress:
            progress.finish(preset)
    for wave in waves(planned):
        groups: dict[tuple[Path, bool], list[Target]] = {}
        for t in wave:
            failed = failed_dependency(t.dependencies, results)
            if failed is not None:
                results[t.path] = dependency_failed(t, failed)
            elif not t.run_dir.is_dir():
                why = f"{t.path}: folder not found at the revision being planned"
                results[t.path] = _refused(t, why, f"error: {why}", out_dir)
            else:
                root = tree_root(t)
                assert root is not None
                groups.setdefault((root, t.destroy), []).append(t)
                continue
            if progress:
                progress.finish(results[t.path])
        for (root, destroy), group in groups.items():
            group = _verified(group, out_dir, env, jobs, results, progress, policy)
            if not group:
                continue
            batch = _Batch(
                root, group, out_dir, env, jobs=jobs, destroy=destroy, lock=lock, progress=progress
            )
            batch.declared = policy.sensitive_attributes
            results.update(batch.run())
            if batch.unrun:
                # Terragrunt stopped before running them (a configuration it cannot parse
                # anywhere in the run fails its discovery of every unit): one process each,
                # so a broken unit fails alone, with its own error
                again = [t for t in group if t.path in batch.unrun]
                for result in run_all(
                    again,
                    out_dir,
                    env,
                    jobs=jobs,
                    progress=progress,
                    planner=partial(plan_unit, policy=policy, lock=lock),
                ):
                    results[result.path] = result
    if progress:
        progress.close()
    return [results[t.path] for t in targets]


def _verified(
    group: list[Target],
    out_dir: Path,
    env: Mapping[str, str],
    jobs: int,
    results: dict[str, Result],
    progress: Progress | None,
    policy: Policy,
) -> list[Target]:
    """The rule's verifier before the batch's ``run --all``: a unit that breaks the rule is
    refused (an ``error`` naming each violation), its dependents in the group not planned;
    the rest of the group goes on."""
    refused = verify.verify_many(
        [(t.run_dir, t.path, t.tier) for t in group], env, policy, jobs=jobs
    )
    kept: list[Target] = []
    for t in group:  # DAG order: a dependency is settled before its dependents
        failed = failed_dependency(t.dependencies, results)
        if t.path in refused:
            results[t.path] = _refused(t, refused[t.path], refused[t.path], out_dir)
        elif failed is not None:
            results[t.path] = dependency_failed(t, failed)
        else:
            kept.append(t)
            continue
        if progress:
            progress.finish(results[t.path])
    return kept


def _refused(t: Target, why: str, line: str, out_dir: Path) -> Result:
    """``t`` refused before its plan: an ``error`` whose log holds the one ``line``."""
    log = unit_dir(out_dir, t.path) / "plan.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    outdir.write_text(log, f"[{line}]\n")
    return settled(
        t, Status.ERROR, why, destroy=t.destroy, log_file=log.relative_to(out_dir).as_posix()
    )


@dataclass
class _UnitRun:
    """What one unit of the batch printed and how it ended, gathered as the log streams."""

    target: Target
    log: list[str] = field(default_factory=list)
    stdout: list[str] = field(default_factory=list)
    started: float | None = None
    ended: float | None = None
    work_copy: str | None = None
    finished: runlog.Finished | None = None
    shown: Future[PlanSummary | str] | None = (
        None  # the plan's summary, or why it could not be read
    )
    reported: bool = False  # its progress line is out
    # "" once its upstreams' sensitive outputs are registered, or why they could not be read
    learned: str | None = None
    protected: bool = False  # left out of a destroy by its prevent_destroy


class _Batch:
    """One ``terragrunt run --all plan`` over some units of one folder tree."""

    def __init__(
        self,
        root: Path,
        group: Sequence[Target],
        out_dir: Path,
        env: Mapping[str, str],
        *,
        jobs: int,
        destroy: bool,
        lock: bool,
        progress: Progress | None,
    ) -> None:
        self.root = root
        self.root_text = str(root)
        self.out_dir = out_dir.resolve()
        self.env = env
        self.jobs = max(1, jobs)
        self.destroy = destroy
        self.lock_state = lock
        self.declared: Declared = {}  # policy.toml [sensitive_attributes]: redacted
        self.progress = progress
        self.units = {t.path: _UnitRun(t) for t in group}
        self.paths = frozenset(self.units)
        self.shared: list[str] = []  # warnings and errors that name none of the units
        #: units Terragrunt never ran (nor skipped for a failed dependency): planned again apart
        self.unrun: set[str] = set()
        self.warnings: list[str] = []  # every warning (mock outputs are read from them)
        self.mutex = threading.Lock()
        self.pool = ThreadPoolExecutor(max_workers=self.jobs)
        #: each unit's OpenTofu writes its machine-readable UI here, in its working copy's
        #: data folder (not when TF_DATA_DIR moves that folder: one path for every unit)
        self.stream = store.batch_stream(env, f"{os.getpid()}-{id(self):x}")

    # -- while Terragrunt runs (reader threads)

    def on_line(self, _stream: str, raw: str) -> None:
        line = runlog.parse(raw)
        with self.mutex:
            if line.level in runlog.QUIET_LEVELS:
                self._marker(line)
                return
            if line.level == "warn":
                self.warnings.append(line.msg)
            unit = runlog.unit_of(line.working_dir, self.root_text, self.paths)
            if unit is None:
                if line.level in ("warn", "error", "stderr", "raw") and line.msg.strip():
                    self.shared.append(runlog.render(line))
                return
            run = self.units[unit]
            run.log.append(runlog.render(line))
            if line.level == "stdout" and line.tf_command in (None, "plan"):
                run.stdout.append(line.msg)

    def _marker(self, line: runlog.Line) -> None:
        if (copy := runlog.working_copy(line.msg)) is not None:
            unit = runlog.unit_of(line.working_dir, self.root_text, self.paths)
            if unit is not None:
                self.units[unit].work_copy = copy
            return
        if (kept := runlog.protected(line.msg)) is not None:
            unit = runlog.unit_of(kept, self.root_text, self.paths)
            if unit is not None:
                self.units[unit].protected = True
            return
        if (begun := runlog.started(line.msg)) is not None:
            unit = runlog.unit_of(begun, self.root_text, self.paths)
            if unit is not None and self.units[unit].started is None:
                self.units[unit].started = time.monotonic()
                if self.progress:
                    self.progress.start(unit)
            return
        done = runlog.finished(line.msg)
        unit = runlog.unit_of(done.unit_dir, self.root_text, self.paths) if done else None
        if done is None or unit is None or self.units[unit].finished is not None:
            return
        run = self.units[unit]
        run.finished = done
        run.ended = time.monotonic()
        if done.succeeded:
            run.shown = self.pool.submit(self._show, run)
        else:  # its error may echo an upstream's secret: learn them before it is printed
            self.pool.submit(self._report_failed, run, done.error or "failed")

    def _learn(self, run: _UnitRun) -> str:
        """Register the sensitive outputs of the unit's dependencies, whatever its plan's
        outcome (Terragrunt passed them as plain inputs); "" or why they could not be read."""
        if run.learned is None:
            try:
                secrets.register(upstream_secrets(run.target, self.env))
                run.learned = ""
            except ToolingError as exc:
                run.learned = str(exc)
        return run.learned

    def _report_failed(self, run: _UnitRun, error: str) -> None:
        self._learn(run)
        self._report(run, replace(self._base(run.target), error=error))

    def _show(self, run: _UnitRun) -> PlanSummary | str:
        """Read the unit's plan: its machine-readable UI (``-json-into``), and when that
        shows a change, the saved plan with ``tofu show -json`` (in its working copy)."""
        t = run.target
        udir = unit_dir(self.out_dir, t.path)
        try:
            plan_path = store.keep_written(udir)
            # as in plan_unit: learn the secrets before any text of this unit is written
            if unreadable := self._learn(run):
                raise ToolingError(unreadable)
            work = self._work_copy(run)
            summary = store.summary_of(
                terragrunt.take_stream(work / self.stream) if self.stream else None,
                lambda: store.show_in(work, plan_path, self.env),
                self.declared,
            )
        except ToolingError as exc:
            self._report(run, replace(self._base(t), error=str(exc)))
            return str(exc)
        except ValueError as exc:
            self._report(run, replace(self._base(t), error=f"unreadable plan JSON: {exc}"))
            return f"unreadable plan JSON: {exc}"
        self._report(run, from_plan(self._base(t), summary))
        return summary

    def _drop_stream(self, run: _UnitRun) -> None:
        """Remove what a unit's plan wrote with ``-json-into`` and was not read (a failed
        plan, a plan file missing): its diagnostics are not redacted."""
        if self.stream is None:
            return
        if run.work_copy:
            copy: Path = self.root / run.work_copy
        elif run.started is not None:  # it ran, but its working copy was not named
            copy = terragrunt.working_copy(run.target.run_dir) or run.target.run_dir
        else:
            return
        with contextlib.suppress(OSError):
            (copy / self.stream).unlink(missing_ok=True)

    def _work_copy(self, run: _UnitRun) -> Path:
        unit_dir = run.target.run_dir
        if run.work_copy:
            copy = (self.root / run.work_copy).resolve()
            if copy.is_relative_to(unit_dir.resolve()) and (copy / ".terraform").is_dir():
                return copy
        return terragrunt.work_dir(unit_dir / ".terragrunt-cache", unit_dir / "terragrunt.hcl")

    def _report(self, run: _UnitRun, result: Result) -> None:
        if self.progress and not run.reported:
            run.reported = True
            self.progress.finish(result)

    # -- the run, and the results once it is over

    def run(self) -> dict[str, Result]:
        filters = [q for t in self.units.values() if (q := runlog.filter_for(t.target.path))]
        with tempfile.TemporaryDirectory(prefix="iac-plan-") as private:
            report_file = Path(private) / "report.json"
            self.args = terragrunt.run_all_plan_args(
                filters,
                self.out_dir / "units",
                report_file,
                parallelism=self.jobs,
                destroy=self.destroy,
                lock=self.lock_state,
                json_into=self.stream,
            )
            try:
                self.code = terragrunt.stream(self.args, self.root, self.env, self.on_line)
            finally:
                self.pool.shutdown(wait=True)
                for run in self.units.values():
                    self._drop_stream(run)
            written = ""  # Terragrunt's run report; none when it stopped before writing it
            with contextlib.suppress(OSError):
                written = report_file.read_text()
            report = runlog.run_report(written, self.root_text)
        # every unit's upstream secrets, before any log is written: the run's shared
        # lines go into every unit's log, whichever unit printed them
        for run in self.units.values():
            self._learn(run)
        results: dict[str, Result] = {}
        for path, run in self.units.items():  # DAG order: a dependency's result is known first
            results[path] = result = self._result(run, report.get(path), results)
            if run.learned and result.status == Status.ERROR:
                results[path] = result = replace(result, error=run.learned)
            if proc.interrupted() and result.error and result.status in FAILED:
                results[path] = result = replace(result, error=f"interrupted: {result.error}")
                self.unrun.discard(path)
            if path in self.unrun:
                continue  # run_batch plans it again in a process of its own, and reports it then
            if (
                result.status != Status.NOT_PLANNED
            ):  # like one process per unit: nothing ran, no log
                self._write_log(run, result)
            self._report(run, result)
        return results

    def _base(self, t: Target) -> Result:
        log = unit_dir(self.out_dir, t.path) / "plan.log"
        return settled(
            t, Status.ERROR, destroy=t.destroy, log_file=log.relative_to(self.out_dir).as_posix()
        )

    def _result(
        self, run: _UnitRun, entry: Mapping[str, Any] | None, done: Mapping[str, Result]
    ) -> Result:
        t = run.target
        base = replace(
            self._base(t),
            seconds=(run.ended - run.started)
            if run.ended is not None and run.started is not None
            else 0.0,
        )
        outcome = run.shown.result() if run.shown is not None else None
        if isinstance(outcome, PlanSummary):
            udir = unit_dir(self.out_dir, t.path)
            plan_path = store.plan_path(self.out_dir, t.path)
            text_path, text = save_plan_text(udir, "".join(run.stdout))
            return from_plan(
                base,
                outcome,
                plan_file=plan_path.relative_to(self.out_dir).as_posix(),
                plan_sha256=store.sha256_file(plan_path),
                text_file=text_path.relative_to(self.out_dir).as_posix(),
                plan_text=text,
                mocked_dependencies=mocked_dependencies(
                    "\n".join(self.warnings), t.run_dir, t.path
                ),
                exit_code=0,
            )
        if isinstance(outcome, str):
            return replace(base, error=outcome)
        result = str((entry or {}).get("Result", ""))
        cause = str((entry or {}).get("Cause") or "").strip() or None
        if result == "early exit":
            failed = failed_dependency(t.dependencies, done) or cause or "upstream"
            return replace(dependency_failed(t, failed), seconds=base.seconds)
        if run.finished is not None or result == "failed":
            return replace(
                base, error=self._failure(run, run.finished.error if run.finished else cause)
            )
        if run.protected:
            return replace(base, error=protected_reason(t.path))
        why = (
            terragrunt.error_summary("\n".join(self.shared))
            if self.shared
            else f"exit code {self.code}"
        )
        if self.code != 0:
            self.unrun.add(t.path)
        return replace(
            base, error=f"terragrunt did not plan this unit (exit code {self.code}): {why}"
        )

    def _failure(self, run: _UnitRun, cause: str | None) -> str:
        text = "\n".join(run.log)
        too_large = verify.too_large(
            run.target.run_dir, run.target.path, f"{text}\n{cause or ''}", self.env
        )
        if too_large is not None:
            return too_large
        if "ERROR" in text or "Error:" in text:
            summary = terragrunt.error_summary(text)
            return summary if not cause or cause[:80] in summary else f"{summary}\n{cause}"
        return cause or terragrunt.error_summary(text) or "failed"

    def _write_log(self, run: _UnitRun, result: Result) -> None:
        unit_dir(self.out_dir, run.target.path).mkdir(parents=True, exist_ok=True)
        head = (
            f"$ {' '.join(self.args[:2])} --all … plan{' -destroy' if self.destroy else ''}"
            f"  ({len(self.units)} unit(s) in one run; this unit's lines)\n"
        )
        withheld = "(output withheld: the sensitive outputs of {} could not be read)"
        unknown = [r.target.path for r in self.units.values() if r.learned and _ran(r)]
        body = withheld.format("this unit's dependencies") if run.learned else "\n".join(run.log)
        shared = (
            "\n--- the whole run's warnings and errors ---\n"
            + (
                withheld.format("the dependencies of " + ", ".join(unknown))
                if unknown
                else "\n".join(self.shared)
            )
            if self.shared
            else ""
        )
        tail = f"\n[{result.status}{': ' + result.error.splitlines()[0] if result.error else ''}]\n"
        outdir.write_text(
            unit_dir(self.out_dir, run.target.path) / "plan.log", head + body + shared + tail
        )


def _ran(run: _UnitRun) -> bool:
    """Terragrunt started the unit (a unit that exited early printed nothing of its own)."""
    return run.started is not None or run.finished is not None or bool(run.log)
