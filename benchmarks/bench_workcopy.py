"""Benchmark the working-copy check (docs/rules.md, "working-copy") per unit.

On a copy of the example tree (embedded default: sandbox catalog, local state),
after one warm-up plan of every unit:

  prepare  what the pipeline does once per run before Terragrunt starts:
           work out every unit's expectation (one git fetch of the tags per
           module repository, one ls-tree per tag) and write the manifest.
  hook     the hook alone, as Terragrunt starts it: `python -I -S
           workcopy_hook.py MANIFEST UNIT` in the unit's working copy.
  plan     a bare `terragrunt plan` of one unit with the hook armed and with it
           unarmed (root.hcl then runs `true`), interleaved, repeat after repeat.
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

from tooling.engine import secrets, workcopies  # noqa: E402
from tooling.io import terragrunt  # noqa: E402
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

    with tempfile.TemporaryDirectory(prefix="bench-workcopy-") as tmp:
        root = example_tree(Path(tmp) / "infra")
        ws = Workspace(root)
        model = ws.model()
        units = [(p, root / p, model.units[p].source) for p in model.order]
        base = ws.tool_env
        cache = ws.settings.cache_dir
        root_file = ws.layout.root_file

        def arm() -> dict[str, str]:
            return workcopies.armed(units, base, root=root, root_file=root_file, cache_dir=cache)

        prepare = [timed(arm) for _ in range(args.repeat)]
        armed = arm()
        hook = json.loads(armed[workcopies.HOOK_ENV])

        # warm-up: every working copy initialised, the hook passing
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
        work = terragrunt.work_dir(unit_dir / ".terragrunt-cache", unit_dir / "terragrunt.hcl")
        hook_runs, hook_cpu = [], []
        for _ in range(args.repeat):
            hook_runs.append(timed(lambda: sh(work, *hook, str(unit_dir), check=True)))
            hook_cpu.append(CPU[-1])

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
        "hook_s": med(hook_runs),
        "plan_armed_s": med(one_on),
        "plan_unarmed_s": med(one_off),
        "batch_armed_s": med(all_on),
        "batch_unarmed_s": med(all_off),
    }
    rows["hook_cpu_s"] = med(hook_cpu)
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
