"""What ``invoke plan`` and ``invoke drift`` do before the first plan starts, in one order:
settle the units whose file HCL refuses as errors of their own, refuse bad unit names, refuse files that would run a command
while Terragrunt parses them, the preflight (with the units rendered
meanwhile), the working copies prepared, the report folder reset, the working-copy
check armed; then the plans run with interrupts forwarded (:func:`prepared`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from tooling.core.targets import Target
from tooling.engine import preflight, verify, workcopies
from tooling.engine.plan.request import PlanContext
from tooling.engine.refusals import (
    refuse_bad_names,
    refuse_before_terragrunt,
    refuse_unreadable_alone,
    refuse_when_none_readable,
)
from tooling.io import backends, outdir, proc
from tooling.model.evaluator import READ_CYCLE


@contextmanager
def prepared(
    ctx: PlanContext,
    targets: Sequence[Target],
    env: Mapping[str, str],
    *,
    folder: outdir.ReportDir,
    jobs: int,
    what: str,
) -> Iterator[tuple[list[Target], dict[str, str]]]:
    """The pre-plan sequence, then the block with the targets and environment to plan with
    (the working-copy check armed) and Ctrl-C or SIGTERM forwarded to OpenTofu (``what``
    names the plans in the notice). Every refusal comes before the report folder is reset:
    a run refused here keeps the last report, and removes no working copy's files."""
    units = ctx.of_units()
    model = units.model
    # a unit whose file HCL refuses is an error of its own: the other units go on
    given, targets = targets, refuse_unreadable_alone(model, targets)
    try:
        refuse_bad_names(model, [t.path for t in targets if not t.destroy], policy=ctx.policy)
        refuse_before_terragrunt(
            model,
            [t.path for t in targets if not t.destroy],
            root=ctx.root,
            policy=ctx.policy,
            run_dirs={t.path: t.run_dir for t in targets if not t.destroy},
            git_prefix=units.git_prefix,
        )
        refuse_when_none_readable(given, targets)
        # the run's environment, the check armed, before the render: a unit's get_env
        # reads the same values in the verifier's render as in its plan
        root_file = ctx.policy.layout.root_file
        armed_env = workcopies.arm_for(
            targets, env, root=ctx.root, root_file=root_file, cache_dir=ctx.settings.cache_dir
        )
        renders = preflight_rendered(ctx, targets, dict(armed_env), jobs=jobs)
        workcopies.prepare(
            [(t.path, t.run_dir) for t in targets if not t.destroy and not t.preset],
            ctx.settings,
            ctx.root,
            root_file=root_file,
            declared={
                t.path: backends.from_render(renders[t.run_dir.resolve()][0])
                for t in targets
                if t.run_dir.resolve() in renders
            },
        )
        folder.reset()
        guarded, guarded_env = workcopies.guarded(
            targets,
            env,
            root=ctx.root,
            root_file=root_file,
            cache_dir=ctx.settings.cache_dir,
            reads={p: u.reads for p, u in model.units.items()},
            armed_env=armed_env,
        )
        with proc.forwarding_interrupts(what):
            yield guarded, guarded_env
    finally:
        verify.forget_prerendered()


def preflight_rendered(
    ctx: PlanContext, targets: Sequence[Target], env: dict[str, str], *, jobs: int
) -> dict[Path, verify.Pair]:
    """The preflight of ``invoke plan`` and ``invoke drift``, with every unit to plan rendered meanwhile (``terragrunt render --all``
    in a thread): the roles the units will run as are checked once both are done, and the
    renders serve the verifier before each plan (no second render per unit)."""
    from concurrent.futures import ThreadPoolExecutor

    planned = [(t.run_dir, t.path, t.tier) for t in targets if not t.destroy and not t.preset]
    verify.avoid_loops(
        ctx.root / path
        for path, unit in ctx.of_units().model.units.items()
        if unit.error and READ_CYCLE in unit.error
    )
    with ThreadPoolExecutor(max_workers=1) as pool:
        rendering = pool.submit(
            verify.prerender, [(d, p) for d, p, _ in planned], env, ctx.policy, jobs=jobs
        )
        try:
            preflight.check(
                [(t.path, t.executor) for t in targets], policy=ctx.policy, settings=ctx.settings
            )
        finally:
            renders = rendering.result()
    preflight.check_roles(verify.roles_of(planned, renders), policy=ctx.policy)
    return renders
