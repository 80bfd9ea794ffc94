"""What ``invoke plan`` and ``invoke drift`` do before the first plan starts, in one order:
refuse unparsable units, refuse bad unit names, refuse files that would run a command
while Terragrunt parses them, each unit's static form worked out for the verifier, the
preflight (the roles the units assume, from those forms), the guard armed for the run
(:mod:`tooling.engine.execguard`: what each unit's OpenTofu may run with), the working
copies prepared, the report folder reset; then the plans run with interrupts forwarded
(:func:`prepared`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from tooling.core.rules.rule import UnitRender
from tooling.core.targets import Target
from tooling.engine import execguard, preflight, verify, workcopies
from tooling.engine.plan.request import PlanContext
from tooling.engine.refusals import (
    refuse_bad_names,
    refuse_before_terragrunt,
    refuse_unparsable,
)
from tooling.io import backends, outdir, proc
from tooling.model.repo import Model


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
    (the guard armed) and Ctrl-C or SIGTERM forwarded to OpenTofu (``what``
    names the plans in the notice). Every refusal comes before the report folder is reset:
    a run refused here keeps the last report, and removes no working copy's files."""
    units = ctx.of_units()
    model = units.model
    try:
        refuse_unparsable(model, [t.path for t in targets])
        refuse_bad_names(
            model, [t.path for t in targets if not t.destroy], live=units.live, policy=ctx.policy
        )
        refuse_before_terragrunt(
            model, [t.path for t in targets if not t.destroy], root=ctx.root, policy=ctx.policy
        )
        planned = [t for t in targets if not t.destroy and not t.preset]
        forms = expect_forms(planned, model)
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
                unreadable={t.path: t.model_error for t in targets if t.model_error},
                known_forms=forms,
            )
            if todo
            else (dict(env), [])
        )
        declared = execguard.backends_of(guarded_units)
        workcopies.prepare(
            [(t.path, t.run_dir) for t in planned],
            ctx.settings,
            ctx.root,
            declared={
                p: backends.Backend(b.type, b.config) if b is not None else None
                for p, b in declared.items()
            },
        )
        folder.reset()
        guarded = workcopies.guarded(
            targets, root=ctx.root, reads={p: u.reads for p, u in model.units.items()}
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


def expect_forms(targets: Sequence[Target], model: Model) -> dict[str, UnitRender]:
    """Each target's static form, worked out once for the verifier before its plan."""
    out: dict[str, UnitRender] = {}
    for root, group in _roots(targets).items():
        out.update(verify.expect_forms([(t.run_dir, t.path) for t in group], model, root))
    return out
