"""Benchmark the legs: the plan's critical path with 1, 4 and 16 legs, and the merge step.

The tree: the generated one of benchmarks/gentree.py (`--units`, 11,024 by
default: tiers of 100 units, groups of 10 whose units form a dependency chain),
committed on `main`; a branch edits the `tier.hcl` of `--tiers` hosted tiers,
which affects every unit of those tiers (the executor `hosted`).

For each leg count N (`--legs`, default 1 4 16):

1. `invoke matrix --base main --max-legs N`, timed as a whole command (warm:
   the model is cached by the first, untimed run), gives the legs;
2. each leg's plan time is computed from the split: the sum over its units of
   the per-unit plan time. The generated units pin modules that exist nowhere,
   so they cannot be planned; the per-unit time is measured on units that can
   (`--unit-seconds`, default: the figure of benchmarks/bench_plan.py, 31.15 s
   for 200 units planned by one `invoke plan --jobs 2`, docs/benchmarks.md), or
   given. The legs run one after another on one machine in this model; on
   GitHub each is its own runner, so the critical path is the longest leg.
3. the merge: leg folders of N legs (each unit's summary entry with its gate,
   counts and resource changes, and a plan text of `--text-bytes`) merged by
   `invoke report --merge`, timed as a whole command, checked (every unit once).

Prints a markdown table (for docs/benchmarks.md) and, with --json FILE, the raw
figures.

Usage (from the repository root, after ./dev setup):

    .venv/bin/python benchmarks/bench_legs.py --units 11024 --tiers 15 --json legs.json
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchenv import sh
from gentree import generate

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from tooling.core.gates import Gate  # noqa: E402
from tooling.core.planjson import COUNT_KEYS, PlanSummary, ResourceChange  # noqa: E402
from tooling.core.results import Result  # noqa: E402

#: benchmarks/bench_plan.py, 200 units, `invoke plan --jobs 2` (docs/benchmarks.md)
DEFAULT_UNIT_SECONDS = 31.15 / 200


def timed(cwd: Path, *args: str) -> tuple[float, str]:
    start = time.perf_counter()
    result = sh(cwd, *args, check=True)
    return time.perf_counter() - start, result.stdout


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


def leg_folders(root: Path, legs: list[list[str]], text_bytes: int) -> list[Path]:
    """One plan folder per leg, as `invoke plan --leg` writes them (summary.json with the
    leg record, each unit's plan text under units/)."""
    folders = []
    text = ("  # resource changed\n" * (text_bytes // 20 + 1))[:text_bytes]
    counts = dict.fromkeys(COUNT_KEYS, 0) | {"update": 1}
    for n, units in enumerate(legs, 1):
        folder = root / f"plan-hosted-{n}-of-{len(legs)}"
        docs = []
        for path in units:
            rel = f"units/{path}/plan.txt"
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_text(text)
            change = ResourceChange(
                f"terraform_data.{path.replace('/', '_')}", "terraform_data", "update"
            )
            docs.append(
                Result(
                    path,
                    "t",
                    "hosted",
                    "modified",
                    "changes",
                    counts=dict(counts),
                    summary=PlanSummary(dict(counts), (change,)),
                    text_file=rel,
                    seconds=DEFAULT_UNIT_SECONDS,
                    gate=Gate("auto", ()),
                ).to_json()
            )
        doc = {
            "version": 1,
            "base": "b" * 40,
            "head": "a" * 40,
            "executor": "hosted",
            "tools": {"opentofu": "1.12.6"},
            "interrupted": False,
            "worktree": {"dirty": False, "files": [], "digest": None},
            "leg": {"id": folder.name[5:], "index": n, "count": len(legs), "units": units},
            "units": docs,
        }
        (folder / "summary.json").write_text(json.dumps(doc))
        folders.append(folder)
    return folders


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--units", type=int, default=11024)
    parser.add_argument("--tiers", type=int, default=15, help="hosted tiers whose tier.hcl changes")
    parser.add_argument("--legs", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--unit-seconds", type=float, default=DEFAULT_UNIT_SECONDS)
    parser.add_argument("--text-bytes", type=int, default=2000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-legs-"))
    rows = []
    try:
        tree = work / "tree"
        generate(tree, args.units)
        sh(tree, "git", "init", "--quiet", "--initial-branch=main", check=True)
        sh(tree, "git", "add", "--all", check=True)
        sh(tree, "git", "commit", "--quiet", "-m", "generated tree", check=True)
        make_change(tree, args.tiers)
        # warms the model cache (the matrix job's model is as warm as `invoke affected`'s)
        sh(tree, sys.executable, "-m", "invoke", "matrix", "--base", "main", check=True)
        for n in args.legs:
            seconds, out = timed(
                tree,
                sys.executable,
                "-m",
                "invoke",
                "matrix",
                "--base",
                "main",
                "--max-legs",
                str(n),
            )
            legs = [e["units"] for e in json.loads(out)["include"]]
            plan = [len(units) * args.unit_seconds for units in legs]
            row = {
                "legs_asked": n,
                "legs": len(legs),
                "units": sum(map(len, legs)),
                "largest_leg": max(map(len, legs)),
                "smallest_leg": min(map(len, legs)),
                "matrix_s": round(seconds, 2),
                "plan_sum_s": round(sum(plan), 1),
                "plan_max_s": round(max(plan), 1),
                "merge_s": None,
            }
            if len(legs) > 1:
                merged = work / f"merged-{n}"
                folders = leg_folders(work / f"legs-{n}", legs, args.text_bytes)
                argv = [
                    "report",
                    *[a for f in folders for a in ("--merge", str(f))],
                    "--out",
                    str(merged),
                ]
                row["merge_s"] = round(timed(tree, sys.executable, "-m", "invoke", *argv)[0], 2)
                got = json.loads((merged / "summary.json").read_text())
                assert len(got["units"]) == row["units"], "the merge lost units"
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"per-unit plan time: {args.unit_seconds:.3f} s")
    print(
        "| legs (asked / made) | units | largest / smallest leg | `invoke matrix` | plan, sum of legs | plan, critical path (longest leg) | `invoke report --merge` |"
    )
    print("|---|--:|--:|--:|--:|--:|--:|")
    for r in rows:
        merge = f"{r['merge_s']:.2f} s" if r["merge_s"] is not None else "(none: one leg)"
        print(
            f"| {r['legs_asked']} / {r['legs']} | {r['units']} | {r['largest_leg']} / {r['smallest_leg']} | "
            f"{r['matrix_s']:.2f} s | {r['plan_sum_s']:.1f} s | {r['plan_max_s']:.1f} s | {merge} |"
        )
    if args.json:
        args.json.write_text(
            json.dumps({"unit_seconds": args.unit_seconds, "rows": rows}, indent=2)
        )


if __name__ == "__main__":
    main()
