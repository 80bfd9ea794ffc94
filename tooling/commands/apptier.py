"""The per-application tier: ``invoke app-plan`` and ``invoke app-apply``.

An application team owns a folder of plain OpenTofu code (``terraform/`` in its
own repository). The tooling plans and applies it with the foundation's report
(:mod:`tooling.core.report`) and gates (:mod:`tooling.core.gates`), but never with
Terragrunt, and never against the foundation's state:

- the state lives at ``apps/<app>/terraform.tfstate`` in the app-tier bucket
  (``IAC_APP_STATE_BUCKET``, with ``IAC_APP_STATE_REGION`` and
  ``IAC_APP_STATE_ENDPOINT``, which default to the foundation's
  ``IAC_STATE_REGION``/``IAC_STATE_ENDPOINT``), or locally under
  ``.iac/app-state/apps/<app>/`` when no bucket is set. The backend *type* is
  set by a generated override file (``zz_iac_backend_override.tf``, written
  into the folder for the run and removed after it), its settings by
  ``-backend-config`` on ``tofu init``; whatever backend the folder declares
  is replaced;
- refused before anything runs: an app name outside ``^[a-z0-9-]+$``; any
  backend configuration in the folder (``backend`` blocks, ``*.tfbackend``
  files, ``terraform_remote_state`` sources) that points at the foundation
  (a key or prefix under ``live/``, a foundation bucket) or at another app's
  ``apps/<other>/`` prefix; an app-tier bucket that is a foundation bucket; a
  resource type outside ``[apps] allowed_resource_types`` of policy.toml in
  the folder's configuration (root and local modules);
- checked again on the plan itself (``resource_changes``, which includes
  remote modules) after ``app-plan`` and once more before ``app-apply``
  applies: a plan that creates, updates or keeps a resource of a type not in
  the allowlist is refused (deleting one is allowed: it removes it).

The pure parts (name, state location, argument lists, the checks) are in
:mod:`tooling.core.apps`; here the app's folder is read and ``tofu`` runs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tooling.core.apps import (
    APPS_PREFIX,
    CONFIG_SUFFIXES,
    EXECUTOR,
    OVERRIDE_FILE,
    OVERRIDE_HEADER,
    TIER,
    AppPolicy,
    AppState,
    Found,
    apply_args,
    check_name,
    config_problems,
    foundation_buckets,
    init_args,
    override_text,
    parse_policy,
    plan_args,
    plan_problems,
    refuse,
    scan_hcl,
    scan_json,
    settings_hcl,
    state_for,
    state_problems,
)
from tooling.core.declared import parse_policy as parse_declared
from tooling.core.declared import values_in_plan
from tooling.core.record import (
    ApplyRun,
    UnitApply,
    binding_problems,
    earlier_applied,
    exit_code,
    record_document,
)
from tooling.core.results import Result, Status
from tooling.engine import apprule, planstore
from tooling.errors import ToolingError, UsageError
from tooling.io import config, git, outdir, proc, terragrunt
from tooling.io.ui import say
from tooling.io.workspace import Workspace
from tooling.model import hcl


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


# --------------------------------------------------------------------------- runs


def resolve_dir(directory: Path) -> Path:
    app_dir = directory.resolve()
    if not app_dir.is_dir():
        raise UsageError(f"--dir {directory}: no such folder")
    if not any(
        p.name.endswith(CONFIG_SUFFIXES) for p in app_dir.iterdir() if p.name != OVERRIDE_FILE
    ):
        raise UsageError(f"--dir {directory}: no OpenTofu files (*.tf, *.tf.json, *.tofu) in it")
    return app_dir


def app_env(ws: Workspace, app: str) -> dict[str, str]:
    """Environment for tofu: non-interactive, module URL rewrites, and a data directory outside the app folder."""
    rewrites = ws.settings.module_rewrites
    env = terragrunt.base_env(config.git_rewrite_env(rewrites) if rewrites else {})
    env["TF_DATA_DIR"] = str(ws.root / ".iac" / "app-work" / app / "data")
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


def prepare(ws: Workspace, app: str, directory: Path) -> Prepared:
    """Name, state location and configuration checks: everything before tofu runs (the
    tools are checked by the task's preamble)."""
    name = check_name(app)
    policy = parse_policy(ws.policy)
    app_dir = resolve_dir(directory)
    state = state_for(name, ws.root, os.environ)
    say(f"app {name}: {app_dir.name}/ with {state.describe()}")
    buckets = foundation_buckets(policy, os.environ)
    found, env = scan_config(app_dir), app_env(ws, name)
    refuse(
        state_problems(state, buckets)
        + config_problems(found, name, policy, buckets)
        + apprule.before_tofu(ws.policy, found, env),
        name,
    )
    return Prepared(name, app_dir, policy, state, env)


def _init(prep: Prepared, log: Path) -> None:
    ran = terragrunt.run(init_args(prep.app_dir, prep.state), prep.app_dir, prep.env, log)
    if ran.returncode != 0:
        raise ToolingError(
            f"`tofu init` failed: {terragrunt.error_summary(ran.stderr + chr(10) + ran.stdout)}"
        )


def _show(prep: Prepared, plan_file: Path) -> dict[str, Any]:
    return planstore.show_in(prep.app_dir, plan_file, prep.env, chdir=prep.app_dir)


def plan(ws: Workspace, *, app: str, directory: Path, out: Path | None = None) -> int:
    """``invoke app-plan``: plan the app's folder; write OUT/summary.json and OUT/comment.md."""
    out_dir = (out or ws.root / ".iac" / "app-plans" / check_name(app)).resolve()
    # checked and locked now; emptied only once the app's configuration passed its checks
    with outdir.ReportDir.claim(out_dir, outdir.PLAN_LAYOUT, root=ws.root) as folder:
        prep = prepare(ws, app, directory)
        folder.reset()
        return _plan_into(ws, prep, folder)


@dataclass
class AppPlan:
    """``tofu init`` then ``tofu plan`` in the app's folder: the command
    :func:`tooling.engine.unitplanner.plan_unit` runs for an app. The saved plan's
    resource types are checked when it is read (``refused``)."""

    prep: Prepared
    lock: bool
    ok_codes: tuple[int, ...] = (0,)
    refused: list[str] = field(default_factory=list)

    def prepare(self, log: Path) -> None:
        _init(self.prep, log)
        refuse(apprule.after_init(self.prep.env, self.prep.state), self.prep.app)

    def plan_args(self, plan_path: Path) -> list[str]:
        return plan_args(self.prep.app_dir, plan_path, lock=self.lock)

    def secrets(self) -> set[str]:
        return set()  # no dependencies: no upstream value reaches the plan as a plain input

    def show(self, plan_path: Path) -> dict[str, Any]:
        data = _show(self.prep, plan_path)
        self.refused = plan_problems(data, self.prep.policy)
        return data


def _plan_into(ws: Workspace, prep: Prepared, folder: outdir.ReportDir) -> int:
    from tooling.core import gates, report
    from tooling.core.results import with_gates
    from tooling.core.settle import settled
    from tooling.engine.summary import summary_document, write_summary
    from tooling.engine.unitplanner import Target, plan_unit

    out_dir = folder.path
    target = Target(
        f"{APPS_PREFIX}{prep.app}",
        TIER,
        EXECUTOR,
        "named",
        prep.app_dir,
        gate_class=prep.policy.gate,
    )
    # Pull request plans run with the app's read-only role and are never
    # applied (main re-plans): they do not take the state lock.
    command = AppPlan(prep, lock=os.environ.get("GITHUB_EVENT_NAME") != "pull_request")
    try:
        with (
            backend_override(prep.app_dir, prep.state.backend),
            proc.forwarding_interrupts("the app plan"),
        ):
            declared = parse_declared(ws.policy)  # policy.toml [sensitive_attributes]
            result = plan_unit(target, out_dir, prep.env, command=command, declared=declared)
    except ToolingError as exc:
        result = settled(target, Status.ERROR, str(exc))
    interrupted = proc.interrupted()
    if command.refused and result.status != Status.ERROR and result.plan_file:
        planstore.discard(planstore.stored(out_dir, result.plan_file))  # refused: nothing to apply
        result = replace(
            result,
            status=Status.ERROR,
            plan_file=None,
            plan_sha256=None,
            error="refused: " + "; ".join(command.refused),
        )
    (result,) = with_gates([result], gates.parse_policy(ws.policy))
    doc = summary_document(
        [result],
        base=None,
        head="",
        executor=None,
        root=ws.root,
        policy=gates.parse_policy(ws.policy),
        interrupted=interrupted,
    )
    doc["head"] = app_commit(prep.app_dir)  # the app repository's commit, when the folder is in one
    doc["app"] = {"name": prep.app, "dir": prep.app_dir.name, "state": prep.state.to_json()}
    write_summary(out_dir, doc)
    rendered = report.render([result], head=doc["head"], interrupted=interrupted)
    folder.write_text("comment.md", rendered)
    say(report.table([result]))
    folder.job_summary(rendered)
    say(f"wrote {out_dir / 'summary.json'} and {out_dir / 'comment.md'}")
    if interrupted:
        return 130
    return 1 if result.status == Status.ERROR else 0


def _apply_one(
    ws: Workspace,
    prep: Prepared,
    plan_file: Path,
    run: ApplyRun,
    record: Callable[[str, str, str], None],
    *,
    approve_manual: bool,
    claimed: str,
) -> None:
    """Init, check the saved plan's resource types once more, decide its gate from
    the saved plan itself (never from summary.json), apply it."""
    from tooling.core import gates, redact
    from tooling.core.planjson import summarize
    from tooling.engine import secrets
    from tooling.engine.applier import outcome

    log = plan_file.parent / "apply.log"
    raw = ws.root / ".iac" / "apply-output" / f"app-{prep.app}.out"
    try:
        with backend_override(prep.app_dir, prep.state.backend):
            _init(prep, log)
            refused = apprule.after_init(prep.env, prep.state)
            if refused:
                record("refused", "; ".join(refused), claimed)
                return
            shown = _show(prep, plan_file)
            secrets.register(redact.sensitive_in_plan(shown))
            secrets.register(values_in_plan(shown, parse_declared(ws.policy)))
            refused = plan_problems(shown, prep.policy)
            if refused:
                record("refused", "; ".join(refused), claimed)
                return
            reviewed = summarize(shown)
            if not reviewed.has_changes:
                record("no-changes", "the saved plan changes nothing", "none")
                return
            gate = gates.decide(
                status=Status.CHANGES,
                declared=prep.policy.gate,
                summary=reviewed,
                destroy=False,
                policy=gates.parse_policy(ws.policy),
            )
            if gate.decision == "manual" and not approve_manual:
                note = "" if gate.decision == claimed else f" (summary.json said {claimed})"
                record(
                    "waiting-approval",
                    "manual gate: " + gates.reasons_text(gate) + note,
                    gate.decision,
                )
                return
            args = apply_args(prep.app_dir, plan_file)
            raw.parent.mkdir(parents=True, exist_ok=True)
            raw.write_text("")
            code, interrupted = proc.run_to_file(args, output=raw, cwd=prep.app_dir, env=prep.env)
    except ToolingError as exc:
        record("failed", str(exc), claimed)
        return
    run.interrupted = interrupted
    output = raw.read_text(errors="replace")
    outdir.append_text(log, f"$ {' '.join(args)}\n{output}\n[exit {code}]\n")
    raw.unlink(missing_ok=True)
    record(*outcome(code, output, interrupted), gate.decision)


def apply(
    ws: Workspace, *, app: str, directory: Path, plans: Path, approve_manual: bool = False
) -> int:
    """``invoke app-apply``: apply exactly the reviewed plan in PLANS, behind the same gate as the foundation."""
    from tooling.engine.applier import finish, read_record

    prep = prepare(ws, app, directory)
    plans_dir = plans.resolve()
    summary_path = plans_dir / "summary.json"
    if not summary_path.is_file():
        raise ToolingError(
            f"{summary_path}: no summary.json; run `invoke app-plan --app {prep.app} --out {plans}` first"
        )
    try:
        summary: dict[str, Any] = json.loads(summary_path.read_text())
    except ValueError as exc:
        raise ToolingError(f"{summary_path}: not valid JSON ({exc}); re-plan") from None
    meta = summary.get("app") or {}
    if meta.get("name") != prep.app:
        raise ToolingError(
            f"{summary_path}: these plans are for app {meta.get('name')!r}, not {prep.app!r}"
        )
    if meta.get("state") != prep.state.to_json():
        raise ToolingError(
            f"{summary_path}: the plan was made against {meta.get('state')}, this run would use "
            f"{prep.state.describe()}: re-plan with the same state settings"
        )
    units = summary.get("units") or []
    if len(units) != 1:
        raise ToolingError(
            f"{summary_path}: expected one unit (apps/{prep.app}), found {len(units)}"
        )
    try:
        unit = Result.from_json(units[0])
    except (ValueError, AttributeError) as exc:
        raise ToolingError(
            f"{summary_path}: the unit is not a planned unit ({exc}); re-plan"
        ) from None
    path = unit.path
    claimed = unit.gate.decision if unit.gate is not None else "none"
    run = ApplyRun()
    started_at = datetime.now(UTC).replace(microsecond=0).isoformat()
    folder = outdir.ReportDir.existing(plans_dir, outdir.PLAN_LAYOUT, root=ws.root)
    with folder:
        previous = read_record(plans_dir, summary)

        def record(result: str, reason: str, gate: str, earlier: bool = False) -> None:
            run.units.append(UnitApply(path, result, reason, gate=gate, earlier=earlier))
            say(f"  {path}: {result}" + (f" ({reason})" if reason else ""))

        status = unit.status
        before: dict[str, Any] = next(
            (u for u in previous.get("units", []) if u.get("path") == path), {}
        )
        kept = earlier_applied(path, before, claimed)
        if kept is not None:
            record(kept.result, kept.reason, kept.gate, True)
        elif status == Status.NO_CHANGES:
            record("no-changes", "", claimed)
        elif status != Status.CHANGES:
            record(
                "refused",
                f"plan status is {status}" + (f": {unit.error}" if unit.error else ""),
                claimed,
            )
        else:
            plan_file = planstore.stored(plans_dir, unit.plan_file)
            commit = app_commit(prep.app_dir)
            problems = binding_problems(
                unit,
                plan_sha256=planstore.digest(plan_file),
                head=commit or "",
                summary_head=summary.get("head") or "",
                tools_now={t.name: t.version for t in ws.checked_tools},
                tools_then=summary.get("tools") or {},
            )
            if problems:
                record("refused", "; ".join(problems), claimed)
            else:
                _apply_one(
                    ws, prep, plan_file, run, record, approve_manual=approve_manual, claimed=claimed
                )
        doc = record_document(
            run,
            order=[path],
            earlier=previous,
            head=app_commit(prep.app_dir),
            plans_head=summary.get("head"),
            approve_manual=approve_manual,
            started_at=started_at,
        )
        finish(
            folder,
            {"app": prep.app, **doc},
            run,
            {**summary, "head": summary.get("head") or "no-commit"},
        )
    return exit_code(run)
