"""The unit DAG as a picture: Mermaid (renders on GitHub) or Graphviz DOT. Pure."""

from __future__ import annotations

from collections.abc import Collection

from tooling.model.units import Model

_PALETTE = ["#dbeafe", "#dcfce7", "#fef9c3", "#fae8ff", "#ffedd5", "#e0f2fe"]


def _node_id(path: str) -> str:
    return "u_" + "".join(c if c.isalnum() else "_" for c in path)


def _tiers(model: Model) -> dict[str, list[str]]:
    tiers: dict[str, list[str]] = {}
    for path in model.order:
        tiers.setdefault(model.units[path].tier, []).append(path)
    return tiers


def mermaid(model: Model, highlight: Collection[str] = ()) -> str:
    lines = ["flowchart LR"]
    tiers = _tiers(model)
    for tier, paths in tiers.items():
        executor = model.units[paths[0]].executor
        lines.append(f'  subgraph tier_{tier}["{tier} · {executor}"]')
        lines.extend(f'    {_node_id(p)}["{p}"]' for p in paths)
        lines.append("  end")
    for path in model.order:
        for dep in model.units[path].dependencies:
            if dep in model.units:
                lines.append(f"  {_node_id(dep)} --> {_node_id(path)}")
    for i, (tier, paths) in enumerate(tiers.items()):
        lines.append(f"  classDef {tier} fill:{_PALETTE[i % len(_PALETTE)]},stroke:#475569")
        lines.append(f"  class {','.join(_node_id(p) for p in paths)} {tier}")
    marked = [p for p in model.order if p in highlight]
    if marked:
        lines.append("  classDef affected stroke:#dc2626,stroke-width:3px")
        lines.append(f"  class {','.join(_node_id(p) for p in marked)} affected")
    return "\n".join(lines) + "\n"


def dot(model: Model, highlight: Collection[str] = ()) -> str:
    lines = ["digraph units {", "  rankdir=LR;", '  node [shape=box, style="rounded,filled"];']
    for i, (tier, paths) in enumerate(_tiers(model).items()):
        executor = model.units[paths[0]].executor
        color = _PALETTE[i % len(_PALETTE)]
        lines.append(f"  subgraph cluster_{tier} {{")
        lines.append(f'    label="{tier} · {executor}";')
        for p in paths:
            extra = ', color="#dc2626", penwidth=3' if p in highlight else ""
            lines.append(f'    {_node_id(p)} [label="{p}", fillcolor="{color}"{extra}];')
        lines.append("  }")
    for path in model.order:
        for dep in model.units[path].dependencies:
            if dep in model.units:
                lines.append(f"  {_node_id(dep)} -> {_node_id(path)};")
    lines.append("}")
    return "\n".join(lines) + "\n"
