"""The repository model: every unit under live/, what it reads, what it depends on.

:func:`load` is the one way in: from the model cache when it holds this tree, else
through the evaluator. The parts live in :mod:`tooling.model.units` (the data, imported
from there), :mod:`tooling.model.trees` (working tree and git revisions),
:mod:`tooling.model.evaluator` (the Terragrunt evaluator), :mod:`tooling.model.loader`
(discovery, per-unit evaluation) and :mod:`tooling.model.modelcache` (the model cache).
"""

from __future__ import annotations

from pathlib import Path

from tooling.model import modelcache
from tooling.model.trees import Tree
from tooling.model.units import Model


def load(tree: Tree, cache_dir: Path | None = None) -> Model:
    """The model of every unit in ``tree`` (:func:`tooling.model.loader.load`): from its
    cache when there is one, without importing the evaluator and the HCL parser."""
    cached_at = modelcache.path_of(tree, cache_dir)
    cached = modelcache.read(cached_at, tree) if cached_at is not None else None
    if cached is not None:
        return cached
    from tooling.model import loader

    return loader.load(tree, cache_dir)


__all__ = ["load"]
