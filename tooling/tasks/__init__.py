"""The tasks: the command surface (see README, docs/commands.md), run as ``iac TASK``
(the console script installed with the package, :func:`main`) or, in this repository,
as ``invoke TASK`` (``tasks.py`` at its root loads this collection, :data:`ns`).

Thin on purpose: each task declares its options and help, and calls one
function of the ``tooling`` package through :func:`tooling.cli.run`,
which runs the preamble every task shares (the first line and the tools' check
declared there, once each) and maps a ``ToolingError`` to its exit code (1 for
a failure to act on, 2 for bad usage) so a known failure never prints a
traceback. A task's required options are declared once, ``@task(required=...)``. The
task modules are the command-line contract, one per family: :mod:`.pipeline` (plan,
apply, drift, audit), :mod:`.listing` (units, affected, graph), :mod:`.ci` (the workflows'
steps, the matrix, the runners), :mod:`.bump`, :mod:`.apps`, :mod:`.state` (adopt,
move-unit), :mod:`.health` (check, crosscheck, doctor) and :mod:`.tools` (setup,
clean-runner, test); most of their lines are the help texts ``invoke --help TASK`` shows.
"""

from __future__ import annotations

from invoke.collection import Collection

from tooling.cli import use_usage_exit_codes

# from here on, invoke's usage errors (unknown flag, missing value...) exit 2
use_usage_exit_codes()


from tooling.tasks.apps import app_apply, app_plan  # noqa: E402
from tooling.tasks.bump import bump_all, bump_module, outdated  # noqa: E402
from tooling.tasks.ci import (  # noqa: E402  (after use_usage_exit_codes(), as every task)
    apply_base,
    apply_report,
    manual_gate,
    manual_status,
    matrix,
    plan_comment,
    report,
    reviewed_check,
    reviewed_run,
    runners,
)
from tooling.tasks.health import check, crosscheck, doctor  # noqa: E402
from tooling.tasks.listing import affected, graph, units  # noqa: E402
from tooling.tasks.pipeline import apply, audit, drift, plan  # noqa: E402
from tooling.tasks.state import adopt, move_unit  # noqa: E402
from tooling.tasks.tools import clean_runner, setup, test  # noqa: E402

ns = Collection(
    setup,
    units,
    affected,
    graph,
    plan,
    report,
    apply,
    drift,
    matrix,
    runners,
    audit,
    apply_base,
    plan_comment,
    apply_report,
    manual_status,
    manual_gate,
    reviewed_run,
    reviewed_check,
    clean_runner,
    bump_module,
    outdated,
    bump_all,
    check,
    crosscheck,
    doctor,
    adopt,
    move_unit,
    app_plan,
    app_apply,
    test,
)


def main() -> None:
    """The ``iac`` console script: these tasks, run from the repository's project root (the
    folder holding policy.toml) or any folder below it."""
    from importlib.metadata import PackageNotFoundError, version

    from tooling.cli import UsageProgram

    try:
        release = version("tooling")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree
        release = "unknown"
    UsageProgram(namespace=ns, name="iac", binary="iac", version=release).run()
