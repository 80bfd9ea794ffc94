"""Where the time of a single-unit `invoke plan` goes, step by step.

The tree: a fresh git copy of the example (7 units, the embedded default:
sandbox catalog, local state), one unit's file edited on a branch (a comment), so
`invoke plan --base main` plans exactly that unit. One untimed run first fills
the caches (the model, Terragrunt's module store, the unit's working copy).
Then, `--repeat` times, each a fresh process:

  whole     `invoke plan --base main` and a bare `invoke --list` (the
            interpreter and `invoke` start-up), wall and CPU (user + system of
            the process and every child), the load average before each pair;
  imports   `python -X importtime` of the same command: the modules imported
            beyond those `invoke --list` imports, by package;
  steps     `python -m cProfile` of the same command: the wall seconds of the
            main thread inside each step of `tooling.commands.plan.plan`
            (the plan operation, `tooling.engine.plan.operation.run_plan`)
            (cumulative, so a step's figure includes the processes it waited
            for: the plan's includes Terragrunt and OpenTofu).

Medians are printed. The command and the rows are in docs/benchmarks.md.

Usage (from the repository root, after ./dev setup):

    .venv/bin/python benchmarks/profile_plan.py --repeat 5 --json profile.json
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchenv import GIT_ENV, example_tree, sh

INVOKE = [sys.executable, "-m", "invoke"]
UNIT = "live/cloud/dns"

#: (step, file suffix, function name): cumulative wall seconds of the main thread
STEPS = (
    ("the whole task (tasks.pipeline.plan)", "tooling/tasks/pipeline.py", "plan"),
    ("first line (settings, HEAD's model)", "tooling/io/workspace.py", "describe"),
    ("policy.toml checked", "tooling/cli.py", "check_policy"),
    ("tools checked", "tooling/io/workspace.py", "check_tools"),
    ("working tree's model", "tooling/io/workspace.py", "current_model"),
    ("change detection", "tooling/engine/plan/affected.py", "worktree_affected"),
    ("git processes (all)", "tooling/io/git.py", "git"),
    ("preflight + render --all (waited)", "tooling/engine/plan/prepare.py", "preflight_rendered"),
    ("  of it: state preflight", "tooling/engine/rules/preflight.py", "check"),
    ("working copies: stale files", "tooling/engine/rules/workcopies.py", "prepare"),
    (
        "working copies: the check armed (before the render)",
        "tooling/engine/rules/workcopies.py",
        "arm_for",
    ),
    ("the plan (Terragrunt, OpenTofu, waited)", "tooling/engine/plan/batchplanner.py", "run_batch"),
    ("  of it: the verifier before the plan", "tooling/engine/rules/verify.py", "before_plan"),
    ("  of it: tofu show -json", "tooling/io/terragrunt.py", "plan_json"),
    ("summary.json", "tooling/engine/plan/planfolder.py", "summary_of"),
    ("report (comment.md)", "tooling/core/report/comment.py", "render"),
)


def whole(cwd: Path, *args: str, env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, children included) of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    ran = subprocess.run(
        args, cwd=cwd, env={**os.environ, **GIT_ENV, **(env or {})}, capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if ran.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{ran.stdout[-2000:]}\n{ran.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def imported(cwd: Path, *args: str) -> dict[str, float]:
    """{module: self import seconds} of ``python -X importtime`` of ``args``."""
    ran = subprocess.run(
        [sys.executable, "-X", "importtime", *args],
        cwd=cwd,
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
    )
    out: dict[str, float] = {}
    for line in ran.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)", line)
        if m:
            out[m.group(2)] = int(m.group(1)) / 1e6
    return out


def steps(cwd: Path, prof: Path, *args: str) -> dict[str, float]:
    subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(prof), *args],
        cwd=cwd,
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        check=True,
    )
    stats: Any = pstats.Stats(str(prof)).stats  # {(file, line, name): (cc, nc, tt, ct, callers)}
    out: dict[str, float] = {}
    for label, suffix, name in STEPS:
        out[label] = sum(
            v[3]
            for (file, _line, func), v in stats.items()
            if func == name and file.endswith(suffix)
        )
    return out


def package(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:3]) if parts[0] == "tooling" else parts[0]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # as on a user's machine
    with tempfile.TemporaryDirectory(prefix="profile-plan-") as tmp:
        tree = example_tree(Path(tmp) / "repo")
        hcl = tree / UNIT / "terragrunt.hcl"
        sh(tree, "git", "checkout", "--quiet", "-b", "bump", check=True)
        hcl.write_text(hcl.read_text() + "\n# bumped\n")
        sh(tree, "git", "commit", "--quiet", "-am", "bump", check=True)
        plan = [*INVOKE, "plan", "--base", "main", "--jobs", "2", "--out", str(Path(tmp) / "out")]
        whole(tree, *plan)  # untimed: caches and the working copy
        listed = imported(tree, "-m", "invoke", "--list")
        rows: dict[str, list[float]] = {}
        for i in range(args.repeat):
            rows.setdefault("load average (1 min)", []).append(os.getloadavg()[0])
            pair = [("invoke --list", [*INVOKE, "--list"]), ("invoke plan (1 unit)", plan)]
            for name, cmd in pair if i % 2 == 0 else reversed(pair):
                wall, cpu = whole(tree, *cmd)
                rows.setdefault(f"{name}, wall", []).append(wall)
                rows.setdefault(f"{name}, CPU", []).append(cpu)
            mods = imported(tree, *plan[1:])
            extra: dict[str, float] = {}
            for mod, secs in mods.items():
                if mod not in listed:
                    extra[package(mod)] = extra.get(package(mod), 0.0) + secs
            rows.setdefault("imports beyond invoke --list (count)", []).append(
                float(sum(1 for m in mods if m not in listed))
            )
            rows.setdefault("imports beyond invoke --list (s)", []).append(sum(extra.values()))
            for pkg, secs in extra.items():
                rows.setdefault(f"  import {pkg}", []).append(secs)
            for label, secs in steps(tree, Path(tmp) / f"p{i}.prof", *plan[1:]).items():
                rows.setdefault(label, []).append(secs)
        medians = {k: statistics.median(v) for k, v in rows.items()}
        for key, value in medians.items():
            if key.startswith("  import ") and value < 0.002:
                continue
            print(f"| {key} | {value:.3f} |")
        if args.json:
            args.json.write_text(json.dumps({"medians": medians, "runs": rows}, indent=2))


if __name__ == "__main__":
    main()
