"""Benchmark `invoke plan` against Terragrunt itself, every row of the plan-speed table in one run.

The tree: `--units` copies of the example's DNS unit (`live/cloud/z<i>`), each
pinning one module at one tag, local state, all applied first (set-up, not
timed) so every plan compares against real state. Three branches change 1
unit, 16 independent units, and every unit (a ref bump, exactly what a bump PR
does). Every figure is a whole command in a fresh process; the rows' two sides
run interleaved, repeat after repeat, and so do the variants, so every side
sees the same machine.

Variants (`--variants`, both by default, each its own tree):
  builtin  the sandbox DNS stand-in: OpenTofu's built-in `terraform_data` only,
           no provider plugin.
  time     a module of the same shape whose resources belong to a real provider
           plugin, `hashicorp/time` (built from its Go module by the lock file
           tests, cached by version under `$IAC_CACHE_DIR/providers-src/`),
           installed offline from a filesystem mirror, lock files committed.
           Every OpenTofu process that needs the schemas starts the plugin.

Rows:
  one   1 changed unit. Our own time is `invoke plan` minus a bare
        `invoke --list` (interpreter and invoke start-up), measured in the same
        run; the baseline is a bare `terragrunt plan` in that unit's folder.
  16    16 changed units: `invoke plan --jobs J` vs
        `terragrunt run --all --parallelism J plan` restricted to the same units
        (one `--filter ./<path>` each).
  16go  the same `invoke plan` against the same `run --all`, given the Go runtime
        settings the tooling gives the tools' processes (`GOGC`, `GOMEMLIMIT`):
        the ratio left is the tooling's own work.

Terragrunt's side runs as a user runs it: the tooling's environment (the module
sources mapped onto the sandbox catalog) without those Go settings, except in 16go.
  all   every unit changed: `invoke plan --jobs J` vs
        `terragrunt run --all --parallelism J plan` over the tree.
  same  16 units that do not change, on `main` (everything applied):
        `invoke plan --unit ... --jobs J` (16 `--unit`s) vs the same `run --all`
        as the 16 row; every unit ends `no-changes`, the plans whose
        machine-readable stream shows nothing to do (`-json-into`), read
        without `tofu show -json`.
  init  for the `all` plan with an empty Terragrunt cache (CAS) and empty
        `.terragrunt-cache` folders, then again warm: module downloads (git
        fetches, counted with GIT_TRACE), provider downloads (files in the
        plugin cache) and `tofu init` runs (one per unit log that initialised).

Usage (from the repository root, after ./dev setup):

    .venv/bin/python benchmarks/bench_plan.py --units 200 --repeat 3 --json results.json

Each row's two sides are a pair, run back to back, which side first alternating
from repeat to repeat, after one untimed `run --all plan` of the branch just
checked out (so whichever side runs first does not pay the working copies'
`tofu init` for a moved source on behalf of both); a row's ratio is the median of its pairs' ratios (wall and
CPU), so a load that drifts during the run moves both sides of a pair alike. The
load average (1 minute) is sampled before every pair and printed with the row:
on a shared machine, compare the CPU ratios first.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchenv import TIME_PROVIDER, time_provider_mirror  # noqa: E402
from benchenv import sh as run  # noqa: E402

from tooling.io.config import cache_root  # noqa: E402
from tooling.io.terragrunt import GO_GC_PERCENT as GO_GC  # noqa: E402
from tooling.io.workspace import Workspace  # noqa: E402

sh = partial(run, check=True)  # every step of the benchmark must succeed
INVOKE = [sys.executable, "-m", "invoke"]
TG_QUIET = ("--non-interactive", "--log-level", "error")


CPU: dict[str, float] = {"last": 0.0}


def timed(cwd: Path, *args: str, env: dict[str, str] | None = None) -> float:
    """Wall seconds of one whole command; its CPU seconds (user + system, the
    command and every process it waited for) are left in ``CPU["last"]``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    sh(cwd, *args, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU["last"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall


#: the real-provider variant's module, mapped onto a local repository (IAC_MODULE_REWRITE)
CLOCK_URL = "https://git.example.com/platform-modules/terraform-clock.git"


def clock_release(tag: str) -> str:
    """The ``time`` variant's module at ``tag``: the DNS stand-in's inputs, resources of
    the real ``hashicorp/time`` provider; each release replaces the zone's resource."""
    _, version, _ = TIME_PROVIDER
    return f"""terraform {{
  required_providers {{
    time = {{
      source  = "hashicorp/time"
      version = "{version}"
    }}
  }}
}}

variable "zone_name" {{
  type = string
}}

variable "records" {{
  type    = map(object({{ type = string, value = string, ttl = number }}))
  default = {{}}
}}

resource "time_static" "zone" {{
  triggers = {{ zone = var.zone_name, release = "{tag}" }}
}}

resource "time_offset" "record" {{
  for_each       = var.records
  offset_seconds = each.value.ttl
  triggers       = {{ name = each.key, type = each.value.type, value = each.value.value }}
}}

resource "terraform_data" "dnssec" {{
  input = {{ zone = var.zone_name, release = "{tag}" }}
}}

output "zone_id" {{
  value = time_static.zone.unix
}}
"""


def clock_repo(dest: Path) -> Path:
    """The ``time`` variant's module repository: one commit and tag per release."""
    dest.mkdir(parents=True)
    sh(dest, "git", "init", "--quiet", "--initial-branch=main")
    for tag in ("v1.1.0", "v1.2.0"):
        (dest / "main.tf").write_text(clock_release(tag))
        sh(dest, "git", "add", "--all")
        sh(dest, "git", "commit", "--quiet", "-m", f"release {tag}")
        sh(dest, "git", "tag", "-a", tag, "-m", f"release {tag}")
    return dest


def clock_lock(dest: Path, env: dict[str, str]) -> Path:
    """The lock file every ``time`` unit commits: ``tofu init`` of the module, providers
    from the mirror (the pipeline installs them read-only from committed lock files)."""
    dest.mkdir(parents=True)
    (dest / "main.tf").write_text(clock_release("v1.1.0"))
    sh(dest, "tofu", "init", "-backend=false", "-input=false", env=env)
    return dest / ".terraform.lock.hcl"


def build_tree(
    dest: Path, units: int, source: str | None = None, lock: Path | None = None
) -> list[str]:
    """The tree of ``units`` DNS units; ``source`` replaces their module's repository URL,
    ``lock`` their lock file."""
    dest.mkdir(parents=True)
    for name in ("root.hcl", ".tool-versions", "policy.toml", "tasks.py", ".gitignore"):
        shutil.copy2(REPO / name, dest / name)
    (dest / "live/cloud").mkdir(parents=True)
    shutil.copy2(REPO / "live/cloud/tier.hcl", dest / "live/cloud/tier.hcl")
    template = (REPO / "live/cloud/dns/terragrunt.hcl").read_text()
    if source is not None:
        template = re.sub(r'"git::[^"?]+\?ref=', f'"git::{source}?ref=', template)
        assert source in template
    lock = lock or REPO / "live/cloud/dns/.terraform.lock.hcl"
    paths = []
    for i in range(units):
        unit = dest / "live/cloud" / f"z{i:03d}"
        unit.mkdir()
        text = template.replace('"example.net"', f'"zone{i}.example.net"')
        (unit / "terragrunt.hcl").write_text(text)
        if lock.exists():
            shutil.copy2(lock, unit / lock.name)
        paths.append(f"live/cloud/z{i:03d}")
    sh(dest, "git", "init", "--quiet", "--initial-branch=main")
    sh(dest, "git", "add", "--all")
    sh(dest, "git", "commit", "--quiet", "-m", "sandbox tree")
    return paths


def branch(tree: Path, units: list[str], name: str) -> None:
    """A branch off main whose one commit bumps the module ref of ``units``."""
    sh(tree, "git", "checkout", "--quiet", "-B", name, "main")
    for unit in units:
        path = tree / unit / "terragrunt.hcl"
        text = path.read_text()
        assert "?ref=v1.1.0" in text, unit
        path.write_text(text.replace("?ref=v1.1.0", "?ref=v1.2.0"))
    sh(tree, "git", "commit", "--quiet", "-am", f"bump {len(units)} units")


def checkout(tree: Path, name: str) -> None:
    sh(tree, "git", "checkout", "--quiet", name)


def plan_ours(tree: Path, out: Path, env: dict[str, str], jobs: int) -> float:
    if out.exists():
        shutil.rmtree(out)
    return timed(
        tree, *INVOKE, "plan", "--base", "main", "--jobs", str(jobs), "--out", str(out), env=env
    )


def check_summary(out: Path, expected: list[str], status: str = "changes") -> None:
    """Every run is checked: the units planned, each with ``status``."""
    summary = json.loads((out / "summary.json").read_text())
    units = {u["path"]: u for u in summary["units"]}
    assert sorted(units) == sorted(expected), (len(units), len(expected))
    bad = [p for p, u in units.items() if u["status"] != status]
    assert not bad, bad[:5]


def plan_named(tree: Path, out: Path, env: dict[str, str], jobs: int, units: list[str]) -> float:
    """``invoke plan --unit ...`` of exactly ``units`` (the working tree as it is)."""
    if out.exists():
        shutil.rmtree(out)
    named = [a for u in units for a in ("--unit", u)]
    return timed(tree, *INVOKE, "plan", *named, "--jobs", str(jobs), "--out", str(out), env=env)


#: the Go runtime settings the tooling gives the tools' processes (tooling/io/terragrunt.py,
#: `go_runtime_env`): Terragrunt itself, as a user runs it, has neither
GO_SETTINGS = ("GOGC", "GOMEMLIMIT")


def plain(env: dict[str, str]) -> dict[str, str]:
    """``env`` without the tooling's Go runtime settings: Terragrunt as a user runs it."""
    return {k: v for k, v in env.items() if k not in GO_SETTINGS}


def run_all_theirs(tree: Path, env: dict[str, str], jobs: int, units: list[str] | None) -> float:
    """``terragrunt run --all plan`` of ``units`` (every unit when None) with ``env`` as given:
    pass :func:`plain` of the tooling's environment for Terragrunt as a user runs it."""
    selection = [a for p in units or () for a in ("--filter", f"./{p}")]
    where = tree if units else tree / "live"
    return timed(
        where,
        "terragrunt",
        "run",
        "--all",
        *TG_QUIET,
        "--parallelism",
        str(jobs),
        *selection,
        "plan",
        env=env,
    )


def count_downloads(
    tree: Path, tmp: Path, env: dict[str, str], jobs: int, units: list[str]
) -> dict[str, Any]:
    """Module downloads, provider downloads and `tofu init` runs of one `invoke plan`, cold then warm."""
    cache = tmp / "xdg-cache"
    plugins = tmp / "plugin-cache"
    for d in (cache, plugins):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir()
    for unit in units:  # cold: no downloaded source in any unit
        shutil.rmtree(tree / unit / ".terragrunt-cache", ignore_errors=True)
    counts: dict[str, Any] = {}
    for phase in ("cold", "warm"):
        trace = tmp / f"git-trace-{phase}.log"
        trace.unlink(missing_ok=True)
        run_env = {
            **env,
            "GIT_TRACE": str(trace),
            # Terragrunt's CAS lives in the user cache folder; the sandbox catalog
            # stays where it was built (IAC_CACHE_DIR is read before XDG)
            "IAC_CACHE_DIR": str(cache_root()),
            "XDG_CACHE_HOME": str(cache),
            "TF_PLUGIN_CACHE_DIR": str(plugins),
        }
        out = tmp / f"out-init-{phase}"
        plan_ours(tree, out, run_env, jobs)
        check_summary(out, units)
        text = trace.read_text() if trace.exists() else ""
        logs = [(out / "units" / u / "plan.log").read_text() for u in units]
        counts[phase] = {
            "module_fetches": len(re.findall(r"built-in: git (?:fetch|clone)\b", text)),
            "provider_downloads": sum(1 for p in plugins.rglob("*") if p.is_file()),
            "tofu_init_runs": sum(1 for log in logs if "has been successfully initialized" in log),
        }
    return counts


@dataclass
class Variant:
    """One variant's tree, set up and applied, and the units each row changes."""

    name: str
    tree: Path
    env: dict[str, str]
    paths: list[str]
    one: str
    sixteen: list[str]


def set_up(name: str, tmp: Path, units: int, jobs: int) -> Variant:
    """Build, apply (not timed) and branch the ``name`` variant's tree; warm its caches."""
    source = lock = None
    extra: dict[str, str] = {}
    if name == "time":
        modules = clock_repo(tmp / "terraform-clock.git")
        extra = {**time_provider_mirror(tmp / "provider-mirror"),
                 "IAC_MODULE_REWRITE": f"{CLOCK_URL}={modules}"}  # fmt: skip
        source = CLOCK_URL
        lock = clock_lock(tmp / "lock", extra)
    tree = tmp / "repo"
    paths = build_tree(tree, units, source, lock)
    saved = {k: os.environ.get(k) for k in extra}
    os.environ.update(extra)  # the settings Workspace reads
    try:
        env = {**Workspace(tree).tool_env, **extra}
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    print(f"{name}: applying {len(paths)} units (set-up, not timed)", file=sys.stderr, flush=True)
    sh(tree / "live", "terragrunt", "run", "--all", *TG_QUIET, "--parallelism",
       str(jobs), "apply", "--", "-auto-approve", env=env)  # fmt: skip
    one, sixteen = paths[17], paths[100 % len(paths) : 100 % len(paths) + 16]
    if len(sixteen) < 16:
        sixteen = paths[-16:]
    branch(tree, [one], "one")
    branch(tree, sixteen, "sixteen")
    branch(tree, paths, "all")
    checkout(tree, "one")
    plan_ours(tree, tmp / "warm-up", env, jobs)  # the sandbox catalog, CAS, caches
    check_summary(tmp / "warm-up", [one])
    return Variant(name, tree, env, paths, one, sixteen)


#: each row: (label, our side's key, their side's key, target ratio)
ROWS = (
    ("16", "16_invoke_plan", "16_terragrunt_run_all", 1.1),
    ("16go", "16_invoke_plan", "16go_terragrunt_run_all", 1.1),
    ("all", "all_invoke_plan", "all_terragrunt_run_all", 1.1),
    ("one", "one_invoke_plan_own", "one_bare_terragrunt_plan", 1.3),
    ("same", "same_invoke_plan", "same_terragrunt_run_all", 1.1),
)


def paired(figures: dict[str, list[float]], ours: str, theirs: str, unit: str) -> float:
    """The median of the repeats' ratios ours / theirs (``unit``: "s" wall, "cpu_s" CPU)."""
    a, b = figures[f"{ours}_{unit}"], figures[f"{theirs}_{unit}"]
    return statistics.median(x / y for x, y in zip(a, b, strict=True))


def summarize_variant(figures: dict[str, list[float]], downloads: dict[str, Any]) -> dict[str, Any]:
    # our own time for one unit: `invoke plan` minus the `invoke --list` of the same repeat
    for unit in ("s", "cpu_s"):
        figures[f"one_invoke_plan_own_{unit}"] = [
            p - f
            for p, f in zip(
                figures[f"one_invoke_plan_{unit}"], figures[f"one_invoke_list_{unit}"], strict=True
            )
        ]
    m = {k: statistics.median(v) for k, v in figures.items()}
    ratios = {label: paired(figures, a, b, "s") for label, a, b, _t in ROWS}
    cpu = {label: paired(figures, a, b, "cpu_s") for label, a, b, _t in ROWS}
    return {
        "medians_s": m,
        "runs_s": figures,
        "paired_ratio_wall": ratios,
        "paired_ratio_cpu": cpu,
        "downloads": downloads,
    }


def _load(loads: list[float]) -> str:
    return f"{min(loads):.1f} to {max(loads):.1f}"


def table(name: str, n: int, j: int, result: dict[str, Any]) -> str:
    m = result["medians_s"]
    wall, cpu = result["paired_ratio_wall"], result["paired_ratio_cpu"]
    runs = result["runs_s"]
    cold, warm = result["downloads"]["cold"], result["downloads"]["warm"]
    what = {
        "16": f"16 changed units, `--jobs {j}` vs `run --all --parallelism {j}` on the same 16",
        "16go": (
            "the same 16, against `run --all` given the tooling's Go settings "
            f"(`GOGC={GO_GC}`, `GOMEMLIMIT`): the tooling's own work"
        ),
        "all": f"{n} changed units (every unit), `--jobs {j}` vs `run --all --parallelism {j}`",
        "one": (
            f"1 changed unit: own time ({m['one_invoke_plan_s']:.2f} s minus `invoke --list` "
            f"{m['one_invoke_list_s']:.2f} s) vs bare `terragrunt plan`"
        ),
        "same": "16 unchanged units (`--unit` x16 on main) vs `run --all` on the same 16",
    }
    lines = [
        f"Variant `{name}` (medians; ratios: median of the paired repeats):",
        "",
        "| scenario | invoke plan | terragrunt | ratio (wall) | ratio (CPU) | CPU s (ours / theirs) | load average | target |",
        "|---|--:|--:|--:|--:|--:|--:|---|",
    ]
    for label, ours, theirs, target in ROWS:
        lines.append(
            f"| {what[label]} | {m[ours + '_s']:.2f} s | {m[theirs + '_s']:.2f} s | "
            f"{wall[label]:.2f}x | {cpu[label]:.2f}x | "
            f"{m[ours + '_cpu_s']:.2f} / {m[theirs + '_cpu_s']:.2f} | "
            f"{_load(runs['load_' + label])} | <= {target}x |"
        )
    lines.append(
        f"| downloads for a plan of {n} units of one module version, cold / warm | "
        f"modules {cold['module_fetches']} / {warm['module_fetches']}, "
        f"providers {cold['provider_downloads']} / {warm['provider_downloads']}, "
        f"`tofu init` runs {cold['tofu_init_runs']} / {warm['tofu_init_runs']} | | | | | | "
        "1 per module version and provider |"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--units", type=int, default=200, help="units in the tree (>= 32)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per row and side (median)")
    parser.add_argument("--jobs", type=int, default=2, help="parallelism on both sides")
    parser.add_argument(
        "--variants",
        nargs="+",
        choices=("builtin", "time"),
        default=["builtin", "time"],
        help="which trees to plan (both by default, interleaved)",
    )
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    if args.units < 32:
        parser.error("--units must be at least 32")
    names = list(dict.fromkeys(args.variants))
    figures: dict[str, dict[str, list[float]]] = {name: {} for name in names}
    loads: list[float] = []

    with tempfile.TemporaryDirectory(prefix="bench-plan-") as tmp_name:
        tmp = Path(tmp_name)
        # Python writes its bytecode cache, as on a user's machine (some CI
        # images turn it off, which makes every start-up compile the package)
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        variants = [set_up(name, tmp / name, args.units, args.jobs) for name in names]

        for i in range(args.repeat):
            for v in variants:
                loads.append(os.getloadavg()[0])
                print(f"repeat {i + 1}/{args.repeat} {v.name} (load {loads[-1]:.1f})",
                      file=sys.stderr, flush=True)  # fmt: skip
                run_rows(v, tmp / v.name, args.jobs, figures[v.name], i)

        downloads = {}
        for v in variants:
            checkout(v.tree, "all")
            downloads[v.name] = count_downloads(v.tree, tmp / v.name, v.env, args.jobs, v.paths)

    results = {name: summarize_variant(figures[name], downloads[name]) for name in names}
    report = {
        "units": args.units,
        "jobs": args.jobs,
        "repeat": args.repeat,
        "load_average_1min": {"min": min(loads), "max": max(loads), "samples": loads},
        "variants": results,
    }
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    for name in names:
        print(table(name, args.units, args.jobs, results[name]) + "\n")
    print(f"Load average (1 min) before each repeat: {min(loads):.1f} to {max(loads):.1f}")


def run_rows(v: Variant, tmp: Path, jobs: int, figures: dict[str, list[float]], i: int) -> None:
    """One repeat of every row of ``v``: each row's two sides back to back, as a pair
    (which side first alternates with the repeat ``i``), the load average before it."""

    def record(key: str, seconds: float) -> None:
        figures.setdefault(key, []).append(seconds)
        figures.setdefault(key.removesuffix("_s") + "_cpu_s", []).append(CPU["last"])

    def pair(label: str, ours: Any, theirs: Any) -> None:
        figures.setdefault(f"load_{label}", []).append(os.getloadavg()[0])
        for side in (ours, theirs) if i % 2 == 0 else (theirs, ours):
            side()

    tree, env = v.tree, v.env

    def settle(units: list[str] | None) -> None:
        """One untimed ``run --all plan`` of the branch just checked out: the units'
        working copies follow their new sources (``tofu init`` where a source moved)
        before the pair, so the side that runs first does not pay it for both."""
        run_all_theirs(tree, plain(env), jobs, units)

    checkout(tree, "one")
    settle([v.one])

    def one_ours() -> None:
        record("one_invoke_list_s", timed(tree, *INVOKE, "--list", env=env))
        record("one_invoke_plan_s", plan_ours(tree, tmp / "out-one", env, jobs))
        check_summary(tmp / "out-one", [v.one])

    pair(
        "one",
        one_ours,
        lambda: record(
            "one_bare_terragrunt_plan_s",
            timed(tree / v.one, "terragrunt", "plan", *TG_QUIET, "-input=false", env=plain(env)),
        ),
    )
    checkout(tree, "sixteen")
    settle(v.sixteen)

    def sixteen_ours() -> None:
        record("16_invoke_plan_s", plan_ours(tree, tmp / "out-16", env, jobs))
        check_summary(tmp / "out-16", v.sixteen)

    def sixteen_theirs() -> None:
        record("16_terragrunt_run_all_s", run_all_theirs(tree, plain(env), jobs, v.sixteen))
        # and with the tooling's Go settings: what is left is the tooling's own work
        record("16go_terragrunt_run_all_s", run_all_theirs(tree, env, jobs, v.sixteen))

    pair("16", sixteen_ours, sixteen_theirs)
    figures.setdefault("load_16go", []).append(figures["load_16"][-1])
    checkout(tree, "all")
    settle(None)

    def all_ours() -> None:
        record("all_invoke_plan_s", plan_ours(tree, tmp / "out-all", env, jobs))
        check_summary(tmp / "out-all", v.paths)

    pair(
        "all",
        all_ours,
        lambda: record("all_terragrunt_run_all_s", run_all_theirs(tree, plain(env), jobs, None)),
    )
    checkout(tree, "main")
    settle(v.sixteen)

    def same_ours() -> None:
        record("same_invoke_plan_s", plan_named(tree, tmp / "out-same", env, jobs, v.sixteen))
        check_summary(tmp / "out-same", v.sixteen, "no-changes")

    pair(
        "same",
        same_ours,
        lambda: record(
            "same_terragrunt_run_all_s", run_all_theirs(tree, plain(env), jobs, v.sixteen)
        ),
    )


if __name__ == "__main__":
    main()
