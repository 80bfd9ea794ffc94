"""Plan units one Terragrunt process each, in DAG order with a worker pool (a
ready queue), and keep what reviewers and apply need.

(:mod:`tooling.engine.plan.batchplanner` plans many units through one Terragrunt process
and gives the same results.) Per unit: ``terragrunt plan -out=<abs path>
-json-into=<abs path>`` (its stdout is the human plan text, already redacted by
OpenTofu; the file, OpenTofu's machine-readable UI of the same run). A plan whose
stream shows no change, drift or changed output is summarised from the stream
alone; any other runs ``tofu show -json`` on the saved plan in Terragrunt's
working directory (cheaper than a second ``terragrunt show``, which would
resolve every dependency again), for the values the stream does not hold: the
attributes that change, and what to redact. The raw JSON is never written to
disk: it holds sensitive values in clear. Only the summary (addresses, actions,
counts) and the redacted text are kept.

A failing unit never stops independent units; its dependents are
``not-planned``.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol, TextIO

from tooling.core.plan.outcomes import (
    dependency_failed,
    failed_dependency,
    from_plan,
    presets,
    settled,
)
from tooling.core.plan.results import Result
from tooling.core.plan.status import Status
from tooling.core.plan.targets import Target
from tooling.core.text import redact
from tooling.engine import secrets
from tooling.engine.plan import store
from tooling.engine.rules import verify
from tooling.errors import ToolingError
from tooling.io import outdir, proc, redacting, terragrunt
from tooling.model.policy import Policy
from tooling.model.units import Unit


class PlanCommand(Protocol):
    """What one plan runs: a unit's ``terragrunt`` (:class:`TerragruntPlan`), or
    plain ``tofu`` in an application's folder (:mod:`tooling.commands.apptier`).
    :func:`plan_unit` does the rest the same way for both."""

    @property
    def ok_codes(self) -> tuple[int, ...]:
        """The plan's exit codes that mean success."""
        ...

    def prepare(self, log: Path) -> None:
        """Runs before the plan (e.g. ``tofu init``), its output kept in ``log``;
        a :class:`ToolingError` makes the unit an ``error``."""
        ...

    def plan_args(self, plan_path: Path) -> list[str]:
        """The plan command line, saving the plan at ``plan_path``."""
        ...

    def secrets(self) -> set[str]:
        """Sensitive values the plan's text may show in clear (learned before it is written)."""
        ...

    def show(self, plan_path: Path) -> dict[str, Any]:
        """The saved plan as ``show -json`` (kept in memory only)."""
        ...


@dataclass(frozen=True)
class TerragruntPlan:
    """``terragrunt plan`` in the unit's folder; ``tofu show -json`` in Terragrunt's
    working directory."""

    target: Target
    env: Mapping[str, str]
    #: policy.toml: what the verifier allows
    policy: Policy
    lock: bool = True
    detailed_exitcode: bool = False

    @property
    def ok_codes(self) -> tuple[int, ...]:
        return (0, 2) if self.detailed_exitcode else (0,)

    def prepare(self, log: Path) -> None:
        # the rule's verifier: a unit that breaks it is refused, never planned
        target = self.target
        verify.before_plan(target.run_dir, target.path, target.tier, self.env, self.policy)

    def plan_args(self, plan_path: Path) -> list[str]:
        return terragrunt.plan_args(
            plan_path,
            destroy=self.target.destroy,
            lock=self.lock,
            detailed_exitcode=self.detailed_exitcode,
            json_into=store.stream_beside(plan_path),
        )

    def secrets(self) -> set[str]:
        # Terragrunt passes a dependency's outputs as plain inputs: the plan text
        # shows an upstream's sensitive values in clear.
        return upstream_secrets(self.target, self.env)

    def show(self, plan_path: Path) -> dict[str, Any]:
        run_dir = self.target.run_dir
        work = terragrunt.work_dir(run_dir / ".terragrunt-cache", run_dir / "terragrunt.hcl")
        return terragrunt.plan_json(terragrunt.tofu_show_args(plan_path), work, self.env)


