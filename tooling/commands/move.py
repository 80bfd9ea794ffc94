"""``invoke move-unit OLD NEW``: move a unit's folder and its state together.

A unit's state key is derived from its path (root.hcl keys it by
``path_relative_to_include()``), so renaming the folder alone would make the
next plan create everything again at the new key while the old state still
claims the real resources. Moving a unit is therefore a state migration:

1. preflight: OLD is a unit tracked by git, NEW is free, neither key is locked,
   and the NEW key holds no state (refused otherwise: nothing is overwritten);
2. the state object is copied from the old key to the new one, byte for byte
   (local backend: files under ``.iac/state/``; S3: ``copy_object`` with the
   settings the tooling uses: ``IAC_STATE_BUCKET``, ``IAC_STATE_REGION``,
   ``IAC_STATE_ENDPOINT``), and the copy is verified;
3. ``git mv OLD NEW`` (the unit's ``.terragrunt-cache`` is dropped first: it
   remembers the old backend key);
4. the old key is renamed to ``<old key>.moved-backup``: kept as a backup, but
   no longer at a key a unit could read (a unit re-created at OLD starts
   empty, instead of managing the moved resources a second time). It stays
   until ``invoke move-unit OLD NEW --remove-backup``.

When the folder was already moved by hand (``git mv``), the same command
migrates the state only. :func:`moved_unit_blocked` tells ``invoke plan``
whether a moved unit still waits for its state.

The new key is computed, not assumed: the model is loaded over a view of the
working tree in which the unit's files sit at the other path.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tooling.core import names
from tooling.core.changes import Affected
from tooling.core.targets import unit_arg
from tooling.errors import ToolingError, UsageError
from tooling.io import config, git
from tooling.io.ui import say
from tooling.io.workspace import Workspace
from tooling.model.layout import layout_from
from tooling.model.repo import UNIT_FILE, Model, Tree, WorkTree, load
from tooling.model.trees import in_live

BACKUP_SUFFIX = ".moved-backup"


# --------------------------------------------------------------------------- the model at another path


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


def _work_tree(root: Path) -> WorkTree:
    """The working tree under the live folders of policy.toml ``[layout]``."""
    return WorkTree(root, layout_from(config.read_policy(root)).live, git.prefix(root))


def model_with_unit_at(root: Path, real: str, virtual: str) -> Model:
    """The working tree's model as if the unit folder ``real`` were at ``virtual``."""
    return load(RenamedTree(_work_tree(root), real, virtual), None)


# --------------------------------------------------------------------------- state stores


class StateStore(Protocol):
    """Where units keep state; keys are the model's ``state_key`` values."""

    where: str

    def exists(self, key: str) -> bool: ...

    def locked(self, key: str) -> bool: ...

    def read(self, key: str) -> bytes: ...

    def copy(self, src: str, dst: str) -> None: ...

    def delete(self, key: str) -> None: ...

    def describe(self, key: str) -> str: ...


class LocalStore:
    """The local backend: ``<state dir>/<key>`` (root.hcl's ``IAC_STATE_DIR``, set by the tooling
    to ``.iac/state`` of the repository)."""

    def __init__(self, state_dir: Path, root: Path | None = None) -> None:
        self.dir = state_dir
        self.root = root
        self.where = str(state_dir)

    def _path(self, key: str) -> Path:
        return self.dir / key

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def locked(self, key: str) -> bool:
        path = self._path(key)
        return (path.parent / f".{path.name}.lock.info").exists()

    def read(self, key: str) -> bytes:
        return self._path(key).read_bytes()

    def copy(self, src: str, dst: str) -> None:
        target = self._path(dst)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        shutil.copy2(self._path(src), tmp)
        os.replace(tmp, target)

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def describe(self, key: str) -> str:
        path = self._path(key)
        if self.root is not None and path.is_relative_to(self.root):
            return path.relative_to(self.root).as_posix()
        return str(path)


