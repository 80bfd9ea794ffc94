"""Fail closed before anything is planned, applied or bumped: a unit whose HCL does not
parse, a unit folder name outside the naming rule, a file that would run a command or
read differently while Terragrunt parses it."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from tooling.core.plan.targets import Target
from tooling.errors import ToolingError
from tooling.model.policy import CheckPolicy, Policy
from tooling.model.units import Model


def refuse_unparsable(model: Model, paths: Sequence[str], *, doing: str = "plan") -> None:
    """Fail closed, before the report folder is touched, when a unit to plan has an
    HCL syntax error: its dependencies and state key are unknown, so neither the
    plan order nor the change set can be trusted. (A unit the model merely cannot
    *evaluate* is planned: Terragrunt is the authority on what it means.)"""
    wanted = set(paths)
    broken = list(
        dict.fromkeys(
            str(u.error)
            for u in model.units.values()
            if u.path in wanted and _UNREADABLE in (u.error or "")
        )
    )
    if broken:
        raise ToolingError(
            f"cannot {doing}: a unit's HCL does not parse"
            + (" (the previous report is kept)" if doing == "plan" else "")
            + ":\n  "
            + "\n  ".join(broken)
        )


#: the mark of a unit whose file HCL refuses (the model's error says so, with file:line)
_UNREADABLE = "HCL syntax error"


def refused_unit_files(model: Model, paths: Sequence[str]) -> dict[str, str]:
    """The units among ``paths`` whose configuration HCL refuses (a syntax error, bytes
    that are not UTF-8, an attribute set twice: :func:`tooling.model.hcl.parse`), each
    with the error naming file:line, and the units among ``paths`` that depend on one
    (Terragrunt parses a dependency's configuration for its dependents): each is
    refused alone, the other units go on."""
    broken = {p: u.error for p, u in model.units.items() if u.error and _UNREADABLE in u.error}
    out: dict[str, str] = {}
    for path in paths:
        if path in broken:
            out[path] = str(broken[path])
        elif broken and path in model.units:
            upstream = sorted(d for d in model.upstream(path) if d in broken)
            if upstream:
                out[path] = (
                    f"its dependency {upstream[0]} cannot be read, and Terragrunt parses it for "
                    f"this unit: {broken[upstream[0]]}"
                )
    return out


def refuse_unreadable_alone(model: Model, targets: Sequence[Target]) -> list[Target]:
    """``targets``, those :func:`refused_unit_files` names settled as errors with the
    reason (never planned), the others as they were."""
    refused = refused_unit_files(model, [t.path for t in targets if not t.preset])
    return [
        replace(t, preset="error", preset_reason=f"refused: {refused[t.path]}")
        if t.path in refused
        else t
        for t in targets
    ]


def refuse_when_none_readable(
    before: Sequence[Target], after: Sequence[Target], *, doing: str = "plan"
) -> None:
    """Fail closed, before the report folder is touched (the previous report is kept),
    when :func:`refuse_unreadable_alone` (``before`` → ``after``) settled every unit that
    was left to ``doing``: nothing would run; each file:line is named."""
    settled = [
        (t.preset_reason or "").removeprefix("refused: ")
        for t, was in zip(after, before, strict=True)
        if t.preset and not was.preset
    ]
    if settled and all(t.preset for t in after):
        raise ToolingError(
            f"cannot {doing}: the configuration of every unit to {doing} cannot be read "
            "(the previous report is kept):\n  " + "\n  ".join(settled)
        )


def refuse_bad_names(model: Model, paths: Sequence[str], *, policy: Policy) -> None:
    """Fail closed before any state key is used or command built when a unit to plan has a
    folder name outside the naming rule (``invoke check`` names the same units) of
    ``policy`` (its live folders, its ``[check] unit_name_pattern``)."""
    from tooling.core.rules import names

    wanted = set(paths)
    live, pattern = policy.layout.live, policy.check.unit_name_pattern
    bad = [b for b in names.bad_unit_names(model.units, live, pattern) if b.path in wanted]
    if bad:
        raise ToolingError(
            "cannot plan: a unit's folder name is not allowed (the previous report is kept):\n  "
            + "\n  ".join(f"{b.path}/terragrunt.hcl:1: {b.why}" for b in bad)
            + "\nRename the folder to lowercase letters, digits and dashes "
            "(`invoke move-unit OLD NEW` migrates its state); docs/rules.md, unit-name."
        )


def refuse_before_terragrunt(
    model: Model,
    paths: Sequence[str],
    *,
    root: Path,
    policy: Policy,
    doing: str = "plan",
    run_dirs: Mapping[str, Path] | None = None,
    git_prefix: str | None = None,
) -> None:
    """Fail closed before any Terragrunt process parses the units to plan when a file
    Terragrunt will parse for them (their closure: :mod:`tooling.engine.rules.inplay`) breaks a
    rule that runs before Terragrunt: it calls ``run_cmd`` (not allowlisted) or a
    function that tells the render from the plan, reads a dependency's outputs outside
    ``inputs`` (the same rules as ``invoke check``, which the plan does not wait for), or
    lies outside the repository (a dependency outside the live folders, a configuration
    read outside the repository). Terragrunt's first parse would run the command; a
    render resolves a dependency's outputs to its mocks, the plan to the real values. A unit the model cannot evaluate may read any
    file: then every HCL file of the repository is read for calls. ``run_dirs``: where
    Terragrunt runs each unit (a stack's generated unit: in its scratch copy)."""
    found = refused_lines(
        root, model, paths, policy.check, run_dirs=run_dirs, git_prefix=git_prefix
    )
    if found:
        raise ToolingError(
            f"cannot {doing}: configuration that would run a command while Terragrunt parses "
            "it, read differently in a picture of it and in the plan, or lies outside "
            "the repository"
            + (" (the previous report is kept)" if doing == "plan" else "")
            + ":\n  "
            + "\n  ".join(found)
        )


def refused_lines(
    root: Path,
    model: Model,
    paths: Sequence[str],
    policy: CheckPolicy,
    *,
    run_dirs: Mapping[str, Path] | None = None,
    git_prefix: str | None = None,
) -> list[str]:
    """What :func:`refuse_before_terragrunt` refuses for the units ``paths``, one
    ``file:line: rule: ...`` line each (``invoke doctor`` lists them before a plan does):
    every rule of the registry that runs at ``Stage.BEFORE_TERRAGRUNT``, on the files
    Terragrunt will parse for those units and on where they lie."""
    from tooling.core.rules import registry
    from tooling.core.rules.rule import Context, Stage
    from tooling.core.rules.snapshot import Snapshot
    from tooling.engine.rules.inplay import in_play
    from tooling.io import git

    prefix = git.prefix(root) if git_prefix is None else git_prefix
    top = root
    for _ in [p for p in prefix.split("/") if p]:
        top = top.parent
    found = in_play(
        model,
        [p for p in paths if p in model.units],
        root=root,
        run_dirs=run_dirs or {},
        live=policy.live,
        git_prefix=prefix,
        git_top=top,
    )
    files = dict.fromkeys(found.closure.files)
    if found.blind:
        files.update((f, None) for f in _hcl_files(found.root))
    texts: dict[str, str] = {}
    for rel in files:
        try:
            # surrogateescape: the rules read the file's very bytes back
            texts[rel] = (found.root / rel).read_bytes().decode("utf-8", "surrogateescape")
        except OSError:
            continue  # a file gone or unreadable: Terragrunt says so itself
    ctx = Context(
        policy=policy,
        snap=Snapshot.of(texts),
        hcl_files=tuple(texts),
        closure=found.closure,
    )
    return list(dict.fromkeys(str(v) for v in registry.run(Stage.BEFORE_TERRAGRUNT, ctx)))


def _hcl_files(root: Path) -> list[str]:
    """Every ``*.hcl`` and ``*.hcl.json`` file below ``root`` (hidden folders, Terragrunt's
    caches among them, left out), as repository paths."""
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        here = Path(dirpath).relative_to(root)
        out += [(here / n).as_posix() for n in filenames if n.endswith((".hcl", ".hcl.json"))]
    return sorted(out)
