"""``invoke crosscheck``: can change detection be trusted on this repository?

Runs the pinned Terragrunt's ``find --json --dependencies --reading`` on a
folder, builds the model of the same folder, and reports every dependency or
read file they disagree on, per unit, dangerous direction first
(:mod:`tooling.core.doctor.crosscheck`). Exit 1 when Terragrunt sees a dependency,
a read file or a unit the model does not.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tooling.core.doctor.crosscheck import Report, Seen, compare, parse_find, unparsed_units
from tooling.errors import ToolingError, UsageError
from tooling.io import git, proc, terragrunt
from tooling.model.repo import load
from tooling.model.trees import WorkTree

FIND_ARGS = ("find", "--json", "--dependencies", "--reading", "--no-color", "--log-level", "debug")


def terragrunt_find(folder: Path) -> tuple[str, str]:
    """(JSON on stdout, debug log) of the pinned Terragrunt's ``find`` in ``folder``."""
    result = proc.run(
        ["terragrunt", *FIND_ARGS], cwd=folder, env=terragrunt.base_env(), ok_codes=(0, 1)
    )
    if result.returncode != 0:
        raise ToolingError(
            f"terragrunt find failed in {folder} (exit {result.returncode}): "
            f"{terragrunt.error_summary(result.stderr or result.stdout)}"
        )
    return result.stdout, result.stderr


def check(root: Path, live: tuple[str, ...] = (".",)) -> Report:
    """Compare the model of ``root`` with Terragrunt's ``find`` run in each live folder."""
    if not root.is_dir():
        raise UsageError(f"--path {root}: not a folder")
    root = root.resolve()
    theirs: dict[str, Seen] = {}
    unparsed: set[str] = set()
    for folder in live:
        stdout, log = terragrunt_find(root / folder)
        theirs.update(parse_find(stdout, folder))
        unparsed |= unparsed_units(log, str(root))
    return compare(load(WorkTree(root, live, git.prefix(root)), None), theirs, unparsed)


def render(report: Report, limit: int = 200) -> str:
    """The report for people: figures, then each disagreement, dangerous ones first."""
    lines = [
        f"{report.compared} units compared with Terragrunt: {report.exact} agree exactly, "
        f"{len(report.blind)} the model cannot evaluate (affected by any change), "
        f"{len(report.unparsed)} left out (Terragrunt cannot parse them)"
        + (f", {len(report.excluded)} excluded by .terragrunt-excludes" if report.excluded else ""),
        f"change mapping: a change to each of {report.changes_checked} file(s) Terragrunt says "
        "units read selects those units (as plan and matrix map it), misses listed as `change`",
        f"dangerous (Terragrunt sees it, the model does not: a change there would plan nothing): "
        f"{len(report.dangerous)}",
    ]
    shown = 0
    for title, items in (("dangerous", report.dangerous), ("over-inclusion", report.over)):
        if title == "over-inclusion":
            lines.append(
                f"over-inclusion (the model sees more than Terragrunt: a plan too many, never a miss): "
                f"{len(items)}"
            )
        for item in items:
            if shown >= limit:
                lines.append(f"  ... {len(report.disagreements) - shown} more (use --json)")
                return "\n".join(lines) + "\n"
            side = "Terragrunt only" if item.dangerous else "model only"
            lines.append(f"  {item.unit}: {item.kind} {item.path} ({side})")
            shown += 1
    if report.blind:
        lines.append(
            f"the model cannot evaluate (each is affected by any change): {len(report.blind)}"
        )
    for path, error in report.blind:
        lines.append(f"  {path}: {error}")
    return "\n".join(lines) + "\n"


def run(root: Path, *, as_json: bool, live: tuple[str, ...] = (".",)) -> int:
    report = check(root, live)
    if as_json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        sys.stdout.write(render(report))
    # a unit left out because its HCL does not parse is a failure too, named file:line:col
    broken = 0
    if report.unparsed:
        from tooling.engine.plan.affected import unreadable_exit

        broken = unreadable_exit(load(WorkTree(root.resolve(), live, git.prefix(root)), None))
    return 1 if report.dangerous or broken else 0