class S3Store:
    """An S3 (or S3-compatible) bucket; the lock of a key is ``<key>.tflock`` (``use_lockfile``)."""

    def __init__(self, bucket: str, client: Any) -> None:
        self.bucket = bucket
        self.client = client
        self.where = f"s3://{bucket}"

    def _head(self, key: str) -> bool:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.client.head_object(Bucket=self.bucket, Key=key)
        except BotoCoreError as exc:  # unreachable endpoint, no credentials...
            raise ToolingError(
                f"s3://{self.bucket}/{key}: cannot reach the state backend ({exc}); "
                "check IAC_STATE_ENDPOINT, the network and the AWS credentials"
            ) from None
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if code in ("404", "NoSuchKey", "NotFound"):
                return False
            raise ToolingError(
                f"s3://{self.bucket}/{key}: cannot read the state backend ({code}): {exc}"
            ) from None
        return True

    def exists(self, key: str) -> bool:
        return self._head(key)

    def locked(self, key: str) -> bool:
        return self._head(f"{key}.tflock")

    def read(self, key: str) -> bytes:
        body: bytes = self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        return body

    def copy(self, src: str, dst: str) -> None:
        self.client.copy_object(
            Bucket=self.bucket,
            Key=dst,
            CopySource={"Bucket": self.bucket, "Key": src},
            ServerSideEncryption="AES256",  # root.hcl's backend has encrypt = true
        )

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=key)

    def describe(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"


def s3_client(settings: config.Settings, *, quick: bool = False) -> Any:
    """A boto3 S3 client with the tooling's settings (:func:`tooling.io.s3.client`)."""
    from tooling.io import s3

    return s3.client(settings, quick=quick)


def store_for(
    root: Path,
    settings: config.Settings,
    bucket: str | None = None,
    client_factory: Callable[[config.Settings], Any] = s3_client,
) -> StateStore:
    """The store the units' state lives in, as root.hcl configures it from the same variables."""
    name = bucket or settings.state_bucket
    if name:
        return S3Store(name, client_factory(settings))
    return LocalStore(root / ".iac" / "state", root)


# --------------------------------------------------------------------------- plan's question


def moved_unit_blocked(root: Path, model: Model, change: Affected | None, path: str) -> bool:
    """Must the moved unit at ``path`` wait? Only when its new key holds no state and its old key does.

    (A unit never applied has state at neither key: it plans like a new unit.
    One whose state was migrated has state at the new key.)
    """
    moved_from = (
        next((u.moved_from for u in change.units if u.path == path), None) if change else None
    )
    unit = model.units.get(path)
    if moved_from is None or unit is None or unit.state_key is None:
        return True
    old = model_with_unit_at(root, path, moved_from).units.get(moved_from)
    if old is None or old.state_key is None:
        return True
    settings = config.load()
    new_store = store_for(root, settings, unit.state_bucket)
    old_store = store_for(root, settings, old.state_bucket)
    return not new_store.exists(unit.state_key) and old_store.exists(old.state_key)


# --------------------------------------------------------------------------- the move


@dataclass(frozen=True)
class Plan:
    old: str
    new: str
    old_key: str
    new_key: str
    folder_moved: bool  # the folder is already at NEW


def _norm(path: str, option: str) -> str:
    return unit_arg(path, option=option)


def _tracked(root: Path, path: str) -> bool:
    return bool(git.git(root, "ls-files", "--", path).stdout.strip())


def plan_move(root: Path, old: str, new: str) -> Plan:
    """Work out the two keys; refuse anything that is not a plain move of one unit."""
    if old == new:
        raise UsageError("OLD and NEW are the same folder")
    live = layout_from(config.read_policy(root)).live
    if not in_live(new, live) or ".." in new.split("/"):
        raise UsageError(
            f"{new}: the new folder must be under a live folder ({', '.join(live)}; "
            "policy.toml [layout] live), e.g. "
            + ("cloud/zone" if live == (".",) else f"{live[0]}/zone")
        )
    current = load(_work_tree(root), None)
    for path in (old, new):
        unit = current.units.get(path)
        if unit is not None and unit.error and "HCL syntax error" in unit.error:
            raise ToolingError(f"cannot move {path}: its HCL does not parse: {unit.error}")
    policy = config.read_policy(root)
    others = [p for p in current.units if p != old]
    for bad in names.bad_unit_names(
        [*others, new], layout_from(policy).live, names.pattern_from(policy)
    ):
        if bad.path == new:
            raise UsageError(
                f"{new}: not an allowed unit folder ({bad.why}); use lowercase letters, digits and dashes"
            )
    if old in current.units and new in current.units:
        raise UsageError(f"{new} is already a unit: pick a free folder")
    if old in current.units:
        if (root / new).exists():
            raise UsageError(f"{new} already exists: pick a free folder")
        if not _tracked(root, f"{old}/{UNIT_FILE}"):
            raise ToolingError(
                f"{old}/{UNIT_FILE} is not tracked by git: commit the unit before moving it"
            )
        after = model_with_unit_at(root, old, new).units.get(new)
        old_key = current.units[old].state_key
        new_key = after.state_key if after else None
        moved = False
    elif new in current.units:
        before = model_with_unit_at(root, new, old).units.get(old)
        old_key = before.state_key if before else None
        new_key = current.units[new].state_key
        moved = True
    else:
        raise UsageError(f"{old}: no unit there (and none at {new}); see `invoke units`")
    if old_key is None or new_key is None:
        raise ToolingError(
            f"the state key of {old if old_key is None else new} cannot be computed from its configuration; "
            "`invoke check` names the problem"
        )
    return Plan(old, new, old_key, new_key, moved)


def _dependents(model: Model, old: str) -> list[str]:
    out = []
    for unit in model.units.values():
        if old in unit.dependencies:
            line = unit.line_of.get(f"dependency:{old}", 1)
            out.append(f"{unit.path}/{UNIT_FILE}:{line}")
    return sorted(out)


def move_unit(
    ws: Workspace,
    old: str,
    new: str,
    *,
    remove_backup: bool = False,
    client_factory: Callable[[config.Settings], Any] = s3_client,
) -> int:
    """``invoke move-unit``: move the folder (git mv) and migrate its state; or remove the backup."""
    root = ws.root
    settings = ws.settings
    say(ws.describe())
    old, new = _norm(old, "OLD"), _norm(new, "NEW")
    move = plan_move(root, old, new)
    if client_factory is s3_client:
        from tooling.commands import preflight

        preflight.check_state_backend(settings)
    model = load(_work_tree(root), None)
    unit = model.units.get(new if move.folder_moved else old)
    store = store_for(root, settings, unit.state_bucket if unit else None, client_factory)
    backup = move.old_key + BACKUP_SUFFIX

    if remove_backup:
        if not move.folder_moved:
            raise UsageError(
                f"{old} has not been moved yet: run `invoke move-unit {old} {new}` first"
            )
        if not store.exists(backup):
            say(f"no backup at {store.describe(backup)}: nothing to remove")
            return 0
        if not store.exists(move.new_key):
            raise ToolingError(
                f"{store.describe(move.new_key)} holds no state: the backup {store.describe(backup)} may be the "
                "only copy. Refusing to remove it."
            )
        store.delete(backup)
        say(f"removed the backup {store.describe(backup)}")
        return 0

    if move.old_key == move.new_key:
        say(f"the state key {move.old_key} does not depend on the folder: no state to migrate")
    else:
        for key in (move.old_key, move.new_key):
            if store.locked(key):
                raise ToolingError(
                    f"{store.describe(key)} is locked: a plan or apply is running on it. Wait for it to finish."
                )
        if move.folder_moved and store.exists(move.new_key) and not store.exists(move.old_key):
            say(
                f"{new} already has its state at {store.describe(move.new_key)}: nothing to migrate"
            )
            return 0
        if store.exists(move.new_key):
            raise ToolingError(
                f"refusing to move {old} to {new}: the new key {store.describe(move.new_key)} already holds state. "
                "Moving would overwrite it. Pick another folder, or find out whose state that is first."
            )
    has_state = move.old_key != move.new_key and store.exists(move.old_key)
    if has_state:
        store.copy(move.old_key, move.new_key)
        if store.read(move.new_key) != store.read(move.old_key):
            store.delete(move.new_key)
            raise ToolingError(
                f"the copy at {store.describe(move.new_key)} differs from the original; nothing was moved"
            )
        say(f"copied the state {store.describe(move.old_key)} -> {store.describe(move.new_key)}")
    elif move.old_key != move.new_key:
        say(f"no state at {store.describe(move.old_key)} (never applied): nothing to migrate")
    if not move.folder_moved:
        shutil.rmtree(root / old / ".terragrunt-cache", ignore_errors=True)
        (root / new).parent.mkdir(parents=True, exist_ok=True)
        try:
            git.git(root, "mv", old, new)
        except ToolingError:
            if has_state:
                store.delete(move.new_key)
            raise
        say(f"git mv {old} {new} (staged, not committed)")
    else:
        shutil.rmtree(root / new / ".terragrunt-cache", ignore_errors=True)
    if has_state:
        store.copy(move.old_key, backup)
        store.delete(move.old_key)
        say(f"kept the old state as a backup: {store.describe(backup)}")
    for where in _dependents(model, old):
        say(f"warning: {where} still depends on {old}: point its config_path at {new}")
    say(
        f"next: `invoke plan --unit {new}` shows no changes; commit the move"
        + (
            f"; later remove the backup with `invoke move-unit {old} {new} --remove-backup`"
            if has_state
            else ""
        )
    )
    return 0
