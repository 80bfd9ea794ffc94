"""The repository model: every unit under live/, what it reads, what it depends on.

This module is the stable place to import the model from; the parts live in
:mod:`tooling.model.units` (the data), :mod:`tooling.model.trees` (working
tree and git revisions), :mod:`tooling.model.evaluator` (the Terragrunt
evaluator) and :mod:`tooling.model.loader` (discovery, per-unit evaluation,
the model cache).
"""

from __future__ import annotations

from tooling.model.loader import MODEL_CACHE_VERSION, load
from tooling.model.trees import GitTree, Tree, WorkTree
from tooling.model.units import (
    LIVE_DIR,
    META_KEYS,
    UNIT_FILE,
    Change,
    Model,
    Unit,
    toposort,
    units_json,
)

__all__ = [
    "LIVE_DIR",
    "META_KEYS",
    "MODEL_CACHE_VERSION",
    "UNIT_FILE",
    "Change",
    "GitTree",
    "Model",
    "Tree",
    "Unit",
    "WorkTree",
    "load",
    "toposort",
    "units_json",
]
