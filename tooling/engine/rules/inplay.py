"""The units in play for a run, and the files Terragrunt parses for them, read from disk.

Before any Terragrunt process starts, the rules read every file Terragrunt will parse
for the run (:func:`tooling.engine.rules.before_terragrunt.refused_lines`). That is more than the
units asked for: every dependency of them, transitively (Terragrunt parses a
dependency's configuration for its outputs or mocks;
:func:`tooling.core.rules.parsed.parse_closure`), and the stack files that generated them.

No command of a run parses a unit beside them: the verifier judges each unit's static
form without Terragrunt, the per-unit planner runs in the unit's folder, and the
batch's ``run --all`` selects its units with one path filter each, which Terragrunt's
discovery applies before it parses a file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from tooling.core.rules.parsed import ParseClosure, parse_closure
from tooling.model.stacks import is_stack_file, stack_closure
from tooling.model.trees import WorkTree
from tooling.model.units import Model


@dataclass(frozen=True)
class InPlay:
    """What the rules read before Terragrunt starts: the closure, the tree its files are
    read from, and whether some unit of it could not be evaluated (then every HCL file
    of that tree is read too: such a unit may read any of them)."""

    closure: ParseClosure
    root: Path
    blind: bool


def tree_of(run_dir: Path, path: str) -> Path:
    """The tree root a unit's ``run_dir`` lies in (the repository, or a scratch copy where
    stacks are generated): ``run_dir`` without the unit's ``path``."""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    root = run_dir
    for _ in parts:
        root = root.parent
    return root


def escapes_from(root: Path, git_top: Path) -> Callable[[str], str | None]:
    """For a repository path under ``root``: where it points when it is (or lies under) a
    symbolic link that resolves outside the git repository at ``git_top``, else None."""
    top = git_top.resolve()

    def escapes(rel: str) -> str | None:
        real = Path(os.path.realpath(root / rel))
        if real.is_relative_to(top) or real.is_relative_to(root.resolve()):
            return None
        return str(real)

    return escapes


def in_play(
    model: Model,
    paths: Sequence[str],
    *,
    root: Path,
    run_dirs: Mapping[str, Path],
    live: tuple[str, ...],
    git_prefix: str,
    git_top: Path,
) -> InPlay:
    """The units ``paths`` (with their ``run_dirs``) in play: the closure of them and of
    their dependencies, read from the tree they run in."""
    pairs = [(p, run_dirs.get(p, root / p)) for p in paths if p in model.units]
    trees = {tree_of(d, p) for p, d in pairs}
    read_root = next((t for t in trees if t.resolve() != root.resolve()), root)
    start = list(paths)

    def text(rel: str) -> str | None:
        try:
            return (read_root / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    closure = parse_closure(
        model,
        start,
        live=live,
        git_prefix=git_prefix,
        text=text,
        escapes=escapes_from(read_root, git_top),
    )
    stacks = [f for f in closure.files if is_stack_file(f)]
    if stacks:  # what generated the units in play: its sources are judged again
        from tooling.model.configfiles import Loader
        from tooling.model.parsecache import ParseCache

        loader = Loader(WorkTree(read_root, live, git_prefix), ParseCache(None))
        made = stack_closure(loader, stacks)
        more = [f for f in made.files if f not in closure.files]
        closure = replace(closure, files=(*closure.files, *more), stack_sources=made.sources)
    blind = any(model.units[u].error for u in closure.units if u in model.units)
    return InPlay(closure, read_root, blind)
