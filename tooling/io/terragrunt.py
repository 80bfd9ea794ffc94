"""Thin wrapper around the terragrunt CLI (which drives tofu).

Argument lists are built by pure functions (tested as tables, after
terraform-python-testing-helper's ``parse_args``); the only process start is
through :func:`tooling.io.proc.run`. We do not use python-terraform: it has been
unmaintained since 2019 and knows nothing of Terragrunt; this module is all
the wrapper the pipeline needs.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tooling.errors import ToolingError
from tooling.io import outdir, proc
from tooling.model import encryption

_COMMON = ("--non-interactive", "--no-color", "--log-level", "warn", "--log-format", "bare")
#: the flags every Terragrunt call of the tooling passes
COMMON = _COMMON


def plan_args(
    out_file: Path,
    *,
    destroy: bool = False,
    lock_timeout: str = "0s",
    lock: bool = True,
    detailed_exitcode: bool = False,
    json_into: Path | None = None,
) -> list[str]:
    """``terragrunt plan``. ``lock=False`` plans without the state lock (a read-only
    identity cannot write lock files); ``detailed_exitcode`` makes exit code 2
    mean "succeeded, with changes"; ``json_into``: OpenTofu also writes its
    machine-readable UI there (``-json-into``, OpenTofu >= 1.12), while the human
    text still goes to stdout."""
    lock_arg = f"-lock-timeout={lock_timeout}" if lock else "-lock=false"
    args = ["terragrunt", *_COMMON, "plan", "-input=false", lock_arg, f"-out={out_file}"]
    if destroy:
        args.append("-destroy")
    if detailed_exitcode:
        args.append("-detailed-exitcode")
    if json_into is not None:
        args.append(f"-json-into={json_into}")
    return args


#: where each unit's OpenTofu writes its machine-readable UI in a ``run --all plan``,
#: relative to the unit's working copy (OpenTofu's data folder exists once it is
#: initialised); the batch adds a token of its own to the name
STREAM_DIR = ".terraform"


def run_all_plan_args(
    filters: Sequence[str],
    out_dir: Path,
    report_file: Path,
    *,
    parallelism: int,
    destroy: bool = False,
    lock_timeout: str = "0s",
    lock: bool = True,
    json_into: str | None = None,
) -> list[str]:
    """``terragrunt run --all plan`` over exactly the units the ``filters`` select.

    One Terragrunt process plans them all in DAG order, ``parallelism`` at a
    time; each unit's plan file lands in ``out_dir/<unit path>/tfplan.tfplan``
    and its outcome in the JSON ``report_file``. The log is JSON lines at debug
    level: the runner's debug markers say when each unit starts and finishes
    (see :mod:`tooling.core.plan.runlog`). A failing unit does not stop independent
    ones; its dependents exit early. ``json_into``: a path relative to each unit's
    working copy where its OpenTofu writes the machine-readable UI (``-json-into``).
    """
    lock_arg = f"-lock-timeout={lock_timeout}" if lock else "-lock=false"
    selection = [arg for query in filters for arg in ("--filter", query)]
    args = [
        "terragrunt",
        "run",
        "--all",
        "--non-interactive",
        "--no-color",
        "--log-format",
        "json",
        "--log-level",
        "debug",
        "--parallelism",
        str(max(1, parallelism)),
        *selection,
        "--no-filters-file",
        "--out-dir",
        str(out_dir),
        "--report-file",
        str(report_file),
        "--report-format",
        "json",
        "--summary-disable",
        "--",
        "plan",
        "-input=false",
        lock_arg,
    ]
    if destroy:
        args.append("-destroy")
    if json_into is not None:
        args.append(f"-json-into={json_into}")
    return args


def stream(
    args: list[str], cwd: Path, env: Mapping[str, str], on_line: Callable[[str, str], None]
) -> int:
    """Run a terragrunt command in ``cwd``, handing each output line to ``on_line`` as it arrives."""
    return proc.stream(args, on_line, cwd=cwd, env=env)


def apply_args(plan_file: Path, *, lock_timeout: str = "0s") -> list[str]:
    return [
        "terragrunt",
        *_COMMON,
        "apply",
        "-input=false",
        "-auto-approve",
        f"-lock-timeout={lock_timeout}",
        str(plan_file),
    ]


def providers_lock_args(platforms: Sequence[str], mirror: str | None = None) -> list[str]:
    """``terragrunt run -- providers lock`` with one ``-platform=`` per platform.

    Terragrunt (1.x forwards no unknown command: ``run --`` it is) downloads
    the unit's module source, auto-initialises it and runs OpenTofu's
    ``providers lock`` in that working copy, then copies the lock file back next
    to the unit's ``terragrunt.hcl``. Dependency outputs play no part in which
    providers a unit needs, and units usually allow mock outputs only for
    init/validate/plan: ``--no-dependency-outputs`` (the
    ``optional-dependency-outputs`` experiment of the pinned Terragrunt) skips
    them, so an unapplied dependency does not stop the lock. ``mirror``: consult this provider mirror instead
    of the origin registries (``https://...``: a network mirror, else a
    filesystem mirror folder), for providers published only there.
    """
    args = [
        "terragrunt",
        "run",
        "--experiment",
        "optional-dependency-outputs",
        "--no-dependency-outputs",
        *_COMMON,
        "--",
        "providers",
        "lock",
        *(f"-platform={p}" for p in platforms),
    ]
    if mirror:
        kind = "net" if mirror.startswith("https://") else "fs"
        args.append(f"-{kind}-mirror={mirror}")
    return args


def lock_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` for the one step that may write lock files: ``terragrunt providers lock``.

    Every other run keeps ``-lockfile=readonly``; here Terragrunt's auto-init must
    be able to install the providers the new configuration needs before the lock
    file is rewritten for every platform. It skips the backend (``-backend=false``):
    locking providers reads no state, and a bump job holds no state credentials.
    """
    return {**env, "TF_CLI_ARGS_init": "-backend=false"}


