"""Benchmark `invoke plan` against bare Terragrunt on a sandbox tree.

The tree: `--units` copies of the example's DNS unit (`live/cloud/z<i>`), each
pinning the sandbox DNS stand-in, with local state, all applied first so plans
compare against real state. Two scenarios, each timed as whole commands in
fresh processes, median of `--repeat` runs:

(a) one changed unit (a ref bump on a branch):
    - `invoke plan --base main`                       (plans just that unit)
    - `terragrunt plan` in that unit's folder         (the bare baseline)
    - `terragrunt run --all plan` over the whole tree (what "plan everything" costs)
(b) 16 independent changed units:
    - `invoke plan --base main --jobs 2`
    - `terragrunt run --all --parallelism 2 plan` restricted to the same 16
      units (one `--filter ./<path>` per unit: union).

Usage (from the repository root, after ./dev setup):

    .venv/bin/python benchmarks/bench_plan.py --units 200 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tooling.io.workspace import Workspace  # noqa: E402

GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}


def sh(
    cwd: Path, *args: str, env: dict[str, str] | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        args,
        cwd=cwd,
        env={**os.environ, **GIT_ENV, **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )
    if check and result.returncode != 0:
        raise SystemExit(
            f"{' '.join(args)} failed ({result.returncode}):\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
        )
    return result


def timed(cwd: Path, *args: str, env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    sh(cwd, *args, env=env)
    return time.perf_counter() - start


def build_tree(dest: Path, units: int) -> list[str]:
    dest.mkdir(parents=True)
    for name in ("root.hcl", ".tool-versions", "policy.toml", "tasks.py", ".gitignore"):
        shutil.copy2(REPO / name, dest / name)
    (dest / "live/cloud").mkdir(parents=True)
    shutil.copy2(REPO / "live/cloud/tier.hcl", dest / "live/cloud/tier.hcl")
    template = (REPO / "live/cloud/dns/terragrunt.hcl").read_text()
    paths = []
    for i in range(units):
        unit = dest / "live/cloud" / f"z{i:03d}"
        unit.mkdir()
        (unit / "terragrunt.hcl").write_text(
            template.replace('"example.net"', f'"zone{i}.example.net"')
        )
        paths.append(f"live/cloud/z{i:03d}")
    sh(dest, "git", "init", "--quiet", "--initial-branch=main")
    sh(dest, "git", "add", "--all")
    sh(dest, "git", "commit", "--quiet", "-m", "sandbox tree")
    return paths


def bump(tree: Path, units: list[str], branch: str) -> None:
    sh(tree, "git", "checkout", "--quiet", "main")
    sh(tree, "git", "checkout", "--quiet", "-B", branch)
    for unit in units:
        path = tree / unit / "terragrunt.hcl"
        path.write_text(path.read_text().replace("?ref=v1.1.0", "?ref=v1.2.0"))
    sh(tree, "git", "commit", "--quiet", "-am", f"bump {len(units)} units")


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--units", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    invoke = [sys.executable, "-m", "invoke"]
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-plan-") as tmp:
        tree = Path(tmp) / "repo"
        paths = build_tree(tree, args.units)
        env = dict(Workspace(tree).tool_env)
        # apply everything once, so every plan below compares against real state
        print(f"applying {len(paths)} units (set-up, not timed)", file=sys.stderr, flush=True)
        sh(
            tree / "live",
            "terragrunt",
            "run",
            "--all",
            "--non-interactive",
            "--parallelism",
            "2",
            "--log-level",
            "error",
            "apply",
            "--",
            "-auto-approve",
            env=env,
        )

        # (a) one changed unit
        one = paths[17]
        bump(tree, [one], "one")
        ours, bare, whole = [], [], []
        for _ in range(args.repeat):
            ours.append(
                timed(
                    tree,
                    *invoke,
                    "plan",
                    "--base",
                    "main",
                    "--out",
                    str(Path(tmp) / "out-a"),
                    env=env,
                )
            )
            bare.append(
                timed(
                    tree / one,
                    "terragrunt",
                    "plan",
                    "--non-interactive",
                    "--log-level",
                    "error",
                    "-input=false",
                    "-lock-timeout=0s",
                    env=env,
                )
            )
        for _ in range(max(1, args.repeat // 2)):
            whole.append(
                timed(
                    tree / "live",
                    "terragrunt",
                    "run",
                    "--all",
                    "--non-interactive",
                    "--log-level",
                    "error",
                    "plan",
                    env=env,
                )
            )
        results |= {
            "a_invoke_plan_s": median(ours),
            "a_bare_terragrunt_plan_s": median(bare),
            "a_run_all_plan_s": median(whole),
        }

        # (b) 16 independent changed units
        sixteen = paths[100:116]
        bump(tree, sixteen, "sixteen")
        ours, theirs = [], []
        include = [arg for p in sixteen for arg in ("--filter", f"./{p}")]
        for _ in range(args.repeat):
            ours.append(
                timed(
                    tree,
                    *invoke,
                    "plan",
                    "--base",
                    "main",
                    "--jobs",
                    "2",
                    "--out",
                    str(Path(tmp) / "out-b"),
                    env=env,
                )
            )
            theirs.append(
                timed(
                    tree,
                    "terragrunt",
                    "run",
                    "--all",
                    "--non-interactive",
                    "--log-level",
                    "error",
                    "--parallelism",
                    "2",
                    *include,
                    "plan",
                    env=env,
                )
            )
        results |= {
            "b_invoke_plan_jobs2_s": median(ours),
            "b_run_all_16_parallelism2_s": median(theirs),
        }
        summary = json.loads((Path(tmp) / "out-b" / "summary.json").read_text())
        assert len(summary["units"]) == 16 and all(
            u["status"] == "changes" for u in summary["units"]
        )

    a_over = results["a_invoke_plan_s"] / results["a_bare_terragrunt_plan_s"] - 1
    a_speedup = results["a_run_all_plan_s"] / results["a_invoke_plan_s"]
    b_ratio = results["b_invoke_plan_jobs2_s"] / results["b_run_all_16_parallelism2_s"]
    results |= {"a_overhead": a_over, "a_speedup_vs_run_all": a_speedup, "b_ratio": b_ratio}
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    print(
        f"| scenario | invoke plan | terragrunt | ratio |\n|---|--:|--:|--:|\n"
        f"| (a) 1 changed unit of {args.units} vs bare `terragrunt plan` of it | {results['a_invoke_plan_s']:.2f} s | "
        f"{results['a_bare_terragrunt_plan_s']:.2f} s | overhead {a_over:+.0%} |\n"
        f"| (a) same vs `terragrunt run --all plan` of all {args.units} | {results['a_invoke_plan_s']:.2f} s | "
        f"{results['a_run_all_plan_s']:.2f} s | {a_speedup:.0f}x faster |\n"
        f"| (b) 16 changed units, `--jobs 2` vs `run --all --parallelism 2` on the same 16 | "
        f"{results['b_invoke_plan_jobs2_s']:.2f} s | {results['b_run_all_16_parallelism2_s']:.2f} s | {b_ratio:.2f} |"
    )


if __name__ == "__main__":
    main()
