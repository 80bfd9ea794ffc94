"""``invoke units`` and ``invoke graph``: the repository's units as a list and as a picture."""

from __future__ import annotations

from tooling.engine.plan.affected import compute_affected, unreadable_exit
from tooling.errors import UsageError
from tooling.io.ui import show
from tooling.io.workspace import Workspace


def units(ws: Workspace, *, as_json: bool) -> int:
    """``invoke units``: every unit; exit 1 (after the list) when a unit's HCL does not parse."""
    from tooling.model.units import units_json

    model = ws.current_model
    if as_json:
        print(units_json(model))
        return unreadable_exit(model)
    for path in model.order:
        u = model.units[path]
        deps = ", ".join(u.dependencies) or "-"
        show(
            f"{u.path:<28} {u.tier}/{u.executor:<8} declared gate={u.gate:<6} ref={u.ref or '-':<8} deps: {deps}"
        )
        show(f"{'':<28} state: {u.state_key}   source: {u.source}")
        if u.error:
            show(f"{'':<28} cannot be read: {u.error}")
    show(
        "declared gate: the unit's (or tier's) gate class; a plan that touches a node/VM "
        "or deletes, replaces, forgets or imports anything waits for approval (manual) "
        "whatever it declares"
    )
    return unreadable_exit(model)


def graph(ws: Workspace, *, fmt: str, affected_base: str | None, highlight: bool) -> str:
    from tooling.core.report.graph import dot, mermaid

    if fmt not in ("mermaid", "dot"):
        raise UsageError(f"--format {fmt}: use mermaid or dot")
    model = ws.current_model
    marked: set[str] = set()
    if highlight:
        change, model = compute_affected(ws, affected_base, uncommitted=True)
        marked = {u.path for u in change.units}
    return mermaid(model, marked) if fmt == "mermaid" else dot(model, marked)
