"""Benchmark the rule's verifier against the plans it guards, on the embedded default.

The tree: a fresh git copy of the example (root.hcl, live/, policy.toml), local
state, the sandbox module catalog. Per repeat, in one process:

  per-unit  for each of the 7 units: the verifier alone (its two
            `terragrunt render` runs, in parallel) and then the unit's whole
            plan through the per-unit planner (`plan_unit`, which verifies
            first); the verifier's share is verify / (plan - verify).
  batch     the batch planner's verification of all 7 units (`verify_many`,
            `--jobs` at a time), then the whole batch plan (`run_batch`, which
            verifies first); the share is verify / (batch - verify).

The first repeat starts with empty `.terragrunt-cache` folders (module fetch,
`tofu init`); later repeats plan warm. Figures are wall seconds.

Usage (from the repository root, after ./dev setup):

    .venv/bin/python benchmarks/bench_verify.py --repeat 3 --jobs 2 --json results.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchenv import sh  # noqa: E402

from tooling.commands import verify  # noqa: E402
from tooling.commands.batch import run_batch  # noqa: E402
from tooling.commands.plans import Target, plan_unit  # noqa: E402
from tooling.io import toolchain  # noqa: E402
from tooling.io.workspace import Workspace  # noqa: E402


def build_tree(dest: Path) -> Path:
    dest.mkdir(parents=True)
    for name in ("root.hcl", ".tool-versions", "policy.toml", "tasks.py", ".gitignore"):
        shutil.copy2(REPO / name, dest / name)
    shutil.copytree(
        REPO / "live", dest / "live", ignore=shutil.ignore_patterns(".terragrunt-cache")
    )
    sh(dest, "git", "init", "--quiet", "--initial-branch=main", check=True)
    sh(dest, "git", "add", "--all", check=True)
    sh(dest, "git", "commit", "--quiet", "-m", "example", check=True)
    return dest


def targets(ws: Workspace) -> list[Target]:
    model = ws.model()
    return [
        Target(p, u.tier, u.executor, "named", ws.root / p, u.dependencies)
        for p, u in ((p, model.units[p]) for p in model.order)
    ]


def cpu() -> float:
    """CPU seconds (user + system) of every child process this one waited for, so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def one_repeat(ws: Workspace, jobs: int, out: Path) -> dict[str, Any]:
    env = ws.tool_env
    rows: dict[str, Any] = {"per_unit": {}, "batch": {}}
    for t in targets(ws):
        start, c0 = time.perf_counter(), cpu()
        found = verify.violations(t.run_dir, t.path, t.tier, env)
        verified, verified_cpu = time.perf_counter() - start, cpu() - c0
        assert not found, found
        start, c0 = time.perf_counter(), cpu()
        result = plan_unit(t, out / "per-unit", env)
        planned, planned_cpu = time.perf_counter() - start, cpu() - c0
        assert result.status in ("changes", "no-changes"), result.error
        rows["per_unit"][t.path] = {
            "verify": verified,
            "plan": planned,
            "verify_cpu": verified_cpu,
            "plan_cpu": planned_cpu,
        }
    all_targets = targets(ws)
    start, c0 = time.perf_counter(), cpu()
    refused = verify.verify_many([(t.run_dir, t.path, t.tier) for t in all_targets], env, jobs=jobs)
    verified, verified_cpu = time.perf_counter() - start, cpu() - c0
    assert not refused, refused
    start, c0 = time.perf_counter(), cpu()
    results = run_batch(all_targets, out / "batch", env, jobs=jobs)
    planned, planned_cpu = time.perf_counter() - start, cpu() - c0
    assert all(r.status in ("changes", "no-changes") for r in results), [r.error for r in results]
    rows["batch"] = {
        "verify": verified,
        "plan": planned,
        "verify_cpu": verified_cpu,
        "plan_cpu": planned_cpu,
        "units": len(all_targets),
    }
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--json", type=Path, help="write every figure here")
    args = parser.parse_args()
    toolchain.ensure_bin_dir_on_path()
    with tempfile.TemporaryDirectory(prefix="bench-verify-") as tmp:
        os.environ.setdefault("IAC_CACHE_DIR", str(Path(tmp) / "cache"))
        ws = Workspace(build_tree(Path(tmp) / "infra"))
        repeats = [one_repeat(ws, args.jobs, Path(tmp) / f"out{i}") for i in range(args.repeat)]
    for label, picked in (("cold", repeats[:1]), ("warm", repeats[1:])):
        if not picked:
            continue
        for kind in ("", "_cpu"):
            units = [v for r in picked for v in r["per_unit"].values()]
            verifies = [v["verify" + kind] for v in units]
            plans = [v["plan" + kind] for v in units]
            shares = [v["verify" + kind] / (v["plan" + kind] - v["verify" + kind]) for v in units]
            bv = statistics.median(r["batch"]["verify" + kind] for r in picked)
            bp = statistics.median(r["batch"]["plan" + kind] for r in picked)
            print(
                f"{label} {'CPU' if kind else 'wall'}: per unit verify median "
                f"{statistics.median(verifies):.2f} s (max {max(verifies):.2f}), its plan median "
                f"{statistics.median(plans):.2f} s, share median {statistics.median(shares):.0%} "
                f"(max {max(shares):.0%}); batch of 7: verify {bv:.2f} s of {bp:.2f} s "
                f"({bv / (bp - bv):.0%})"
            )
    if args.json:
        args.json.write_text(json.dumps(repeats, indent=2))


if __name__ == "__main__":
    main()
