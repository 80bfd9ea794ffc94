"""The machine a task runs on: the pinned tools installed (``setup``), a runner cleaned after
a job (``clean-runner``) and the test suite (``test``). Part of the one collection of
:mod:`tooling.tasks`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from invoke.context import Context

from tooling.cli import project, run, task


def _project_root() -> Path:
    """The repository the task runs in (the nearest folder above the current one holding
    the root file and live folders, as the task's preamble found it), else the current
    folder."""
    found = project()
    return found.root if found is not None else Path.cwd()


@task(
    help={
        "pipeline": "only the tools the pipeline's tasks need (leave out act, which only the tests use)"
    }
)
def setup(c: Context, pipeline: bool = False) -> None:
    """Install the pinned OpenTofu, Terragrunt, actionlint and act (from .tool-versions), and
    build the pipeline's guard (tooling/guard, with Go).

    For each tool: a cached build, else a binary of the right version on PATH,
    else the official release verified against its checksums, else a build from
    the Go module. Links them into this Python environment's bin directory. The
    guard, which Terragrunt runs instead of OpenTofu to check each command, is built
    from its source beside the pinned OpenTofu, once per version of that source.
    Idempotent: on a warm machine it takes well under a second.
    """
    from tooling.io import guardbin, toolchain

    def go() -> None:
        installed = toolchain.setup(_project_root(), test_tools=not pipeline)
        guardbin.ensure()
        print(toolchain.summary_line(installed), file=sys.stderr)

    run(go)


@task(help={"plans": "a plan folder to remove too (the job's copy of the plans)"})
def clean_runner(c: Context, plans: str = "") -> None:
    """Remove what a job leaves on a runner: PLANS, .iac/ and every .terragrunt-cache/.

    A folder holding an errored.tfstate (a state an apply could not save) is
    kept, and each kept folder is named: push the state back first
    (docs/runbooks.md, "The state could not be saved").
    """
    from tooling.engine.apply import safety

    def clean() -> None:
        safety.clean_runner(_project_root(), [Path(plans)] if plans else [])

    run(clean)


@task(
    help={"args": "extra pytest arguments, quoted as in a shell, e.g. '-k \"plan and not e2e\" -x'"}
)
def test(c: Context, args: str = "") -> None:
    """Run the whole test suite (pytest, in parallel on the CPUs this machine has)."""
    import shlex

    run(lambda: None)  # policy.toml checked first, as every task does

    # split as a shell would and join again: every argument reaches pytest whole
    argv = [sys.executable, "-m", "pytest", "-n", "auto", "--dist", "loadgroup", *shlex.split(args)]
    c.run(shlex.join(argv), pty=False)
