"""Benchmark `invoke affected` against `terragrunt find --filter '[BASE...HEAD]'`.

For each tree size: generate a tree (benchmarks/gentree.py), commit it on
`main`, then for each scenario make a branch with one commit and time, as
whole commands in fresh processes on the same tree in the same run:

- `invoke affected --base main --json`, cold (no .iac/cache) and warm;
- `terragrunt find --filter '[main...HEAD]' --json`;
- the floor: a bare `invoke --list` in the same tree (interpreter and invoke
  start-up, no task), paired with each warm run (back to back, which first
  alternating); the median of the pairs' ratios is given in wall and in CPU
  seconds (user + system), with the load average sampled before each pair.

Scenarios: a one-unit change (a module ref bump) and a shared-file change (a
group.hcl read by the ten units of its group with read_terragrunt_config).

Usage (from the repository root, with the environment set up by ./dev setup):

    .venv/bin/python benchmarks/bench_affected.py --sizes 1000 5000 --repeat 5

Prints a markdown table (for docs/benchmarks.md) and, with --json FILE, the raw
timings.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchenv import sh
from gentree import generate

CPU: dict[str, float] = {"last": 0.0}


def timed(cwd: Path, *args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Wall seconds of one whole command and its result; its CPU seconds (user + system)
    are left in ``CPU["last"]``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = sh(cwd, *args)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU["last"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, result


def scenario(tree: Path, name: str) -> None:
    sh(tree, "git", "checkout", "--quiet", "main")
    sh(
        tree,
        "git",
        "branch",
        "--quiet",
        "-D",
        "bench",
    )
    sh(tree, "git", "checkout", "--quiet", "-b", "bench")
    if name == "one-unit":
        unit = tree / "live/t0/g3/u4/terragrunt.hcl"
        unit.write_text(re.sub(r"ref=v1\.\d+\.0", "ref=v1.9.0", unit.read_text()))
    else:
        group = tree / "live/t0/g3/group.hcl"
        group.write_text(group.read_text().replace('prefix = "', 'prefix = "x-'))
    sh(tree, "git", "commit", "--quiet", "-am", f"bench: {name}")


def run(sizes: list[int], repeat: int, with_terragrunt: bool = True) -> list[dict[str, object]]:
    invoke = [sys.executable, "-m", "invoke", "affected", "--base", "main", "--json"]
    floor = [sys.executable, "-m", "invoke", "--list"]
    # Python writes its bytecode cache, as on a user's machine
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    tg = ["terragrunt", "find", "--filter", "[main...HEAD]", "--json", "--no-color"]
    rows: list[dict[str, object]] = []
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix=f"bench-{size}-") as tmp:
            tree = Path(tmp) / "repo"
            generate(tree, size)
            sh(tree, "git", "init", "--quiet", "--initial-branch=main")
            sh(tree, "git", "add", "--all")
            sh(tree, "git", "commit", "--quiet", "-m", "generated tree")
            for name in ("one-unit", "shared-file"):
                scenario(tree, name)
                cold, warm, tgs, lists, warm_cpu, list_cpu, loads = [], [], [], [], [], [], []
                selected = tg_selected = None
                for _ in range(repeat):
                    shutil.rmtree(tree / ".iac", ignore_errors=True)
                    seconds, result = timed(tree, *invoke)
                    assert result.returncode == 0, result.stderr
                    cold.append(seconds)
                    selected = len(json.loads(result.stdout)["units"])
                    loads.append(os.getloadavg()[0])
                    # the pair (floor, warm run) back to back, which first alternating
                    for side in ("floor", "warm") if len(loads) % 2 else ("warm", "floor"):
                        seconds, result = timed(tree, *(floor if side == "floor" else invoke))
                        assert result.returncode == 0, result.stderr
                        (lists if side == "floor" else warm).append(seconds)
                        (list_cpu if side == "floor" else warm_cpu).append(CPU["last"])
                    if not with_terragrunt:
                        continue
                    seconds, result = timed(tree, *tg)
                    assert result.returncode == 0, result.stderr
                    tgs.append(seconds)
                    tg_selected = len(json.loads(result.stdout))
                row = {
                    "units": size,
                    "scenario": name,
                    "selected": selected,
                    "terragrunt_selected": tg_selected,
                    "cold_s": statistics.median(cold),
                    "warm_s": statistics.median(warm),
                    "terragrunt_s": statistics.median(tgs) if tgs else None,
                    "invoke_list_s": statistics.median(lists),
                    "warm_over_list": statistics.median(
                        w / f for w, f in zip(warm, lists, strict=True)
                    ),
                    "warm_over_list_cpu": statistics.median(
                        w / f for w, f in zip(warm_cpu, list_cpu, strict=True)
                    ),
                    "load_average_1min": loads,
                }
                if tgs:
                    row["tg_over_cold"] = row["terragrunt_s"] / row["cold_s"]  # type: ignore[operator]
                    row["tg_over_warm"] = row["terragrunt_s"] / row["warm_s"]  # type: ignore[operator]
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


def floor_table(rows: list[dict[str, object]]) -> str:
    """Warm detection against the bare `invoke --list` start-up (medians of paired runs)."""
    out = [
        "| units | change | ours warm | `invoke --list` | ratio (wall) | ratio (CPU) | load average | target |",
        "|--:|---|--:|--:|--:|--:|--:|--:|",
    ]
    for r in rows:
        loads: list[float] = r["load_average_1min"]  # type: ignore[assignment]
        out.append(
            f"| {r['units']} | {r['scenario']} | {r['warm_s']:.2f} s | {r['invoke_list_s']:.2f} s | "
            f"{r['warm_over_list']:.2f}x | {r['warm_over_list_cpu']:.2f}x | "
            f"{min(loads):.1f} to {max(loads):.1f} | <= 1.5x |"
        )
    return "\n".join(out)


def table(rows: list[dict[str, object]]) -> str:
    out = [
        "| units | change | selected (ours / terragrunt) | ours cold | ours warm | terragrunt find | terragrunt ÷ cold | terragrunt ÷ warm |",
        "|--:|---|---|--:|--:|--:|--:|--:|",
    ]
    for r in rows:
        if r["terragrunt_s"] is None:
            out.append(
                f"| {r['units']} | {r['scenario']} | {r['selected']} / not run | "
                f"{r['cold_s']:.2f} s | {r['warm_s']:.2f} s | not run | | |"
            )
            continue
        out.append(
            f"| {r['units']} | {r['scenario']} | {r['selected']} / {r['terragrunt_selected']} | "
            f"{r['cold_s']:.2f} s | {r['warm_s']:.2f} s | {r['terragrunt_s']:.2f} s | "
            f"{r['tg_over_cold']:.1f}x | {r['tg_over_warm']:.1f}x |"
        )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--no-terragrunt",
        action="store_true",
        help="time only `invoke affected` (Terragrunt's find takes minutes on the largest trees)",
    )
    args = parser.parse_args()
    rows = run(args.sizes, args.repeat, with_terragrunt=not args.no_terragrunt)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    print(table(rows))
    print()
    print(floor_table(rows))


if __name__ == "__main__":
    main()
