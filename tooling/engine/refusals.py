"""Fail closed before anything is planned, applied or bumped: a unit whose HCL does not
parse, a unit folder name outside the naming rule, a file that would run a command or
read differently while Terragrunt parses it."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tooling.errors import ToolingError
from tooling.model.repo import Model


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
            if u.path in wanted and "HCL syntax error" in (u.error or "")
        )
    )
    if broken:
        raise ToolingError(
            f"cannot {doing}: a unit's HCL does not parse"
            + (" (the previous report is kept)" if doing == "plan" else "")
            + ":\n  "
            + "\n  ".join(broken)
        )


def refuse_bad_names(
    model: Model, paths: Sequence[str], *, live: Sequence[str], policy: Mapping[str, Any]
) -> None:
    """Fail closed before any state key is used or command built when a unit to plan has a
    folder name outside the naming rule (``invoke check`` names the same units); ``live``:
    the live folders, ``policy``: policy.toml."""
    from tooling.core import names

    wanted = set(paths)
    bad = [
        b
        for b in names.bad_unit_names(model.units, live, names.pattern_from(policy))
        if b.path in wanted
    ]
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
    policy: Mapping[str, Any],
    doing: str = "plan",
) -> None:
    """Fail closed before any Terragrunt process parses the units to plan when one of the
    files they read calls ``run_cmd`` (not allowlisted), a function that tells the
    render from the plan, or reads a dependency's outputs outside ``inputs``
    (``run-at-parse``, ``command-dependent``, ``dependency-outside-inputs``: the same
    rules as ``invoke check``, which the plan does not wait for). Terragrunt's first
    parse, the verifier's render included, would run the command; the render resolves
    a dependency's outputs to its mocks, the plan to the real values. A unit the model cannot evaluate
    may read any file: then every HCL file of the repository is read for calls."""
    from tooling.core.checksettings import parse_policy

    allowed = parse_policy(policy).allowed_run_at_parse
    found = refused_lines(root, model, paths, allowed)
    if found:
        raise ToolingError(
            f"cannot {doing}: configuration that would run a command while Terragrunt parses "
            "it, or read differently in a picture of it and in the plan"
            + (" (the previous report is kept)" if doing == "plan" else "")
            + ":\n  "
            + "\n  ".join(found)
        )


def refused_lines(
    root: Path, model: Model, paths: Sequence[str], allowed: Mapping[str, str]
) -> list[str]:
    """What :func:`refuse_before_terragrunt` refuses for the units ``paths``, one
    ``file:line: rule: ...`` line each (``invoke doctor`` lists them before a plan does):
    every rule of the registry that runs at ``Stage.BEFORE_TERRAGRUNT``, on the text of
    the files those units read."""
    from tooling.core.checksettings import CheckPolicy
    from tooling.core.rules import registry
    from tooling.core.rules.rule import Context, Stage
    from tooling.core.rules.snapshot import Snapshot

    files: dict[str, None] = {}
    everything = False
    for path in paths:
        unit = model.units.get(path)
        if unit is None:
            continue
        files[f"{path}/terragrunt.hcl"] = None
        files.update((r, None) for r in unit.reads if not r.endswith("/"))
        everything = everything or bool(unit.error)
    if everything:
        files.update((f, None) for f in _hcl_files(root))
    texts: dict[str, str] = {}
    for rel in files:
        try:
            # surrogateescape: the rules read the file's very bytes back
            texts[rel] = (root / rel).read_bytes().decode("utf-8", "surrogateescape")
        except OSError:
            continue  # a file gone or unreadable: Terragrunt says so itself
    ctx = Context(
        policy=CheckPolicy(allowed_run_at_parse=allowed),
        snap=Snapshot.of(texts),
        hcl_files=tuple(texts),
    )
    return list(dict.fromkeys(str(v) for v in registry.run(Stage.BEFORE_TERRAGRUNT, ctx)))


def _hcl_files(root: Path) -> list[str]:
    """Every ``*.hcl`` file below ``root`` (hidden folders, Terragrunt's caches among them,
    left out), as repository paths."""
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        here = Path(dirpath).relative_to(root)
        out += [(here / n).as_posix() for n in filenames if n.endswith(".hcl")]
    return sorted(out)
