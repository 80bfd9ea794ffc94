"""The units in play for a run, and the files Terragrunt parses for them, read from disk.

Before any Terragrunt process starts, the rules read every file Terragrunt will parse
for the run (:func:`tooling.engine.refusals.refused_lines`). That is more than the
units asked for:

- every dependency of them, transitively (Terragrunt parses a dependency's
  configuration for its outputs or mocks; :func:`tooling.core.closure.parse_closure`);
- every unit below the folders a ``--all`` command of the run starts from: the
  verifier's ``terragrunt render --all`` runs from the folder holding the units it
  renders (:func:`tooling.engine.verify.render_groups_of`: their common folder, or
  each one's parent when the common folder holds many units nobody asked for), and
  Terragrunt's discovery parses every ``terragrunt.hcl`` below it, hidden folders
  included (its caches, ``.terragrunt-cache`` and ``.terraform``, aside).

A ``terragrunt.hcl`` found there that is no unit of the model (outside the live
folders, in a hidden folder) is evaluated with the model's evaluator for its reads, so
the files it parses are read too.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from tooling.core.closure import ParseClosure, parse_closure
from tooling.model.repo import UNIT_FILE, Model, Unit, WorkTree
from tooling.model.stacks import is_stack_file, stack_closure

#: folders Terragrunt's discovery does not walk, and the tooling's own (``.iac``: scratch
#: copies of the repository's files, read in place, and base revisions' checkouts)
_UNWALKED = frozenset({".git", ".terragrunt-cache", ".terraform", ".iac"})


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


def terragrunt_files_below(base: Path) -> list[Path]:
    """Every ``terragrunt.hcl`` below ``base`` as Terragrunt's ``--all`` discovery finds
    it: hidden folders walked, its caches not."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d not in _UNWALKED)
        if UNIT_FILE in filenames:
            found.append(Path(dirpath, UNIT_FILE))
    return found


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


def _stray_units(
    root: Path, model: Model, found: Iterable[Path], live: tuple[str, ...], git_prefix: str
) -> tuple[dict[str, Unit], bool]:
    """The ``terragrunt.hcl`` files among ``found`` that are no unit of ``model``, each
    evaluated for its reads and dependencies; and whether one could not be evaluated."""
    strays = [
        rel
        for f in found
        if (rel := f.relative_to(root).as_posix().rsplit("/", 1)[0] if f.parent != root else ".")
        not in model.units
    ]
    if not strays:
        return {}, False
    from tooling.model.configfiles import Loader
    from tooling.model.loader import evaluate_unit
    from tooling.model.parsecache import ParseCache

    loader = Loader(WorkTree(root, live, git_prefix), ParseCache(None))
    units = {
        p: evaluate_unit(loader, f"{p}/{UNIT_FILE}" if p != "." else UNIT_FILE) for p in strays
    }
    return units, any(u.error for u in units.values())


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
    """The units ``paths`` (with their ``run_dirs``) in play: the closure of them, of every
    unit below the folder a ``--all`` command starts from, and of their dependencies."""
    pairs = [(p, run_dirs.get(p, root / p)) for p in paths if p in model.units]
    dirs = [d for _p, d in pairs]
    trees = {tree_of(d, p) for p, d in pairs}
    read_root = next((t for t in trees if t.resolve() != root.resolve()), root)
    start = list(paths)
    extra: dict[str, Unit] = {}
    blind = False
    from tooling.engine.verify import render_groups_of

    for tree in trees:
        in_tree = [d for d in dirs if d.resolve().is_relative_to(tree.resolve()) and d.is_dir()]
        bases = [Path(b) for b in render_groups_of(in_tree)] if in_tree else []
        found = [f for base in bases if base.is_dir() for f in terragrunt_files_below(base)]
        start += [
            p
            for f in found
            if (p := f.parent.relative_to(tree).as_posix() if f.parent != tree else ".")
            in model.units
        ]
        strays, stray_blind = _stray_units(tree, model, found, live, git_prefix)
        extra.update(strays)
        blind = blind or stray_blind
    if extra:
        model = Model({**model.units, **extra}, (*model.order, *extra))
        start += list(extra)

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
    blind = blind or any(model.units[u].error for u in closure.units if u in model.units)
    return InPlay(closure, read_root, blind)
