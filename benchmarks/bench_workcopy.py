"""Benchmark the guard at the point of execution (docs/rules.md, "The point of
execution": the arguments, the environment, the working copy and the recorded backend,
before each OpenTofu command) per unit.

On a copy of the example tree (embedded default: sandbox catalog, local state),
after one warm-up plan of every unit:

  prepare  what the pipeline does once per run before Terragrunt starts: work out
           what every unit may run with (its module's files and variables: one
           `git ls-remote --tags` per module repository, one ls-tree per commit
           once; the root file's side from the model) and write guard.json.
  plan     a bare `terragrunt plan` of one unit with the guard armed
           (`TG_TF_PATH` names it) and with the pinned OpenTofu itself,
           interleaved, repeat after repeat.
  batch    `terragrunt run --all --parallelism J plan` over every unit, armed
           and unarmed, interleaved.

Usage (from the repository root, after ./dev setup):

    .venv/bin/python benchmarks/bench_workcopy.py --repeat 5
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

from benchenv import example_tree, sh  # noqa: E402

from tooling.engine import secrets  # noqa: E402
from tooling.engine.rules import execguard  # noqa: E402
from tooling.io import binpath, terragrunt  # noqa: E402
from tooling.io.workspace import Workspace  # noqa: E402

secrets.install()  # the redaction step every report write passes through, as a task's preamble installs it

CPU: list[float] = []  # CPU seconds (user + system) of the child processes of each timed call


def timed(fn: object) -> float:
    """Wall seconds of ``fn()``; its children's CPU seconds are appended to :data:`CPU`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    fn()  # type: ignore[operator]
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--unit", default="live/cloud/dns")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    binpath.ensure_bin_dir_on_path()

    with tempfile.TemporaryDirectory(prefix="bench-guard-") as tmp:
        root = example_tree(Path(tmp) / "infra")
        ws = Workspace(root)
        model = ws.model()
        units = [(p, root / p, model.units[p].source) for p in model.order]
        base = ws.tool_env
        cache = ws.settings.cache_dir

        def arm() -> dict[str, str]:
            return execguard.armed(units, base, cache_dir=cache, model=model, policy=ws.policy)[0]

        prepare = [timed(arm) for _ in range(args.repeat)]
        armed = arm()

        # warm-up: every working copy initialised, the guard passing
        plan_all = terragrunt.run_all_plan_args(
            [f"./{p}" for p, _d, _s in units],
            Path(tmp) / "plans",
            Path(tmp) / "report.json",
            parallelism=args.jobs,
        )
        warm = sh(root, *plan_all, env=armed)
        if warm.returncode != 0:
            raise SystemExit(f"warm-up plan failed:\n{warm.stderr[-3000:]}")

        unit_dir = root / args.unit
        plan_args = terragrunt.plan_args(Path(tmp) / "one.tfplan")
        one_on, one_off, all_on, all_off = [], [], [], []
        cpu: dict[str, list[float]] = {"one_on": [], "one_off": [], "all_on": [], "all_off": []}
        for _ in range(args.repeat):
            one_on.append(timed(lambda: sh(unit_dir, *plan_args, env=armed, check=True)))
            cpu["one_on"].append(CPU[-1])
            one_off.append(timed(lambda: sh(unit_dir, *plan_args, env=base, check=True)))
            cpu["one_off"].append(CPU[-1])
            all_on.append(timed(lambda: sh(root, *plan_all, env=armed, check=True)))
            cpu["all_on"].append(CPU[-1])
            all_off.append(timed(lambda: sh(root, *plan_all, env=base, check=True)))
            cpu["all_off"].append(CPU[-1])

    med = statistics.median
    n = len(units)
    rows: dict[str, float] = {
        "units": n,
        "prepare_s": med(prepare),
        "plan_armed_s": med(one_on),
        "plan_unarmed_s": med(one_off),
        "batch_armed_s": med(all_on),
        "batch_unarmed_s": med(all_off),
    }
    for key, values in cpu.items():
        rows[f"{key}_cpu_s"] = med(values)
    rows["plan_cpu_overhead_pct"] = 100 * (rows["one_on_cpu_s"] / rows["one_off_cpu_s"] - 1)
    rows["batch_cpu_overhead_pct"] = 100 * (rows["all_on_cpu_s"] / rows["all_off_cpu_s"] - 1)
    rows["plan_overhead_pct"] = 100 * (rows["plan_armed_s"] / rows["plan_unarmed_s"] - 1)
    rows["batch_overhead_pct"] = 100 * (rows["batch_armed_s"] / rows["batch_unarmed_s"] - 1)
    rows["batch_per_unit_s"] = (rows["batch_armed_s"] - rows["batch_unarmed_s"]) / n
    for key, value in rows.items():
        print(f"{key:>22}: {value:.3f}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
