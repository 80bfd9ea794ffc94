"""Layers: each unit sits in a declared layer, runs on its executor, and depends on
(and reads from) only the layers its layer may depend on. Pure.
"""

from __future__ import annotations

import posixpath

from tooling.core.rules.rule import Context, Rule, Stage
from tooling.core.rules.snapshot import (
    Snapshot,
    Violation,
    fact_site,
    line_of_text,
    unit_file,
)
from tooling.model.trees import in_live
from tooling.model.units import Unit


def _executor_site(unit: Unit, snap: Snapshot) -> tuple[str, int]:
    file, line, _ = fact_site(unit, "executor", snap)
    return file, line


def _read_line(unit: Unit, read: str, snap: Snapshot) -> int:
    """The line of the unit file that names ``read`` (as written relative to the unit, or its tail)."""
    path = unit_file(unit)
    text = snap.text(path) if path in snap.paths else ""
    target = read.rstrip("/")
    parts = target.split("/")
    for needle in (posixpath.relpath(target, unit.path), "/".join(parts[-2:]), parts[-1]):
        if needle in text:
            return line_of_text(text, needle)
    return 1


def check_layers(ctx: Context) -> list[Violation]:
    """Each unit is in a declared layer, runs on that layer's executor, and depends only on
    (and reads only from) the layers its layer may depend on."""
    model, policy, snap = ctx.model, ctx.policy, ctx.snap
    if model is None:
        return []
    out: list[Violation] = []
    declared = ", ".join(f"{layer.path} ({layer.name})" for layer in policy.layers) or "none"
    for path in model.order:
        unit = model.units[path]
        layer = policy.layer_of(unit.path)
        if layer is None:
            if not policy.layers:
                continue  # no layer declared: the repository has not adopted layers
            out.append(
                Violation(
                    unit_file(unit),
                    1,
                    "layer-unknown",
                    f"{unit.path} is in no layer declared in policy.toml (declared: {declared})",
                    "move the unit into a layer's folder, or declare its layer under [check.layers] in policy.toml",
                )
            )
            continue
        if unit.executor != layer.executor:
            file, line = _executor_site(unit, snap)
            fix = (
                f'remove the executor override (the tier file sets it) or set executor = "{layer.executor}"'
                if file == unit_file(unit)
                else f'set executor = "{layer.executor}" in {file}'
            )
            out.append(
                Violation(
                    file,
                    line,
                    "executor-layer",
                    f"{unit.path} runs on executor {unit.executor!r}, but layer {layer.name} ({layer.path}) runs on "
                    f"{layer.executor!r}",
                    f"{fix}; or move the unit to the layer whose executor it needs",
                )
            )
        elif policy.executors and unit.executor not in policy.executors:
            file, line = _executor_site(unit, snap)
            out.append(
                Violation(
                    file,
                    line,
                    "executor-layer",
                    f"{unit.path} runs on executor {unit.executor!r}, which policy.toml does not declare "
                    f"(declared: {', '.join(policy.executors)})",
                    f"declare [executors.{unit.executor}] in policy.toml, or use a declared executor",
                )
            )
        for dep in unit.dependencies:
            line = unit.line_of.get(f"dependency:{dep}", 1)
            if dep not in model.units:
                if dep.startswith("../") or not in_live(dep, policy.live):
                    continue  # dependency-outside names it (tooling.core.rules.closure)
                out.append(
                    Violation(
                        unit_file(unit),
                        line,
                        "dependency-missing",
                        f"{unit.path} depends on {dep}, which is not a unit",
                        "point config_path at an existing unit (after a move, update it to the unit's new folder)",
                    )
                )
                continue
            dep_layer = policy.layer_of(dep)
            if dep_layer is not None and dep_layer.name not in layer.may_depend_on:
                out.append(
                    Violation(
                        unit_file(unit),
                        line,
                        "layer-dependency",
                        f"{unit.path} (layer {layer.name}) depends on {dep} (layer {dep_layer.name}), "
                        f"but {layer.name} may depend only on {', '.join(layer.may_depend_on)}",
                        f"remove the dependency (pass the value another way), or reverse it: let {dep_layer.name} read "
                        f"{layer.name}'s outputs if policy.toml allows that",
                    )
                )
        for read in unit.reads:
            read_layer = policy.layer_of(read.rstrip("/"))
            if (
                read_layer is None
                or read_layer.name == layer.name
                or read_layer.name in layer.may_depend_on
            ):
                continue
            out.append(
                Violation(
                    unit_file(unit),
                    _read_line(unit, read, snap),
                    "layer-dependency",
                    f"{unit.path} (layer {layer.name}) reads {read}, a file of layer {read_layer.name}, "
                    f"but {layer.name} may depend only on {', '.join(layer.may_depend_on)}",
                    "read only files of the unit's own layer, the layers it may depend on, or shared files outside live/",
                )
            )
    return out


LAYERS = Rule(
    name="layers",
    ids=("executor-layer", "layer-unknown", "layer-dependency", "dependency-missing"),
    summary="each unit sits in a layer, runs on its executor, depends only where it may",
    stages=Stage.CHECK,
    check=check_layers,
)
