"""invoke tasks: the command surface of the repository (see README, docs/commands.md).

Thin on purpose: each task parses its options, calls one function of the
``tooling`` package, and maps a ``ToolingError`` to ``invoke.Exit`` (exit code
1 for a failure to act on, 2 for bad usage) so a known failure never prints a
traceback. ``invoke --help TASK`` shows each task's help.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from invoke import Collection, Context, Exit, task

ROOT = Path(__file__).resolve().parent


@contextmanager
def _errors() -> Iterator[None]:
    from tooling.errors import ToolingError

    try:
        yield
    except ToolingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise Exit(code=exc.code) from None
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        raise Exit(code=130) from None


def _workspace() -> Any:
    from tooling import toolchain
    from tooling.workspace import Workspace

    toolchain.ensure_bin_dir_on_path()
    return Workspace.here(Path.cwd())


def _run(fn: Callable[[], int | None]) -> None:
    with _errors():
        code = fn()
    if code:
        raise Exit(code=code)


@task
def setup(c: Context) -> None:
    """Install the pinned OpenTofu, Terragrunt and actionlint (from .tool-versions).

    For each tool: a cached build, else a binary of the right version on PATH,
    else the official release verified against its checksums, else a build from
    the Go module. Links them into this Python environment's bin directory.
    Idempotent: on a warm machine it takes well under a second.
    """
    from tooling import toolchain

    def go() -> None:
        for tool in toolchain.setup(ROOT):
            print(f"{tool.name} {tool.version}: {tool.source} -> {tool.link or tool.path}", file=sys.stderr)

    _run(go)


@task(help={"json": "print the units as JSON on stdout"})
def units(c: Context, json_: bool = False) -> None:
    """Every unit: path, tier, executor, gate class, module source/ref, dependencies, files read, state key."""
    from tooling import pipeline

    def go() -> None:
        ws = _workspace()
        ws.check_tools()
        pipeline.units(ws, as_json=json_)

    _run(go)


@task(
    help={
        "base": "compare with the merge base of this ref and HEAD (default: the PR base in GitHub Actions, else the default branch)",
        "head": "the revision to compare (default: HEAD)",
        "uncommitted": "add staged, unstaged and untracked changes of the working tree",
        "json": "print the JSON document on stdout (logs go to stderr)",
    }
)
def affected(c: Context, base: str = "", head: str = "", uncommitted: bool = False, json_: bool = False) -> None:
    """The units a change affects, with reasons, in DAG order (deletions last); their dependents apart."""
    from tooling import pipeline

    def go() -> None:
        ws = _workspace()
        ws.check_tools()
        result, _ = pipeline.compute_affected(ws, base or None, head or None, uncommitted=uncommitted)
        if json_:
            print(json.dumps(result.to_json(), indent=2))
        else:
            pipeline.print_affected(result)

    _run(go)


@task(
    iterable=["unit"],
    help={
        "base": "plan what changed since the merge base with this ref (default: the default branch)",
        "all": "plan every unit",
        "unit": "plan this unit (repeatable)",
        "executor": "plan only this executor's units (hosted | lan)",
        "jobs": "plans run in parallel (default: CPU count)",
        "out": "output folder (default: .iac/plans)",
        "comment": "post or update the sticky PR comment (GitHub Actions)",
    },
)
def plan(
    c: Context,
    base: str = "",
    all_: bool = False,
    unit: list[str] | None = None,
    executor: str = "",
    jobs: int = 0,
    out: str = "",
    comment: bool = False,
) -> None:
    """Plan the affected (or named, or all) units; write OUT/summary.json and OUT/comment.md.

    Exit code 0 when every planned unit succeeded, 1 otherwise.
    """
    from tooling import pipeline

    _run(
        lambda: pipeline.plan(
            _workspace(),
            base=base or None,
            all_units=all_,
            units=unit or [],
            executor=executor or None,
            jobs=jobs or None,
            out=Path(out) if out else None,
            comment=comment,
        )
    )


@task(
    help={
        "format": "mermaid (default; renders on GitHub) or dot (Graphviz)",
        "affected": "highlight the units affected by the current change",
        "base": "with --affected: compare with the merge base of this ref",
    }
)
def graph(c: Context, format: str = "mermaid", affected: bool = False, base: str = "") -> None:
    """The unit DAG (dependencies -> dependents), grouped and coloured by tier."""
    from tooling import pipeline

    def go() -> None:
        ws = _workspace()
        ws.check_tools()
        print(pipeline.graph(ws, fmt=format, affected_base=base or None, highlight=affected), end="")

    _run(go)


@task(
    help={
        "plans": "the folder `invoke plan --out` wrote (summary.json and the binary plans)",
        "approve_manual": "also apply the manual-gate units (the protected-environment job passes this)",
    }
)
def apply(c: Context, plans: str = "", approve_manual: bool = False) -> None:
    """Apply exactly the reviewed plans in PLANS, by gate, in DAG order; write PLANS/apply.json.

    Before each unit the binding is verified (plan SHA-256, HEAD commit, tool
    versions); a mismatch refuses the unit. Manual units wait unless
    --approve-manual. Exit code 1 if anything failed or was refused.
    """
    from tooling import apply as applying

    if not plans:
        raise Exit("error: --plans DIR is required (the folder `invoke plan --out DIR` wrote)", code=2)
    _run(lambda: applying.apply(_workspace(), Path(plans), approve_manual=approve_manual))


@task(help={"args": "extra pytest arguments, e.g. '-k plan -x'"})
def test(c: Context, args: str = "") -> None:
    """Run the whole test suite (pytest, in parallel on the CPUs this machine has)."""
    c.run(f"{sys.executable} -m pytest -n auto --dist loadgroup {args}", pty=False)


ns = Collection(setup, units, affected, graph, plan, apply, test)