def plan_unit(
    target: Target,
    out_dir: Path,
    env: Mapping[str, str],
    *,
    policy: Policy,
    lock: bool = True,
    detailed_exitcode: bool = False,
    command: PlanCommand | None = None,
) -> Result:
    """Plan one unit under ``policy`` (its verifier's allowlists, the attributes it
    declares sensitive); every failure becomes an ``error`` result, never an exception.

    ``lock=False`` plans without taking the state lock; with
    ``detailed_exitcode`` exit code 2 ("changes") is a success too, kept in
    ``Result.exit_code``. ``command`` replaces the unit's Terragrunt plan (and
    then ``lock`` and ``detailed_exitcode`` are its own business).
    """
    cmd = command or TerragruntPlan(
        target, env, policy, lock=lock, detailed_exitcode=detailed_exitcode
    )
    started = time.monotonic()
    udir = store.unit_dir(out_dir, target.path)
    udir.mkdir(parents=True, exist_ok=True)
    plan_path = store.plan_path(out_dir, target.path).resolve()
    store.stream_beside(plan_path).unlink(missing_ok=True)
    log = udir / "plan.log"
    outdir.write_text(log, "")

    def rel(p: Path) -> str:
        return p.relative_to(out_dir.resolve()).as_posix()

    base = settled(target, Status.ERROR, destroy=target.destroy, log_file=rel(log.resolve()))
    ran: terragrunt.Run | None = None
    args: list[str] = []
    known = False  # every sensitive value the output may hold is registered
    try:
        if not target.run_dir.is_dir():
            raise ToolingError(f"{target.path}: folder not found at the revision being planned")
        cmd.prepare(log)
        args = cmd.plan_args(plan_path)
        ran = terragrunt.run(args, target.run_dir, env)
        # Learn every sensitive value the output may show before anything is written.
        secrets.register(cmd.secrets())
        known = True
        if ran.returncode not in cmd.ok_codes or not plan_path.exists():
            output = ran.stderr + "\n" + ran.stdout
            raise ToolingError(
                verify.too_large(target.run_dir, target.path, output, env)
                or terragrunt.error_summary(output)
            )
        summary = store.summary_of(
            terragrunt.take_stream(store.stream_beside(plan_path)),
            lambda: cmd.show(plan_path),
            policy.sensitive_attributes,
        )
        text_path, text = save_plan_text(udir, ran.stdout)
        read = from_plan(
            base,
            summary,
            plan_file=rel(plan_path),
            plan_sha256=store.sha256_file(plan_path),
            text_file=rel(text_path.resolve()),
            plan_text=text,
            mocked_dependencies=mocked_dependencies(ran.stderr, target.run_dir, target.path),
            exit_code=ran.returncode,
        )
        return replace(read, seconds=time.monotonic() - started)
    except ToolingError as exc:
        return replace(base, error=str(exc), seconds=time.monotonic() - started)
    except ValueError as exc:
        return replace(
            base, error=f"unreadable plan JSON: {exc}", seconds=time.monotonic() - started
        )
    finally:
        # never left in the report folder: its diagnostics are not redacted
        with contextlib.suppress(OSError):
            store.stream_beside(plan_path).unlink(missing_ok=True)
        if ran is not None:
            output = (
                f"{ran.stdout}{ran.stderr}"
                if known
                else "(output withheld: the sensitive outputs of this unit's dependencies could not be read)"
            )
            outdir.append_text(log, f"$ {' '.join(args)}\n{output}\n[exit {ran.returncode}]\n")


def upstream_secrets(target: Target, env: Mapping[str, str]) -> set[str]:
    """The sensitive output values of ``target``'s dependencies (read from their state)."""
    root = target.run_dir
    for _ in Path(target.path).parts:
        root = root.parent
    found: set[str] = set()
    for dep in target.dependencies:
        dep_dir = root / dep
        if (dep_dir / "terragrunt.hcl").is_file():
            found |= redact.sensitive_outputs(terragrunt.outputs_json(dep_dir, env))
    return found


def learn_secrets(
    shown: Mapping[str, Any], path: str, run_dir: Path, unit: Unit | None, env: Mapping[str, str]
) -> str | None:
    """Before a saved plan (``shown``) is applied (or a plan's output shown), register what
    the output may echo: the plan's sensitive values, and the sensitive outputs of the
    dependencies of the model's ``unit`` (the plan holds them as plain inputs). None, or
    why they could not be read."""
    secrets.register(redact.sensitive_in_plan(shown))
    deps = unit.dependencies if unit is not None else ()
    try:
        secrets.register(upstream_secrets(Target(path, "", "", "", run_dir, deps), env))
    except ToolingError as exc:
        return f"stopped: the sensitive outputs of its dependencies could not be read ({exc})"
    return None


_MOCKED = re.compile(
    r"Config (\S+) is a dependency of (\S+) that has no outputs, but mock outputs provided"
)


def mocked_dependencies(log: str, run_dir: Path, unit_path: str) -> tuple[str, ...]:
    """Repository paths of the dependencies whose mock outputs Terragrunt used for
    *this* unit (read from its warnings; warnings about deeper links are ignored)."""
    own = (run_dir / "terragrunt.hcl").resolve()
    found: set[str] = set()
    for dep, dependent in _MOCKED.findall(log):
        if Path(dependent).resolve() == own:
            rel = os.path.relpath(Path(dep).resolve().parent, run_dir.resolve())
            found.add(posixpath.normpath(f"{unit_path}/{rel}"))
    return tuple(sorted(found))


