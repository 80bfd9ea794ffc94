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
migrates the state only. :func:`tooling.engine.moves.moved_unit_blocked` tells
``invoke plan`` whether a moved unit still waits for its state; the state stores are
:mod:`tooling.io.statestore`.

The new key is computed, not assumed: the model is loaded over a view of the
working tree in which the unit's files sit at the other path.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tooling.core import names
from tooling.core.targets import unit_arg
from tooling.engine.moves import model_with_unit_at, work_tree
from tooling.errors import ToolingError, UsageError
from tooling.io import config, git
from tooling.io.statestore import s3_client, store_for
from tooling.io.ui import say
from tooling.io.workspace import Workspace
from tooling.model.layout import layout_from
from tooling.model.repo import UNIT_FILE, Model, load
from tooling.model.trees import in_live

BACKUP_SUFFIX = ".moved-backup"


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
    current = load(work_tree(root), None)
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
    old, new = _norm(old, "OLD"), _norm(new, "NEW")
    move = plan_move(root, old, new)
    if client_factory is s3_client:
        from tooling.engine import preflight

        preflight.check_state_backend(settings)
    model = load(work_tree(root), None)
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
