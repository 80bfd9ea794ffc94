"""Benchmark the scan before Terragrunt starts: what `invoke plan` reads and judges of the
files Terragrunt will parse, before any Terragrunt process (no tool runs here).

It times `tooling.engine.rules.before_terragrunt.refuse_before_terragrunt`, the step `invoke plan`,
`drift` and `adopt` run on the units to plan (with a warm model: the model is loaded
once, as the task has it already), in three cases:

  all       every unit planned (`plan --all`);
  one       the last unit of a dependency chain (its upstream units are in play);
  two-tiers one unit in each of two tiers (where a revision's verifier ran
            `render --all` from their common folder, every unit below it was in
            play; the static verifier starts no Terragrunt process);

and `invoke check`'s run of the rules (`tooling.commands.check.run`) once per tree.
Trees: the example (7 units) and trees from benchmarks/gentree.py (`--units`, each a
tree of that many units: chains of 10, 10 groups per tier). CPU seconds are user +
system of this process and its children (git's one call), per call, the median of
`--repeat` calls; "per unit" divides by the units planned.

`--tooling DIR` measures the `tooling` package found in DIR instead of this
checkout's (a checkout of another revision: the same cases before and after a change).

Usage (from the repository root, after ./dev setup):

    .venv/bin/python benchmarks/bench_scan.py --units 16 --units 200 --repeat 5 --json scan.json
"""

from __future__ import annotations

import argparse
import inspect
import json
import statistics
import sys
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from benchenv import cpu  # noqa: E402


def timed(call: Callable[[], object], repeat: int) -> float:
    """The median CPU seconds of ``repeat`` calls (after one call that warms caches)."""
    call()
    samples = []
    for _ in range(repeat):
        start = cpu()
        call()
        samples.append(cpu() - start)
    return statistics.median(samples)


def cases(model: Any) -> dict[str, list[str]]:
    """The units each case plans."""
    order = list(model.order)
    deepest = max(order, key=lambda p: len(model.upstream(p)))
    tiers: dict[str, str] = {}
    for path in order:
        tiers.setdefault(model.units[path].tier, path)
    return {"all": order, "one": [deepest], "two-tiers": list(tiers.values())[:2]}


def measure(root: Path, repeat: int) -> dict[str, Any]:
    from tooling.commands import check
    from tooling.engine.rules.before_terragrunt import refuse_before_terragrunt
    from tooling.io import config
    from tooling.model.repo import load
    from tooling.model.trees import WorkTree

    policy: Any = config.read_policy(root)
    # the typed Policy (its layout on it), or, before it, policy.toml as a mapping
    layout = getattr(policy, "layout", None)
    if layout is None:
        from tooling.model.layout import layout_from  # type: ignore[attr-defined]

        layout = layout_from(policy)
    model = load(WorkTree(root, layout.live), None)
    # the plan passes the project's place in git (read once per task); an older
    # signature without it asked git itself
    extra: dict[str, Any] = (
        {"git_prefix": ""}
        if "git_prefix" in inspect.signature(refuse_before_terragrunt).parameters
        else {}
    )
    out: dict[str, Any] = {"units": len(model.units), "cases": {}}
    for name, paths in cases(model).items():
        seconds = timed(
            partial(refuse_before_terragrunt, model, paths, root=root, policy=policy, **extra),
            repeat,
        )
        out["cases"][name] = {
            "planned": len(paths),
            "cpu_s": round(seconds, 4),
            "cpu_s_per_unit": round(seconds / len(paths), 5),
        }
    seconds = timed(lambda: check.run(root), max(1, repeat // 2))
    out["check_cpu_s"] = round(seconds, 4)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, action="append", default=[])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--tooling", type=Path, default=REPO, help="the folder holding `tooling`")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    sys.path.insert(0, str(args.tooling.resolve()))
    sys.path.insert(0, str(REPO / "benchmarks"))
    from benchenv import example_tree, sh
    from gentree import generate

    results: dict[str, Any] = {"tooling": str(args.tooling.resolve()), "trees": {}}
    with tempfile.TemporaryDirectory(prefix="bench-scan-") as tmp:
        trees = {"example": example_tree(Path(tmp) / "example")}
        for count in args.units:
            dest = Path(tmp) / f"gen-{count}"
            generate(dest, count)
            sh(dest, "git", "init", "--quiet", "--initial-branch=main", check=True)
            sh(dest, "git", "add", "--all", check=True)
            sh(dest, "git", "commit", "--quiet", "-m", "generated", check=True)
            trees[f"{count} units"] = dest
        for name, root in trees.items():
            results["trees"][name] = found = measure(root, args.repeat)
            print(f"{name} ({found['units']} units): check {found['check_cpu_s']} CPU s")
            for case, row in found["cases"].items():
                print(
                    f"  {case:<10} {row['planned']:>5} planned  {row['cpu_s']:>8} CPU s  "
                    f"{row['cpu_s_per_unit']:>8} CPU s per planned unit"
                )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
