"""What ``invoke plan`` and ``invoke drift`` do before the first plan starts, in one order:
settle the units whose file HCL refuses as errors of their own, refuse bad unit names,
refuse files that would run a command while Terragrunt parses them (every file it will
parse for the units in play), each unit's static form worked out for the verifier, the
preflight (the roles the units assume, from those forms), the guard armed for the run
(:mod:`tooling.engine.rules.execguard`: what each unit's OpenTofu may run with), the working
copies prepared, the report folder reset; then the plans run with interrupts forwarded
(:func:`prepared`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from tooling.core.plan.targets import Target
from tooling.core.rules.rule import UnitRender
from tooling.engine.plan.request import PlanContext
from tooling.engine.rules import execguard, preflight, verify, workcopies
from tooling.engine.rules.before_terragrunt import (
    refuse_bad_names,
    refuse_before_terragrunt,
    refuse_unreadable_alone,
    refuse_when_none_readable,
)
from tooling.io import backends, outdir, proc
from tooling.model.policy import Policy
from tooling.model.units import Model


@contextmanager
def prepared(
    ctx: PlanContext,
    targets: Sequence[Target],
    env: Mapping[str, str],
    *,
    folder: outdir.ReportDir,
    jobs: int,
    what: str,
    models: Mapping[Path, Model] | None = None,
) -> Iterator[tuple[list[Target], dict[str, str]]]:
    """The pre-plan sequence, then the block with the targets and environment to plan with
    (the guard armed) and Ctrl-C or SIGTERM forwarded to OpenTofu (``what``
    names the plans in the notice; ``models``: the model of each other checkout a target
    is planned in, such as the base revision's of a deleted unit). Every refusal comes before the report folder is reset:
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
        root_file = ctx.policy.layout.root_file
        planned = [t for t in targets if not t.destroy and not t.preset]
        forms = expect_forms(planned, model, ctx.policy)
        preflight.check(
            [(t.path, t.executor) for t in targets], policy=ctx.policy, settings=ctx.settings
        )
        preflight.check_roles(
            verify.roles_of([(t.path, t.tier) for t in planned], forms), policy=ctx.policy
        )
        todo = [(t.path, t.run_dir, t.source) for t in targets if not t.preset]
        guarded_env, guarded_units = (
            execguard.armed(
                todo,
                env,
                cache_dir=ctx.settings.cache_dir,
                model=model,
                policy=ctx.policy,
                unreadable={t.path: t.model_error for t in targets if t.model_error},
                known_forms=forms,
                models=models,
            )
            if todo
            else (dict(env), [])
        )
        declared = execguard.backends_of(guarded_units)
        workcopies.prepare(
            [(t.path, t.run_dir) for t in planned],
            ctx.settings,
            ctx.root,
            root_file=root_file,
            declared={
                p: backends.Backend(b.type, b.config) if b is not None else None
                for p, b in declared.items()
            },
        )
        folder.reset()
        guarded = workcopies.guarded(
            targets,
            root=ctx.root,
            root_file=root_file,
            reads={p: u.reads for p, u in model.units.items()},
        )
        with proc.forwarding_interrupts(what):
            yield guarded, guarded_env
    finally:
        verify.forget_forms()


def _roots(targets: Sequence[Target]) -> dict[Path, list[Target]]:
    out: dict[Path, list[Target]] = {}
    for t in targets:
        out.setdefault(verify.repo_root(t.run_dir, t.path), []).append(t)
    return out


def expect_forms(targets: Sequence[Target], model: Model, policy: Policy) -> dict[str, UnitRender]:
    """Each target's static form, worked out once for the verifier before its plan."""
    out: dict[str, UnitRender] = {}
    for root, group in _roots(targets).items():
        out.update(verify.expect_forms([(t.run_dir, t.path) for t in group], model, root, policy))
    return out