def save_plan_text(udir: Path, stdout: str) -> tuple[Path, str]:
    """Write the unit's human plan (redacted) to ``udir/plan.txt``; the path and that text."""
    text = redacting.redact(_plan_text(stdout))
    return outdir.write_text(udir / "plan.txt", text), text


def _plan_text(stdout: str) -> str:
    """The human plan, from the first resource line or the 'No changes' sentence on."""
    lines = stdout.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(
            (
                "OpenTofu used the selected providers",
                "No changes.",
                "OpenTofu will perform",
                "Changes to Outputs",
            )
        ):
            return "\n".join(lines[i:]).rstrip() + "\n"
    return stdout


class Progress:
    """Queued / planning / done, per unit: a live status line on a terminal, plain lines in CI."""

    def __init__(self, total: int, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.total = total
        self.done = 0
        self.running: set[str] = set()
        self.live = self.stream.isatty() and not os.environ.get("CI")
        self.lock = threading.Lock()

    def _erase_line(self) -> None:
        """Carriage return and erase-line: written past the terminal escaping of the
        tooling's streams (which shows any other control character literally)."""
        write = getattr(self.stream, "write_control", self.stream.write)
        write("\r\033[K")

    def _status(self) -> None:
        if self.live:
            queued = self.total - self.done - len(self.running)
            self._erase_line()
            self.stream.write(
                f"  queued {queued} · planning {len(self.running)} · done {self.done}/{self.total}"
            )
            self.stream.flush()

    def start(self, path: str) -> None:
        with self.lock:
            self.running.add(path)
            if not self.live:
                self.stream.write(f"  planning {path}\n")
            self._status()

    def finish(self, result: Result) -> None:
        with self.lock:
            self.running.discard(result.path)
            self.done += 1
            if self.live:
                self._erase_line()
            c = result.counts
            detail = (
                f"+{c['create']} ~{c['update']} -{c['delete']} ±{c['replace']}"
                + "".join(f" {k} {c[k]}" for k in ("forget", "import", "move") if c.get(k))
                if result.status in (Status.CHANGES, Status.NO_CHANGES)
                else (result.error or "").splitlines()[0][:120]
                if result.error
                else ""
            )
            self.stream.write(
                f"  [{self.done}/{self.total}] {result.path}: {result.status} {detail}".rstrip()
                + "\n"
            )
            self._status()
            self.stream.flush()

    def close(self) -> None:
        if self.live:
            self._erase_line()
            self.stream.flush()


def run_all(
    targets: Sequence[Target],
    out_dir: Path,
    env: Mapping[str, str],
    *,
    jobs: int,
    progress: Progress | None = None,
    planner: Callable[[Target, Path, Mapping[str, str]], Result],
) -> list[Result]:
    """Plan ``targets`` as a ready queue: a unit starts once its dependencies finished,
    ``jobs`` at a time; results in the targets' order."""
    by_path = {t.path: t for t in targets}
    results: dict[str, Result] = {}
    pending = {t.path for t in targets}
    for preset in presets(targets):
        results[preset.path] = preset
        pending.discard(preset.path)
        if progress:
            progress.finish(preset)

    def ready(t: Target) -> bool:
        # finished, not merely started: a dependent's plan reads its upstream's
        # outputs inside the upstream's working directory, also through units
        # that are not planned (gitops -> os -> vms runs OpenTofu in vms's folder)
        return all(dep in results for dep in (*t.dependencies, *t.upstream) if dep in by_path)

    running: dict[Future[Result], str] = {}
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        while pending or running:
            for path in sorted(pending):
                if len(running) >= max(1, jobs):
                    break
                t = by_path[path]
                if not ready(t):
                    continue
                pending.discard(path)
                failed = failed_dependency(t.dependencies, results)
                if proc.interrupted():  # Ctrl-C or SIGTERM: nothing new starts
                    results[path] = settled(
                        t,
                        Status.NOT_PLANNED,
                        "not planned: the run was interrupted before it started",
                    )
                    if progress:
                        progress.finish(results[path])
                    continue
                if failed is not None:
                    results[path] = dependency_failed(t, failed)
                    if progress:
                        progress.finish(results[path])
                    continue
                if progress:
                    progress.start(path)
                running[pool.submit(planner, t, out_dir, env)] = path
            if not running:
                for path in sorted(pending):  # unreachable for a DAG; never spin
                    t = by_path[path]
                    results[path] = settled(
                        t, Status.NOT_PLANNED, "not planned: its dependencies never finished"
                    )
                pending.clear()
                break
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in done:
                path = running.pop(fut)
                results[path] = fut.result()
                if progress:
                    progress.finish(results[path])
    if progress:
        progress.close()
    return [results[t.path] for t in targets]