def render_args(config_file: Path | None = None) -> list[str]:
    """``terragrunt render --format json``: the unit's configuration as Terragrunt resolves it
    (includes merged, locals, functions and ``generate`` contents evaluated).

    Dependencies are not read (``--no-dependency-outputs``, the pinned Terragrunt's
    ``optional-dependency-outputs`` experiment): render then evaluates them with their
    mock outputs, without an OpenTofu run in each upstream. ``config_file``: render
    that file instead of the unit's ``terragrunt.hcl`` (in the same folder)."""
    return [
        "terragrunt",
        "render",
        "--experiment",
        "optional-dependency-outputs",
        "--no-dependency-outputs",
        *_COMMON,
        "--format",
        "json",
        *(["--config", str(config_file)] if config_file is not None else []),
    ]


def render_json(
    unit_dir: Path, env: Mapping[str, str], config_file: Path | None = None
) -> dict[str, Any]:
    """The unit's rendered configuration (:func:`render_args`) as a dict; a failure is a
    :class:`ToolingError` naming the unit."""
    ran = run(render_args(config_file), unit_dir, env)
    text = ran.stdout
    start = text.find("{")
    if ran.returncode != 0 or start < 0:
        raise ToolingError(
            f"{unit_dir.name}: `terragrunt render` failed, so the unit cannot be verified: "
            f"{error_summary(ran.stderr or ran.stdout)}"
        )
    try:
        data: dict[str, Any] = json.loads(text[start:])
    except ValueError as exc:
        raise ToolingError(f"{unit_dir.name}: `terragrunt render` printed no JSON: {exc}") from None
    return data


def init_args() -> list[str]:
    return ["terragrunt", *_COMMON, "init", "-input=false"]


def work_dir(download_dir: Path, unit_file: Path) -> Path:
    """The working copy Terragrunt made for a unit under ``download_dir``.

    The copy holding the unit's current ``terragrunt.hcl`` wins (an older
    source version leaves its copy behind), then the most recently initialised.
    """
    candidates = [p.parent for p in download_dir.rglob(".terraform") if p.is_dir()]
    if not candidates:
        raise ToolingError(f"no initialised working directory under {download_dir}")
    wanted = unit_file.read_bytes()
    own = [
        c
        for c in candidates
        if (c / "terragrunt.hcl").is_file() and (c / "terragrunt.hcl").read_bytes() == wanted
    ]
    return max(own or candidates, key=lambda p: (p / ".terraform").stat().st_mtime_ns)


