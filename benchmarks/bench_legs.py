"""Benchmark the legs: the plan's critical path with 1, 4 and 16 legs, and the merge step.

The tree: the generated one of benchmarks/gentree.py (`--units`, 11,024 by
default: tiers of 100 units, groups of 10 whose units form a dependency chain),
committed on `main`, its modules built as local git repositories with tags
(gentree.module_repos, mapped with IAC_MODULE_REWRITE), local state, nothing
applied: each unit's upstream output is mocked for plan. A branch edits the
`tier.hcl` of `--tiers` hosted tiers, which affects every unit of those tiers
(the executor `hosted`): 100 units a tier.

For each leg count N (`--legs`, default 1 4 16), one after another:

1. `invoke matrix --base main --max-legs N`, timed as a whole command (warm:
   the model is cached by a first, untimed run), gives the legs;
2. every leg is planned, one after another on this machine, each by a whole
   `invoke plan --base main --from-matrix M --leg ID --jobs J --out DIR`
   (wall and CPU seconds, the load average sampled before it); each leg's
   summary is checked: exactly its units, each `changes`. Before each
   configuration the affected units' `.terragrunt-cache` folders are removed,
   so each starts as a fresh runner would (the module and provider caches
   outside the tree stay warm, as a CI cache keeps them; an untimed warm-up
   plan of one unit per module fills them first);
3. the merge: `invoke report --merge` of the N legs' folders, timed as a
   whole command, checked (every unit once).

The sum of the legs is the runner time; the longest leg is the critical path
when each leg has its own runner (the Actions matrix).

Prints a markdown table (for docs/benchmarks.md) and, with --json FILE, the raw
figures.

Usage (from the repository root, after ./dev setup):

    nice -n 5 .venv/bin/python benchmarks/bench_legs.py --units 11024 --tiers 3 --json legs.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchenv import sh
from gentree import generate, module_repos

INVOKE = (sys.executable, "-m", "invoke")


def timed(cwd: Path, *args: str, env: dict[str, str]) -> tuple[float, float, str]:
    """Wall and CPU seconds (user + system of the command and every process it waited
    for) of one whole command, and its stdout; the benchmark stops if it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = sh(cwd, *args, env=env, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, result.stdout


def make_change(tree: Path, tiers: int) -> None:
    sh(tree, "git", "checkout", "--quiet", "-b", "wide")
    hosted = sorted(
        (p for p in (tree / "live").glob("t*/tier.hcl") if '"hosted"' in p.read_text()),
        key=lambda p: int(p.parent.name[1:]),
    )[:tiers]
    for tier in hosted:
        tier.write_text(
            re.sub(r'gate       = "auto"', 'gate       = "auto" # wide', tier.read_text())
        )
    sh(tree, "git", "add", "--all")
    sh(tree, "git", "commit", "--quiet", "-m", "touch the hosted tiers")


def check_leg(folder: Path, units: list[str]) -> None:
    """A leg's report holds exactly its units, each planned with changes."""
    got = json.loads((folder / "summary.json").read_text())["units"]
    assert sorted(u["path"] for u in got) == sorted(units), f"{folder}: not the leg's units"
    bad = [u["path"] for u in got if u["status"] != "changes"]
    assert not bad, f"{folder}: not planned with changes: {bad[:5]}"


def cold_units(tree: Path, units: list[str]) -> None:
    for unit in units:
        shutil.rmtree(tree / unit / ".terragrunt-cache", ignore_errors=True)


def run_configuration(
    tree: Path, work: Path, n: int, jobs: int, env: dict[str, str]
) -> dict[str, Any]:
    """Matrix, every leg's plan one after another, and the merge, for ``n`` legs."""
    matrix_s, _, out = timed(
        tree, *INVOKE, "matrix", "--base", "main", "--max-legs", str(n), env=env
    )
    matrix = work / f"matrix-{n}.json"
    matrix.write_text(out)
    entries = json.loads(out)["include"]
    units = [u for e in entries for u in e["units"]]
    cold_units(tree, units)
    legs = []
    for entry in entries:
        leg = entry.get("leg") or entry["executor"]  # an unsplit executor's entry is its leg
        folder = work / f"legs-{n}" / f"plan-{leg}"
        load = os.getloadavg()[0]
        wall, cpu, _ = timed(
            tree, *INVOKE, "plan", "--base", "main", "--from-matrix", str(matrix),
            "--leg", leg, "--jobs", str(jobs), "--out", str(folder), env=env,
        )  # fmt: skip
        check_leg(folder, entry["units"])
        legs.append(
            {
                "leg": leg,
                "units": len(entry["units"]),
                "wall_s": round(wall, 2),
                "cpu_s": round(cpu, 2),
                "load_1min": round(load, 2),
            }
        )
        print(f"{n} legs: {json.dumps(legs[-1])}", file=sys.stderr, flush=True)
    merged = work / f"merged-{n}"
    folders = [
        a for leg in legs for a in ("--merge", str(work / f"legs-{n}" / f"plan-{leg['leg']}"))
    ]
    merge_s, merge_cpu, _ = timed(tree, *INVOKE, "report", *folders, "--out", str(merged), env=env)
    got = json.loads((merged / "summary.json").read_text())["units"]
    assert sorted(u["path"] for u in got) == sorted(units), "the merge lost or doubled units"
    walls = [leg["wall_s"] for leg in legs]
    loads = [leg["load_1min"] for leg in legs]
    return {
        "legs_asked": n,
        "legs": len(legs),
        "units": len(units),
        "matrix_s": round(matrix_s, 2),
        "per_leg": legs,
        "plan_sum_s": round(sum(walls), 1),
        "plan_max_s": round(max(walls), 1),
        "plan_sum_cpu_s": round(sum(leg["cpu_s"] for leg in legs), 1),
        "seconds_per_unit": round(sum(walls) / len(units), 3),
        "merge_s": round(merge_s, 2),
        "merge_cpu_s": round(merge_cpu, 2),
        "load_1min": [min(loads), max(loads)],
    }


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| legs (asked / made) | units | each leg (units: wall s) | plan, sum of the legs (CPU) | "
        "plan, critical path (longest leg) | per unit | `invoke report --merge` | `invoke matrix` | load average |",
        "|---|--:|---|--:|--:|--:|--:|--:|--:|",
    ]
    for r in rows:
        each = ", ".join(f"{leg['units']}: {leg['wall_s']:.1f}" for leg in r["per_leg"])
        lines.append(
            f"| {r['legs_asked']} / {r['legs']} | {r['units']} | {each} | "
            f"{r['plan_sum_s']:.1f} s ({r['plan_sum_cpu_s']:.1f} s) | {r['plan_max_s']:.1f} s | "
            f"{r['seconds_per_unit']:.3f} s | {r['merge_s']:.2f} s | {r['matrix_s']:.2f} s | "
            f"{r['load_1min'][0]:.1f} to {r['load_1min'][1]:.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--units", type=int, default=11024)
    parser.add_argument(
        "--tiers", type=int, default=3, help="hosted tiers whose tier.hcl changes (100 units each)"
    )
    parser.add_argument("--legs", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--jobs", type=int, default=2, help="`invoke plan --jobs` of each leg")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    hosted_tiers = (args.units + 199) // 200  # tiers of 100 units, every other one hosted
    if not 1 <= args.tiers <= hosted_tiers:
        parser.error(
            f"--tiers must be 1 to {hosted_tiers} (the hosted tiers of {args.units} units)"
        )
    if not all(1 <= n <= 256 for n in args.legs):
        parser.error("--legs: each count must be 1 to 256 (GitHub's matrix limit)")
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    work = Path(tempfile.mkdtemp(prefix="bench-legs-"))
    rows = []
    try:
        tree = work / "tree"
        generate(tree, args.units)
        env = {"IAC_MODULE_REWRITE": module_repos(work / "modules")}
        sh(tree, "git", "init", "--quiet", "--initial-branch=main", check=True)
        sh(tree, "git", "add", "--all", check=True)
        sh(tree, "git", "commit", "--quiet", "-m", "generated tree", check=True)
        make_change(tree, args.tiers)
        # warms the model cache (the matrix job's model is as warm as `invoke affected`'s)
        sh(tree, *INVOKE, "matrix", "--base", "main", env=env, check=True)
        # warms the module and provider caches outside the tree: one unit per module
        warm = [f"live/t0/g{n // 10}/u{n % 10}" for n in range(20)]
        sh(tree, *INVOKE, "plan", "--jobs", str(args.jobs), "--out", str(work / "warm-up"),
           *[f"--unit={u}" for u in warm], env=env, check=True)  # fmt: skip
        for n in args.legs:
            rows.append(run_configuration(tree, work, n, args.jobs, env))
            print(json.dumps({k: v for k, v in rows[-1].items() if k != "per_leg"}),
                  file=sys.stderr, flush=True)  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps({"jobs": args.jobs, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
