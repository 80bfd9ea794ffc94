"""The preflight of ``invoke plan`` and ``invoke drift``, with the units rendered meanwhile."""

from __future__ import annotations

from collections.abc import Sequence

from tooling.core.targets import Target
from tooling.engine import preflight, verify
from tooling.io.workspace import Workspace
from tooling.model.evaluator import READ_CYCLE


def preflight_rendered(
    ws: Workspace, targets: Sequence[Target], env: dict[str, str], *, jobs: int
) -> None:
    """The preflight of ``invoke plan`` and ``invoke drift``, with every unit to plan rendered meanwhile (``terragrunt render --all``
    in a thread): the roles the units will run as are checked once both are done, and the
    renders serve the verifier before each plan (no second render per unit)."""
    from concurrent.futures import ThreadPoolExecutor

    planned = [(t.run_dir, t.path, t.tier) for t in targets if not t.destroy and not t.preset]
    verify.avoid_loops(
        ws.root / path
        for path, unit in ws.current_model.units.items()
        if unit.error and READ_CYCLE in unit.error
    )
    with ThreadPoolExecutor(max_workers=1) as pool:
        rendering = pool.submit(verify.prerender, [(d, p) for d, p, _ in planned], env, jobs=jobs)
        try:
            preflight.check(ws, [(t.path, t.executor) for t in targets])
        finally:
            renders = rendering.result()
    preflight.check_roles(ws, verify.roles_of(planned, renders))
