"""Benchmark the rule's verifier against the plans it guards, on the embedded default.

The tree: a fresh git copy of the example (root.hcl, live/, policy.toml), local
state, the sandbox module catalog. Each repeat runs both paths twice, paired and
interleaved (which of the pair goes first alternates between repeats):

  verified  what `invoke plan` does before the first plan: every unit's static
            form worked out (`preplan.expect_forms`), the preflight with the
            roles read from those forms, the guard armed (`execguard.armed`:
            the tags' trees, the modules' variables, the root file's side from
            the model, guard.json; Terragrunt then runs the guard before each
            OpenTofu command), then the plans, whose verifier judges each
            unit's static form before its Terragrunt process;
  plain     the preflight alone (`preflight.check`), then the same plans with
            the verifier switched off (this script only) and Terragrunt running
            the pinned OpenTofu itself (`TG_TF_PATH` names it, as `invoke plan`
            did before the guard).

  per-unit  the 7 units planned one after the other by the per-unit planner
            (`plan_unit`);
  batch     the 7 units planned by the batch planner (`run_batch`, `--jobs`).

The rule's share is (verified - plain) / plain, of the whole run (pre-plan
work plus plans): the static forms and the guard together; so is the rule's cost,
verified - plain, in CPU seconds per run and per unit. The load
average is sampled before each pair. The first `--cold` repeats (1 by default) are
cold, as on a fresh runner, on both sides of each of their pairs: every `.terragrunt-cache` folder removed and
Terragrunt's own cache (`XDG_CACHE_HOME`) empty (module fetch, `tofu init` from
nothing), and the rule's caches removed too (the module repositories' mirrors the
guard reads the tags' trees from, the guard's run folders), so the verified side pays
what the rule costs once per runner; the other repeats plan warm. Wall seconds, and CPU
seconds (user + system of this process and of every child process).

Usage (from the repository root, after ./dev setup):

    .venv/bin/python benchmarks/bench_verify.py --repeat 6 --cold 3 --jobs 2 --json results.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchenv import cpu, example_tree  # noqa: E402

from tooling.core.plan.targets import Target  # noqa: E402
from tooling.engine import secrets  # noqa: E402
from tooling.engine.plan.batchplanner import run_batch  # noqa: E402
from tooling.engine.plan.prepare import expect_forms  # noqa: E402
from tooling.engine.plan.request import Mode, PlanContext  # noqa: E402
from tooling.engine.plan.unitplanner import plan_unit  # noqa: E402
from tooling.engine.rules import execguard, preflight, verify  # noqa: E402
from tooling.io import binpath  # noqa: E402
from tooling.io.workspace import Workspace  # noqa: E402

#: the example's units, which every run plans
UNITS = 7

secrets.install()  # the redaction step every report write passes through, as a task's preamble installs it


def targets(ws: Workspace) -> list[Target]:
    model = ws.model()
    return [
        Target(p, u.tier, u.executor, "named", ws.root / p, u.dependencies, source=u.source)
        for p, u in ((p, model.units[p]) for p in model.order)
    ]


def _plain() -> Any:
    """Switch the verifier off (the baseline of the pair); returns what undoes it."""
    saved = (verify.before_plan, verify.verify_many)
    verify.before_plan = lambda *a, **k: None  # type: ignore[assignment]
    verify.verify_many = lambda *a, **k: {}  # type: ignore[assignment]

    def undo() -> None:
        verify.before_plan, verify.verify_many = saved

    return undo


def make_cold(ws: Workspace, scratch: Path) -> dict[str, str]:
    """Empty every cache a first run on a fresh runner finds empty: the units'
    ``.terragrunt-cache`` folders, Terragrunt's own cache, the rule's mirrors and guard
    folders. The sandbox catalog stays: it stands for the module repositories' remote.
    Returns the environment that points Terragrunt at its empty cache."""
    for folder in ws.root.rglob(".terragrunt-cache"):
        shutil.rmtree(folder)
    for name in ("module-repos", "guard"):
        shutil.rmtree(ws.settings.cache_dir / name, ignore_errors=True)
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    return {"XDG_CACHE_HOME": str(scratch)}


def one_path(
    ws: Workspace, kind: str, verified: bool, jobs: int, out: Path, cold: bool = False
) -> dict[str, float]:
    """One run of ``kind`` (per-unit or batch): pre-plan work, then the plans; ``cold``
    first empties every cache (:func:`make_cold`)."""
    env = {**ws.tool_env, **(make_cold(ws, out.parent / "xdg-cache") if cold else {})}
    all_targets = targets(ws)
    context = PlanContext.of(ws, Mode.PLAN)  # the model, settings and tools, read once
    undo = None if verified else _plain()
    try:
        start, c0 = time.perf_counter(), cpu()
        if verified:  # as engine/plan/prepare.py orders it: the forms, the roles, the guard
            model = context.of_units().model
            forms = expect_forms(all_targets, model, ws.policy)
            preflight.check(
                [(t.path, t.executor) for t in all_targets],
                policy=ws.policy,
                settings=ws.settings,
            )
            preflight.check_roles(
                verify.roles_of([(t.path, t.tier) for t in all_targets], forms), policy=ws.policy
            )
            env, _ = execguard.armed(
                [(t.path, t.run_dir, t.source) for t in all_targets],
                env,
                cache_dir=ws.settings.cache_dir,
                model=model,
                policy=ws.policy,
            )
        else:
            preflight.check(
                [(t.path, t.executor) for t in all_targets],
                policy=ws.policy,
                settings=ws.settings,
            )
        pre, pre_cpu = time.perf_counter() - start, cpu() - c0
        if kind == "per_unit":
            for t in all_targets:
                result = plan_unit(t, out, env, policy=ws.policy)
                assert result.status in ("changes", "no-changes"), result.error
        else:
            results = run_batch(all_targets, out, env, jobs=jobs, policy=ws.policy)
            assert all(r.status in ("changes", "no-changes") for r in results), [
                r.error for r in results
            ]
        total, total_cpu = time.perf_counter() - start, cpu() - c0
    finally:
        verify.forget_forms()
        if undo is not None:
            undo()
    return {"pre": pre, "pre_cpu": pre_cpu, "total": total, "total_cpu": total_cpu}


def one_repeat(ws: Workspace, jobs: int, out: Path, index: int, cold: bool) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    for kind in ("per_unit", "batch"):
        rows[f"{kind}_load"] = os.getloadavg()[0]
        order = (True, False) if index % 2 == 0 else (False, True)
        rows[kind] = {
            ("verified" if v else "plain"): one_path(
                ws, kind, v, jobs, out / f"{kind}-{'v' if v else 'p'}", cold=cold
            )
            for v in order
        }
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=4)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument(
        "--cold", type=int, default=1, help="how many of the repeats, the first, run cold"
    )
    parser.add_argument("--json", type=Path, help="write every figure here")
    args = parser.parse_args()
    binpath.ensure_bin_dir_on_path()
    with tempfile.TemporaryDirectory(prefix="bench-verify-") as tmp:
        os.environ.setdefault("IAC_CACHE_DIR", str(Path(tmp) / "cache"))
        ws = Workspace(example_tree(Path(tmp) / "infra"))
        repeats = [
            one_repeat(ws, args.jobs, Path(tmp) / f"out{i}", i, i < args.cold)
            for i in range(args.repeat)
        ]
    print(f"load average at the end: {os.getloadavg()}")
    for label, picked in (("cold", repeats[: args.cold]), ("warm", repeats[args.cold :])):
        if not picked:
            continue
        for kind in ("per_unit", "batch"):
            for unit in ("", "_cpu"):
                v = statistics.median(r[kind]["verified"]["total" + unit] for r in picked)
                p = statistics.median(r[kind]["plain"]["total" + unit] for r in picked)
                shares = [
                    (r[kind]["verified"]["total" + unit] - r[kind]["plain"]["total" + unit])
                    / r[kind]["plain"]["total" + unit]
                    for r in picked
                ]
                print(
                    f"{label} {kind} {'CPU' if unit else 'wall'}: verified {v:.2f} s, plain "
                    f"{p:.2f} s (medians), share of the pairs median "
                    f"{statistics.median(shares):+.1%} (min {min(shares):+.1%}, max {max(shares):+.1%})"
                )
            added = [
                r[kind]["verified"]["total_cpu"] - r[kind]["plain"]["total_cpu"] for r in picked
            ]
            units = UNITS
            print(
                f"{label} {kind} the rule's CPU (verified - plain), median of the pairs: "
                f"{statistics.median(added):.3f} s per run of {units} units "
                f"(budget {0.06 * units + 0.1:.2f} s: 0.06 s a unit and 0.1 s a run)"
            )
            loads = [r[f"{kind}_load"] for r in picked]
            print(
                f"{label} {kind} load average (1 min) before the pairs: {min(loads):.1f} to {max(loads):.1f}"
            )
    if args.json:
        args.json.write_text(json.dumps(repeats, indent=2))


if __name__ == "__main__":
    main()