def base_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for terragrunt/tofu children: non-interactive, reproducible."""
    env = {
        "TF_IN_AUTOMATION": "1",
        "TF_INPUT": "0",
        "TG_NON_INTERACTIVE": "true",
        "TG_NO_TIPS": "true",
        "CHECKPOINT_DISABLE": "1",
        # lock files are committed: a plan verifies against them and never rewrites them
        # (a provider change is made on purpose, with `terragrunt providers lock`; docs/bumps.md)
        "TF_CLI_ARGS_init": "-lockfile=readonly",
    }
    tofu = shutil.which("tofu")
    if tofu:
        env["TG_TF_PATH"] = tofu
    # A CLI config variable pointing at a missing file makes tofu print a
    # warning on every run; an empty config is what the user meant.
    cli_config = os.environ.get("TF_CLI_CONFIG_FILE")
    if cli_config and not Path(cli_config).exists():
        env["TF_CLI_CONFIG_FILE"] = os.devnull
    # the key of root.hcl's encryption.tf, from the environment only (never a file)
    env.update(encryption.tofu_env(os.environ))
    env.update(go_runtime_env(os.environ, memory_total()))
    env.update(extra or {})
    return env


#: how much more than its live heap a Go process (Terragrunt, OpenTofu, the guard)
#: grows before it collects garbage: 4x the default. A `run --all plan` of 16 small
#: units, short-lived processes all, takes 10 to 15 % less wall time (docs/benchmarks.md).
GO_GC_PERCENT = "400"


def go_runtime_env(environ: Mapping[str, str], mem_total: int | None) -> dict[str, str]:
    """The Go runtime settings of the tools' processes: collect garbage less often
    (``GOGC``), with a soft cap of a quarter of the memory this machine or container
    gives (``GOMEMLIMIT``) a process may not grow past without collecting. Nothing when
    the caller's environment sets either: the caller decides."""
    if "GOGC" in environ or "GOMEMLIMIT" in environ:
        return {}
    env = {"GOGC": GO_GC_PERCENT}
    if mem_total:
        env["GOMEMLIMIT"] = f"{max(mem_total // 4, 256 << 20) >> 20}MiB"
    return env


#: where a container's memory limit is read: cgroup v2, then v1
CGROUP_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")


def memory_limit(meminfo: str, cgroup_limits: Sequence[str]) -> int | None:
    """The memory in bytes a process here may use: the machine's (``MemTotal`` of
    ``/proc/meminfo``), or a container's limit (a cgroup's ``memory.max`` or
    ``memory.limit_in_bytes``) when that is smaller; None when neither is known.
    ``max`` and the huge numbers an unlimited cgroup v1 reports are no limit."""
    found: list[int] = []
    for line in meminfo.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "MemTotal:" and parts[1].isdigit():
            found.append(int(parts[1]) * 1024)
    found.extend(int(text.strip()) for text in cgroup_limits if text.strip().isdigit())
    return min(found) if found else None


def memory_total() -> int | None:
    """:func:`memory_limit` of this machine and its container; None where unknown."""

    def text(path: str) -> str:
        try:
            with open(path, encoding="ascii") as fh:
                return fh.read()
        except (OSError, ValueError):
            return ""

    return memory_limit(text("/proc/meminfo"), [text(path) for path in CGROUP_LIMITS])


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str


def run(args: list[str], unit_dir: Path, env: Mapping[str, str], log: Path | None = None) -> Run:
    """Run a terragrunt command in ``unit_dir``; keep its output in ``log`` when given.

    It runs in a process group of its own, so that an interrupt reaches
    OpenTofu once, through :func:`tooling.io.proc.forwarding_interrupts`."""
    result = proc.run(args, cwd=unit_dir, env=env, ok_codes=range(0, 256), own_group=True)
    if log is not None:
        outdir.append_text(
            log, f"$ {' '.join(args)}\n{result.stdout}{result.stderr}\n[exit {result.returncode}]\n"
        )
    return Run(result.returncode, result.stdout, result.stderr)


