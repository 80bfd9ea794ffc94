"""Benchmark arming the guard for a run: what `invoke plan` does once before Terragrunt starts.

It times `tooling.engine.rules.execguard.armed` on the example (7 units, 6 module
repositories of the sandbox catalog): each unit's working copy worked out from its
tag's tree, the modules' variables, what the root file declares, the guard's folder
and configuration written. Two cases, alternating repeat after repeat:

  cold  as on a fresh runner: the rule's module mirrors (`IAC_CACHE_DIR/module-repos/`)
        and the guard's folders removed first, so each module repository is fetched;
  warm  the mirrors kept: one `git ls-remote --tags` per repository, nothing fetched.

CPU seconds are user + system of this process and of the git processes it waited
for, per call; the median of `--repeat` calls of each case. The sandbox catalog and
the model are made once, before any timing, in a cache folder of the run's own.

`--tooling DIR` measures the `tooling` package found in DIR instead of this
checkout's (a checkout of another revision: the same cases before and after a change).

Usage (from the repository root, after ./dev setup):

    .venv/bin/python benchmarks/bench_arming.py --repeat 6
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=6)
    parser.add_argument("--tooling", type=Path, default=REPO, help="the folder holding `tooling`")
    args = parser.parse_args()
    sys.path.insert(0, str(args.tooling.resolve()))
    sys.path.insert(0, str(REPO / "benchmarks"))
    from benchenv import cpu, example_tree

    from tooling.engine.rules import execguard
    from tooling.io import binpath
    from tooling.io.workspace import Workspace

    binpath.ensure_bin_dir_on_path()
    figures: dict[str, list[float]] = {"cold": [], "warm": []}
    with tempfile.TemporaryDirectory(prefix="bench-arming-") as tmp:
        os.environ["IAC_CACHE_DIR"] = str(Path(tmp) / "cache")
        ws = Workspace(example_tree(Path(tmp) / "infra"))
        env = ws.tool_env  # the sandbox catalog built, not timed
        model = ws.model()
        units = [(p, ws.root / p, model.units[p].source) for p in model.order]
        for _ in range(args.repeat):
            for case in ("cold", "warm"):
                if case == "cold":
                    for name in ("module-repos", "guard"):
                        shutil.rmtree(ws.settings.cache_dir / name, ignore_errors=True)
                before = cpu()
                execguard.armed(
                    units, env, cache_dir=ws.settings.cache_dir, model=model, policy=ws.policy
                )
                figures[case].append(cpu() - before)
    print(f"tooling: {args.tooling.resolve()}")
    for case, values in figures.items():
        print(
            f"{case}: {statistics.median(values):.3f} CPU s per arming of {len(units)} units "
            f"(min {min(values):.3f}, max {max(values):.3f}, {len(values)} calls)"
        )


if __name__ == "__main__":
    main()
