"""The model cache: a model saved under its tree's fingerprint, read back without
the evaluator (a warm run imports no parser: :func:`tooling.model.repo.load`)."""

from __future__ import annotations

import marshal
import os
from collections.abc import Mapping
from dataclasses import asdict, fields
from pathlib import Path

from tooling.model.gitpaths import found_above
from tooling.model.trees import GitTree, Tree
from tooling.model.units import Model, Unit

MODEL_CACHE_VERSION = 17

#: the fields of a cached unit record (:func:`save` writes ``asdict`` of each unit)
_UNIT_FIELDS = frozenset(f.name for f in fields(Unit))


def path_of(tree: Tree, cache_dir: Path | None) -> Path | None:
    """Where the model of ``tree`` is cached (None: no cache folder)."""
    return cache_dir / f"model-{tree.fingerprint()}.marshal" if cache_dir else None


def save(
    path: Path,
    model: Model,
    data_files: dict[str, str],
    looked_above: Mapping[str, str | None] | None = None,
) -> None:
    """Save ``model`` at ``path``, with the blob SHAs of the data files its units read and
    the names its evaluation looked for above git's top level, each with what it found
    there (:meth:`~tooling.model.configfiles.Loader.find_above_repository`)."""
    data = {
        "v": MODEL_CACHE_VERSION,
        "data": data_files,
        "above": dict(looked_above or {}),
        "units": [(asdict(u)) for u in model.units.values()],
        "order": list(model.order),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    with tmp.open("wb") as fh:
        marshal.dump(data, fh)
    os.replace(tmp, path)
    # keep the cache folder small: old models are useless once the tree moved on
    models = sorted(path.parent.glob("model-*.marshal"), key=lambda p: p.stat().st_mtime)
    for old in models[:-16]:
        old.unlink(missing_ok=True)


def read(path: Path, tree: Tree) -> Model | None:
    """The model cached at ``path`` for ``tree``, or None (none, another version, or a
    data file its units read has changed since)."""
    try:
        # marshal.loads of the whole file: marshal.load reads a file object in small
        # pieces, several times slower (about 10 ms against 2 for 1,000 units)
        data = marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if not isinstance(data, dict) or data.get("v") != MODEL_CACHE_VERSION:
        return None
    # a git revision's fingerprint is its tree SHA, which covers every file it holds (the
    # data files too): only a working tree, whose fingerprint hashes HCL files alone,
    # must compare them (for a revision that would list the whole tree)
    for read, sha in data["data"].items() if not isinstance(tree, GitTree) else ():
        now = tree.sha(read) if tree.exists(read) and not tree.is_dir(read) else ""
        if now != sha:
            return None  # a data file a unit reads changed: evaluate again
    # outside the repository no fingerprint covers anything: a name the evaluation looked
    # for above git's top level is looked for again, and finding something else there now
    # (a file planted on a reused machine, say) means evaluating again, which refuses the
    # units that find it
    root = tree.root.as_posix()
    above = data.get("above")
    if not isinstance(above, dict):
        return None
    for name, found in above.items():
        if not isinstance(name, str) or found_above(root, tree.git_prefix, name) != found:
            return None
    units = {}
    new = object.__new__
    for raw in data["units"]:
        if not isinstance(raw, dict) or raw.keys() != _UNIT_FIELDS:
            return None  # not the records this version saves: evaluate again
        raw["dependencies"] = tuple(raw["dependencies"])
        raw["reads"] = tuple(raw["reads"])
        # the record as Unit(**raw) would build it (every field given, no __post_init__),
        # without the frozen class's object.__setattr__ for each of its fields: half the
        # time of reading 1,000 units
        unit = new(Unit)
        unit.__dict__.update(raw)
        units[raw["path"]] = unit
    return Model(units, tuple(data["order"]))