def take_stream(path: Path) -> str | None:
    """The machine-readable UI an OpenTofu plan wrote at ``path`` (``-json-into``), the
    file removed once read; None when there is none."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    path.unlink(missing_ok=True)
    return text


def tofu_show_args(plan_file: Path, chdir: Path | None = None) -> list[str]:
    """``tofu show -json PLAN`` (optionally with ``-chdir``): the plan as JSON."""
    return ["tofu", *([f"-chdir={chdir}"] if chdir else []), "show", "-json", str(plan_file)]


def plan_json(args: list[str], cwd: Path, env: Mapping[str, str]) -> dict[str, Any]:
    """Run a ``show -json`` command and parse its output; failures are ToolingErrors.

    The JSON holds sensitive values in clear: callers keep it in memory only.
    """
    shown = run(args, cwd, env)
    if shown.returncode != 0:
        raise ToolingError(
            f"`{' '.join(args[:1] + args[-3:-1])}` failed: {error_summary(shown.stderr or shown.stdout)}"
        )
    text = shown.stdout
    try:
        data: dict[str, Any] = json.loads(text[text.find("{") :])
    except ValueError as exc:
        raise ToolingError(f"`show -json` printed no JSON plan: {exc}") from None
    return data


def saved_plan_json(unit_dir: Path, plan_file: Path, env: Mapping[str, str]) -> dict[str, Any]:
    """A saved plan as JSON, read at apply time: in Terragrunt's working copy of the
    unit when there is one, else through ``terragrunt show -json`` (which
    initialises it: a fresh checkout, a job on another runner)."""
    try:
        work = work_dir(unit_dir / ".terragrunt-cache", unit_dir / "terragrunt.hcl")
    except ToolingError:
        return plan_json(["terragrunt", *_COMMON, "show", "-json", str(plan_file)], unit_dir, env)
    return plan_json(tofu_show_args(plan_file), work, env)


def outputs_json(unit_dir: Path, env: Mapping[str, str]) -> dict[str, Any]:
    """A unit's outputs as ``tofu output -json`` gives them (with ``sensitive`` marks).

    Read in Terragrunt's working copy of the unit when there is one (a dependent's
    plan makes it: Terragrunt reads the outputs there), else through
    ``terragrunt output -json``. Holds sensitive values in clear: keep in memory.
    """
    try:
        work: Path | None = work_dir(unit_dir / ".terragrunt-cache", unit_dir / "terragrunt.hcl")
    except ToolingError:
        work = None
    if work is not None:
        args, cwd = ["tofu", "output", "-json"], work
    else:
        args, cwd = ["terragrunt", *_COMMON, "output", "-json"], unit_dir
    ran = run(args, cwd, env)
    if ran.returncode != 0:
        raise ToolingError(
            f"cannot read the outputs of {unit_dir.name}: {error_summary(ran.stderr or ran.stdout)}"
        )
    text = ran.stdout
    start = text.find("{")
    try:
        data: dict[str, Any] = json.loads(text[start:]) if start >= 0 else {}
    except ValueError as exc:
        raise ToolingError(f"`output -json` of {unit_dir.name} printed no JSON: {exc}") from None
    return data


_LOCK_FALSE_ADVICE = re.compile(r"[^\n.]*-lock=false[^\n]*(\n[^\n]*not recommended\.)?")


def drop_lock_false_advice(text: str) -> str:
    """OpenTofu's lock error ends with advice to disable locking: never repeat it."""
    return _LOCK_FALSE_ADVICE.sub("", text)


#: a terminal colour or style code
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def error_summary(text: str, limit: int = 1200) -> str:
    """The useful part of a terragrunt/tofu failure: the `Error:` blocks, else the tail;
    terminal colour codes removed (``tofu show`` colours its errors)."""
    lines = [line.rstrip() for line in _ANSI.sub("", text).splitlines()]
    picked: list[str] = []
    capture = False
    for line in lines:
        stripped = line.strip("│╷╵ ").strip()
        if stripped.startswith("Error:") or "ERROR" in line[:40]:
            capture = True
        if capture and stripped:
            picked.append(stripped)
    summary = (
        "\n".join(picked) if picked else "\n".join(line for line in lines[-15:] if line.strip())
    )
    return shortened(drop_lock_false_advice(summary).strip(), limit)


def shortened(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters, cut after a whole line or sentence (never in
    the middle of one), saying it was cut."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    end = max(head.rfind("\n"), head.rfind(". ") + 1)
    return (head[:end] if end > 0 else head).rstrip() + " … (cut: the whole text is in the log)"


def state_addresses(unit_dir: Path, env: Mapping[str, str]) -> list[str]:
    """The resource addresses in a unit's state (``tofu state list``), read in Terragrunt's
    working copy when there is one (it takes no lock). An empty or missing state lists
    nothing; a state that cannot be read is a ToolingError."""
    try:
        work: Path | None = work_dir(unit_dir / ".terragrunt-cache", unit_dir / "terragrunt.hcl")
    except ToolingError:
        work = None
    if work is not None:
        args, cwd = ["tofu", "state", "list"], work
    else:
        args, cwd = ["terragrunt", *_COMMON, "state", "list"], unit_dir
    ran = run(args, cwd, env)
    text = ran.stdout + ran.stderr
    if ran.returncode != 0 and "No state file was found" not in text:
        raise ToolingError(f"cannot read the state of {unit_dir}: {error_summary(text)}")
    return [
        line.strip() for line in ran.stdout.splitlines() if line.strip() and ran.returncode == 0
    ]


def working_copy(unit_dir: Path) -> Path | None:
    """Terragrunt's working copy of a unit (where OpenTofu runs), or None when there is none."""
    try:
        return work_dir(unit_dir / ".terragrunt-cache", unit_dir / "terragrunt.hcl")
    except ToolingError:
        return None
