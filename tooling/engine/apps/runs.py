"""How an application's folder is read and its ``tofu`` runs: the mechanism behind
``invoke app-plan`` and ``invoke app-apply`` (:mod:`tooling.commands.apptier`, which
says what the app tier guarantees).

Before ``tofu`` runs, :func:`prepare` checks the app's name, its state location and
its configuration (:func:`scan_config` reads the root module, its local modules and
``*.tfbackend`` files); :func:`backend_override` writes the generated backend file
for one run; :class:`AppPlan` is what the per-unit planner runs for an app;
:func:`apply_one` verifies and applies one reviewed plan behind the foundation's gate
and decision (:mod:`tooling.core.apply.decision`). The pure parts are in
:mod:`tooling.core.apps.tier`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tooling.core.apply.decision import Action, Facts, Verified, binding_problems, decide
from tooling.core.apply.record import ApplyRun, UnitApply
from tooling.core.apps.tier import (
    CONFIG_SUFFIXES,
    OVERRIDE_FILE,
    OVERRIDE_HEADER,
    AppState,
    Found,
    apply_args,
    check_name,
    config_problems,
    foundation_buckets,
    init_args,
    override_text,
    plan_args,
    plan_problems,
    refuse,
    scan_hcl,
    scan_json,
    settings_hcl,
    state_for,
    state_problems,
)
from tooling.core.plan.results import Result
from tooling.core.plan.sensitive import values_in_plan
from tooling.core.plan.status import Status
from tooling.core.plan.summary import Summary
from tooling.engine.apps import verify
from tooling.engine.plan import store
from tooling.errors import ToolingError, UsageError
from tooling.io import config, git, outdir, proc, terragrunt
from tooling.io.ui import say
from tooling.io.workspace import Workspace
from tooling.model import hcl
from tooling.model.policy import AppPolicy, Policy


def scan_config(app_dir: Path) -> list[Found]:
    """Resources, backends and remote state sources of the app's root module and its local modules,
    and the ``*.tfbackend`` files of the folder. Paths in ``where`` are relative to ``app_dir``'s parent."""
    found: list[Found] = []
    seen: set[Path] = set()
    queue = [app_dir.resolve()]
    anchor = app_dir.resolve().parent
    while queue:
        module_dir = queue.pop(0)
        if module_dir in seen or not module_dir.is_dir():
            continue
        seen.add(module_dir)
        for path in sorted(module_dir.iterdir()):
            name = path.name
            if not path.is_file() or name == OVERRIDE_FILE or not name.endswith(CONFIG_SUFFIXES):
                continue
            where = os.path.relpath(path, anchor)
            modules: list[str] = []
            if name.endswith(".json"):
                try:
                    scan_json(json.loads(path.read_text()), where, found, modules)
                except ValueError as exc:
                    raise ToolingError(f"{where}: not valid JSON ({exc})") from None
            else:
                scan_hcl(hcl.parse(path.read_bytes(), where), where, found, modules)
            queue.extend((module_dir / m).resolve() for m in modules)
    for path in sorted(app_dir.rglob("*.tfbackend")):
        if ".terraform" in path.parts:
            continue
        where = os.path.relpath(path, anchor)
        body = hcl.parse(path.read_bytes(), where)
        found.append(Found("tfbackend", f"{where}:1", "tfbackend", tuple(settings_hcl(body["a"]))))
    return found


def resolve_dir(directory: Path) -> Path:
    app_dir = directory.resolve()
    if not app_dir.is_dir():
        raise UsageError(f"--dir {directory}: no such folder")
    if not any(
        p.name.endswith(CONFIG_SUFFIXES) for p in app_dir.iterdir() if p.name != OVERRIDE_FILE
    ):
        raise UsageError(f"--dir {directory}: no OpenTofu files (*.tf, *.tf.json, *.tofu) in it")
    return app_dir


def app_env(root: Path, settings: config.Settings, app: str) -> dict[str, str]:
    """Environment for tofu: non-interactive, module URL rewrites, and a data directory
    outside the app folder (under the repository ``root``'s ``.iac``)."""
    rewrites = settings.module_rewrites
    env = terragrunt.base_env(config.git_rewrite_env(rewrites) if rewrites else {})
    env["TF_DATA_DIR"] = str(root / ".iac" / "app-work" / app / "data")
    return env


def app_commit(app_dir: Path) -> str | None:
    """The commit of the app's repository, when the folder is in one."""
    return git.commit_sha(app_dir, "HEAD")


@contextmanager
def backend_override(app_dir: Path, backend: str) -> Iterator[None]:
    """The generated override file that sets the backend type, for the duration of a run."""
    path = app_dir / OVERRIDE_FILE
    if path.exists() and not path.read_text().startswith(OVERRIDE_HEADER):
        raise ToolingError(
            f"{path}: this file name is reserved for the backend the pipeline generates; rename your file"
        )
    path.write_text(override_text(backend))
    try:
        yield
    finally:
        path.unlink(missing_ok=True)


@dataclass(frozen=True)
class Prepared:
    app: str
    app_dir: Path
    policy: AppPolicy
    state: AppState
    env: dict[str, str]


