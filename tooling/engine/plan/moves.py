"""A moved unit: the model as if its folder sat at another path, and whether its plan waits
for its state (still at the old key). Used by ``invoke move-unit`` and ``invoke plan``."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path

from tooling.core.plan.affected import Affected
from tooling.errors import ToolingError
from tooling.io import backends, config, git, terragrunt
from tooling.model.repo import load
from tooling.model.trees import Tree, WorkTree
from tooling.model.units import Model


class RenamedTree:
    """A tree in which the files under ``real`` appear under ``virtual`` (and not under ``real``)."""

    def __init__(self, inner: Tree, real: str, virtual: str) -> None:
        self.inner = inner
        self.root = inner.root
        self.git_prefix = inner.git_prefix
        self.default_tiers = inner.default_tiers
        self.real = real.rstrip("/") + "/"
        self.virtual = virtual.rstrip("/") + "/"

    def _map(self, path: str) -> str | None:
        if path.startswith(self.virtual):
            return self.real + path[len(self.virtual) :]
        if path.startswith(self.real):
            return None  # moved away
        return path

    def exists(self, path: str) -> bool:
        mapped = self._map(path)
        return mapped is not None and self.inner.exists(mapped)

    def sha(self, path: str) -> str:
        mapped = self._map(path)
        if mapped is None:
            raise ToolingError(f"{path}: not in the renamed view")
        return self.inner.sha(mapped)

    def read(self, path: str) -> bytes:
        mapped = self._map(path)
        if mapped is None:
            raise ToolingError(f"{path}: not in the renamed view")
        return self.inner.read(mapped)

    def is_dir(self, path: str) -> bool:
        mapped = self._map(path.rstrip("/") + "/")
        return mapped is not None and self.inner.is_dir(mapped.rstrip("/"))

    def files_under(self, folder: str) -> list[str]:
        return sorted(p for p in (self._unmap(f) for f in self.inner.files_under(folder)) if p)

    def _unmap(self, path: str) -> str | None:
        if path.startswith(self.real):
            return self.virtual + path[len(self.real) :]
        return None if path.startswith(self.virtual) else path

    def realpath(self, path: str) -> str:
        return path

    def links_under(self, folder: str) -> list[str]:
        return []

    def unit_files(self) -> list[str]:
        out = []
        for path in self.inner.unit_files():
            if path.startswith(self.real):
                out.append(self.virtual + path[len(self.real) :])
            elif not path.startswith(self.virtual):
                out.append(path)
        return sorted(out)

    def fingerprint(self) -> str:
        return hashlib.sha1(
            f"{self.inner.fingerprint()}|{self.real}->{self.virtual}".encode()
        ).hexdigest()


def work_tree(root: Path, live: Sequence[str]) -> WorkTree:
    """The working tree under the ``live`` folders (policy.toml ``[layout]``)."""
    return WorkTree(root, tuple(live), git.prefix(root))


def model_with_unit_at(root: Path, live: Sequence[str], real: str, virtual: str) -> Model:
    """The working tree's model as if the unit folder ``real`` were at ``virtual``."""
    return load(RenamedTree(work_tree(root, live), real, virtual), None)


def moved_unit_blocked(
    root: Path,
    model: Model,
    change: Affected | None,
    path: str,
    env: Mapping[str, str] | None = None,
) -> bool:
    """Must the moved unit at ``path`` wait? Only when its new state holds nothing and its old
    one does, each where Terragrunt resolves the unit's backend at that folder
    (:mod:`tooling.io.backends`; the old folder is a copy of the unit for one render).

    (A unit never applied has state at neither: it plans like a new unit. One whose state
    was migrated has state at the new one.) ``env``: the tools' environment.
    """
    moved_from = (
        next((u.moved_from for u in change.units if u.path == path), None) if change else None
    )
    if moved_from is None or path not in model.units:
        return True
    env = env if env is not None else terragrunt.base_env()
    settings = config.load()
    try:
        with backends.unit_at(root, moved_from, path) as old_dir:
            old_backend = backends.of_unit(old_dir, env)
            new_backend = backends.of_unit(root / path, env)
            old = backends.located(old_backend, moved_from, settings)
            new = backends.located(new_backend, path, settings)
            if old is None or new is None:  # another type: ask Terragrunt for each state
                assert old_backend is not None and new_backend is not None
                if old_backend == new_backend:
                    return False
                if backends.TerragruntState(root / path, env, new_backend).pull() is not None:
                    return False
                return backends.TerragruntState(old_dir, env, old_backend).pull() is not None
    except ToolingError:
        return True  # `invoke move-unit` names what is wrong with its backend
    (old_store, old_key), (new_store, new_key) = old, new
    if old_store.describe(old_key) == new_store.describe(new_key):
        return False
    return not new_store.exists(new_key) and old_store.exists(old_key)