def prepare(
    app: str,
    directory: Path,
    *,
    root: Path,
    settings: config.Settings,
    policy: Policy,
) -> Prepared:
    """Name, state location and configuration checks: everything before tofu runs (the
    tools are checked by the task's preamble). ``root``: the foundation's repository,
    ``policy``: its policy.toml."""
    name = check_name(app)
    app_policy = policy.app_tier()
    app_dir = resolve_dir(directory)
    state = state_for(name, root, os.environ)
    say(f"app {name}: {app_dir.name}/ with {state.describe()}")
    buckets = foundation_buckets(app_policy, os.environ)
    found, env = scan_config(app_dir), app_env(root, settings, name)
    refuse(
        state_problems(state, buckets)
        + config_problems(found, name, app_policy, buckets)
        + verify.before_tofu(policy, found, env, app_dir),
        name,
    )
    return Prepared(name, app_dir, app_policy, state, env)


def init(prep: Prepared, log: Path) -> None:
    ran = terragrunt.run(init_args(prep.app_dir, prep.state), prep.app_dir, prep.env, log)
    if ran.returncode != 0:
        raise ToolingError(
            f"`tofu init` failed: {terragrunt.error_summary(ran.stderr + chr(10) + ran.stdout)}"
        )


def show(prep: Prepared, plan_file: Path) -> dict[str, Any]:
    return store.show_in(prep.app_dir, plan_file, prep.env, chdir=prep.app_dir)


@dataclass
class AppPlan:
    """``tofu init`` then ``tofu plan`` in the app's folder: the command
    :func:`tooling.engine.plan.unitplanner.plan_unit` runs for an app. The saved plan's
    resource types are checked when it is read (``refused``)."""

    prep: Prepared
    lock: bool
    ok_codes: tuple[int, ...] = (0,)
    refused: list[str] = field(default_factory=list)

    def prepare(self, log: Path) -> None:
        init(self.prep, log)
        refuse(verify.after_init(self.prep.env, self.prep.state), self.prep.app)

    def plan_args(self, plan_path: Path) -> list[str]:
        return plan_args(self.prep.app_dir, plan_path, lock=self.lock)

    def secrets(self) -> set[str]:
        return set()  # no dependencies: no upstream value reaches the plan as a plain input

    def show(self, plan_path: Path) -> dict[str, Any]:
        data = show(self.prep, plan_path)
        self.refused = plan_problems(data, self.prep.policy)
        return data


def apply_one(
    ws: Workspace,
    prep: Prepared,
    plans_dir: Path,
    summary: Summary,
    unit: Result,
    facts: Facts,
    run: ApplyRun,
) -> UnitApply:
    """Verify the saved plan of the app's ``unit`` (the binding: its digest, the app
    repository's commit, the tools; then, after ``tofu init``, the backend OpenTofu
    recorded and the saved plan's resource types), decide with what it shows
    (:func:`tooling.core.apply.decision.decide`: the gate from the saved plan itself,
    never from summary.json), and apply it when that is the decision. Its entry."""
    from tooling.engine.apply.applier import outcome

    plan_file = store.stored(plans_dir, unit.plan_file)
    commit = app_commit(prep.app_dir)
    problems = binding_problems(
        unit,
        plan_sha256=store.digest(plan_file),
        head=commit or "",
        summary_head=summary.head or "",
        tools_now={t.name: t.version for t in ws.checked_tools},
        tools_then=summary.tools,
    )
    if problems:
        return decide(unit, replace(facts, verified=Verified(tuple(problems)))).entry(unit.path)
    log = plan_file.parent / "apply.log"
    raw = ws.root / ".iac" / "apply-output" / f"app-{prep.app}.out"
    try:
        with backend_override(prep.app_dir, prep.state.backend):
            init(prep, log)
            decision = decide(unit, replace(facts, verified=_verified(ws, prep, plan_file)))
            if decision.action is not Action.APPLY:
                return decision.entry(unit.path)
            args = apply_args(prep.app_dir, plan_file)
            raw.parent.mkdir(parents=True, exist_ok=True)
            raw.write_text("")
            code, interrupted = proc.run_to_file(args, output=raw, cwd=prep.app_dir, env=prep.env)
    except ToolingError as exc:
        return UnitApply(unit.path, "failed", str(exc), gate=facts.claimed)
    run.interrupted = interrupted
    output = raw.read_text(errors="replace")
    outdir.append_text(log, f"$ {' '.join(args)}\n{output}\n[exit {code}]\n")
    raw.unlink(missing_ok=True)
    result, reason = outcome(code, output, interrupted)
    note = decision.note if result == "applied" else ""
    return UnitApply(unit.path, result, reason + note, gate=decision.gate)


def _verified(ws: Workspace, prep: Prepared, plan_file: Path) -> Verified:
    """What the app's saved plan is, once ``tofu init`` ran: the backend OpenTofu
    recorded, the plan read back (its secrets learnt), its resource types, its gate."""
    from tooling.core.plan import gates
    from tooling.core.plan.planjson import summarize
    from tooling.core.text import redact
    from tooling.engine import secrets

    refused = verify.after_init(prep.env, prep.state)
    if refused:
        return Verified(tuple(refused))
    shown = show(prep, plan_file)
    secrets.register(redact.sensitive_in_plan(shown))
    secrets.register(values_in_plan(shown, ws.policy.sensitive_attributes))
    refused = plan_problems(shown, prep.policy)
    if refused:
        return Verified(tuple(refused))
    reviewed = summarize(shown)
    if not reviewed.has_changes:
        return Verified(plan=reviewed)
    gate = gates.decide(
        status=Status.CHANGES,
        declared=prep.policy.gate,
        summary=reviewed,
        destroy=False,
        policy=ws.policy.gates,
    )
    return Verified(plan=reviewed, gate=gate)
