"""``invoke move-unit OLD NEW``: move a unit's folder and its state together.

A unit's state key is derived from its path (root.hcl keys it by
``path_relative_to_include()``), so renaming the folder alone would make the
next plan create everything again at the new key while the old state still
claims the real resources. Moving a unit is therefore a state migration:

1. preflight: OLD is a unit tracked by git, NEW is free, neither state is
   locked, and the NEW one holds no state (refused otherwise: nothing is
   overwritten);
2. each end's state is where Terragrunt resolves the unit's backend at that
   folder (:mod:`tooling.io.backends`: ``terragrunt render`` of the unit at OLD
   and at NEW, a copy of the unit for one render where the folder does not
   exist): a local or S3 object is copied byte for byte and the copy verified;
   another backend type goes through ``terragrunt state pull``/``push``;
3. ``git mv OLD NEW`` (the unit's ``.terragrunt-cache`` is dropped first: it
   remembers the old backend key);
4. the old local or S3 object is renamed to ``<old key>.moved-backup``: kept as a
   backup, but no longer at a key a unit could read (a unit re-created at
   OLD starts empty, instead of managing the moved resources a second time). It
   stays until ``invoke move-unit OLD NEW --remove-backup``.

When the folder was already moved by hand (``git mv``), the same command
migrates the state only. :func:`tooling.engine.plan.moves.moved_unit_blocked` tells
``invoke plan`` whether a moved unit still waits for its state; the state stores are
:mod:`tooling.io.statestore`.

The model's keys (:func:`plan_move`, over a view of the working tree in which the
unit's files sit at the other path) serve the refusals only; the state is found where
Terragrunt puts it.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tooling.core.plan.targets import unit_arg
from tooling.core.rules import names
from tooling.engine.plan.moves import model_with_unit_at, work_tree
from tooling.errors import ToolingError, UsageError
from tooling.io import backends, git
from tooling.io.ui import say
from tooling.io.workspace import Workspace
from tooling.model.policy import Policy
from tooling.model.repo import load
from tooling.model.trees import in_live
from tooling.model.units import UNIT_FILE, Model

BACKUP_SUFFIX = ".moved-backup"


# --------------------------------------------------------------------------- the move


@dataclass(frozen=True)
class Plan:
    old: str
    new: str
    old_key: str | None  # as the model computes it; the move asks Terragrunt
    new_key: str | None
    folder_moved: bool  # the folder is already at NEW


def _norm(path: str, option: str) -> str:
    return unit_arg(path, option=option)


def _tracked(root: Path, path: str) -> bool:
    return bool(git.git(root, "ls-files", "--", path).stdout.strip())


def plan_move(root: Path, old: str, new: str, policy: Policy) -> Plan:
    """Work out the two keys; refuse anything that is not a plain move of one unit
    (``policy``: the repository's policy.toml, its live folders and naming rule)."""
    if old == new:
        raise UsageError("OLD and NEW are the same folder")
    live = policy.layout.live
    if not in_live(new, live) or ".." in new.split("/"):
        raise UsageError(
            f"{new}: the new folder must be under a live folder ({', '.join(live)}; "
            "policy.toml [layout] live), e.g. "
            + ("cloud/zone" if live == (".",) else f"{live[0]}/zone")
        )
    current = load(work_tree(root, live), None)
    for path in (old, new):
        unit = current.units.get(path)
        if unit is not None and unit.error and "HCL syntax error" in unit.error:
            raise ToolingError(f"cannot move {path}: its HCL does not parse: {unit.error}")
    others = [p for p in current.units if p != old]
    for bad in names.bad_unit_names([*others, new], live, policy.check.unit_name_pattern):
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
        after = model_with_unit_at(root, live, old, new).units.get(new)
        old_key = current.units[old].state_key
        new_key = after.state_key if after else None
        moved = False
    elif new in current.units:
        before = model_with_unit_at(root, live, new, old).units.get(old)
        old_key = before.state_key if before else None
        new_key = current.units[new].state_key
        moved = True
    else:
        raise UsageError(f"{old}: no unit there (and none at {new}); see `invoke units`")
    return Plan(old, new, old_key, new_key, moved)


def _dependents(model: Model, old: str) -> list[str]:
    out = []
    for unit in model.units.values():
        if old in unit.dependencies:
            line = unit.line_of.get(f"dependency:{old}", 1)
            out.append(f"{unit.path}/{UNIT_FILE}:{line}")
    return sorted(out)


def move_unit(ws: Workspace, old: str, new: str, *, remove_backup: bool = False) -> int:
    """``invoke move-unit``: move the folder (git mv) and migrate its state; or remove the backup.

    Both ends' state is where Terragrunt resolves the unit's backend, at the old folder and
    at the new one (:mod:`tooling.io.backends`): the repository's own ``remote_state`` or
    generated backend, local or S3 (copied, the old object kept as a backup) or any other
    type (``terragrunt state pull`` then ``state push``)."""
    root = ws.root
    settings = ws.settings
    old, new = _norm(old, "OLD"), _norm(new, "NEW")
    move = plan_move(root, old, new, ws.policy)
    model = load(work_tree(root, ws.layout.live), None)
    here = new if move.folder_moved else old
    unit = model.units.get(here)
    env = ws.env_for([unit.source] if unit and unit.source else [])
    with backends.unit_at(root, old, here) as old_dir, backends.unit_at(root, new, here) as new_dir:
        old_backend = backends.of_unit(old_dir, env)
        new_backend = backends.of_unit(new_dir, env)
        src = backends.located(old_backend, old, settings)
        dst = backends.located(new_backend, new, settings)
        if src is None or dst is None:
            assert old_backend is not None and new_backend is not None
            if remove_backup:
                raise UsageError(
                    f"{old}'s {old_backend.type} backend keeps no backup made by move-unit: nothing to remove"
                )
            moved = _migrate_through_terragrunt(
                ws, old, new, old_dir, new_dir, old_backend, new_backend, env
            )
            pulled = True
        else:
            moved = pulled = False
    if pulled:
        _move_folder(root, old, new, move.folder_moved, undo=None)
        _finish(model, old, new, has_backup=False)
        if moved and old_backend is not None:
            say(
                f"the old state ({old_backend.describe()}) still holds the resources: delete it once "
                f"`invoke plan --unit {new}` shows no changes, so nothing manages them twice"
            )
        return 0
    assert src is not None and dst is not None
    old_store, old_key = src
    new_store, new_key = dst
    if "s3" in (old_backend.type if old_backend else "", new_backend.type if new_backend else ""):
        from tooling.engine.rules import preflight

        preflight.check_state_backend(settings)
    backup = old_key + BACKUP_SUFFIX
    same = old_store.describe(old_key) == new_store.describe(new_key)

    if remove_backup:
        if not move.folder_moved:
            raise UsageError(
                f"{old} has not been moved yet: run `invoke move-unit {old} {new}` first"
            )
        if not old_store.exists(backup):
            say(f"no backup at {old_store.describe(backup)}: nothing to remove")
            return 0
        if not new_store.exists(new_key):
            raise ToolingError(
                f"{new_store.describe(new_key)} holds no state: the backup {old_store.describe(backup)} may be the "
                "only copy. Refusing to remove it."
            )
        old_store.delete(backup)
        say(f"removed the backup {old_store.describe(backup)}")
        return 0

    if same:
        say(
            f"the state {old_store.describe(old_key)} does not depend on the folder: no state to migrate"
        )
    else:
        for store, key in ((old_store, old_key), (new_store, new_key)):
            if store.locked(key):
                raise ToolingError(
                    f"{store.describe(key)} is locked: a plan or apply is running on it. Wait for it to finish."
                )
        if move.folder_moved and new_store.exists(new_key) and not old_store.exists(old_key):
            say(f"{new} already has its state at {new_store.describe(new_key)}: nothing to migrate")
            return 0
        if new_store.exists(new_key):
            raise ToolingError(
                f"refusing to move {old} to {new}: the new key {new_store.describe(new_key)} already holds state. "
                "Moving would overwrite it. Pick another folder, or find out whose state that is first."
            )
    has_state = not same and old_store.exists(old_key)
    if has_state:
        data = old_store.read(old_key)
        new_store.write(new_key, data)
        if new_store.read(new_key) != data:
            new_store.delete(new_key)
            raise ToolingError(
                f"the copy at {new_store.describe(new_key)} differs from the original; nothing was moved"
            )
        say(f"copied the state {old_store.describe(old_key)} -> {new_store.describe(new_key)}")
    elif not same:
        say(f"no state at {old_store.describe(old_key)} (never applied): nothing to migrate")

    def undo() -> None:
        if has_state:
            new_store.delete(new_key)

    _move_folder(root, old, new, move.folder_moved, undo=undo)
    if has_state:
        old_store.write(backup, old_store.read(old_key))
        old_store.delete(old_key)
        say(f"kept the old state as a backup: {old_store.describe(backup)}")
    _finish(model, old, new, has_backup=has_state)
    return 0


def _migrate_through_terragrunt(
    ws: Workspace,
    old: str,
    new: str,
    old_dir: Path,
    new_dir: Path,
    old_backend: backends.Backend,
    new_backend: backends.Backend,
    env: dict[str, str],
) -> bool:
    """A backend other than local and S3: ``state pull`` at the old folder, ``state push`` at
    the new one, refused when the new one already holds state. Whether state was moved."""
    if old_backend == new_backend:
        say(
            f"the state ({old_backend.describe()}) does not depend on the folder: no state to migrate"
        )
        return False
    source = backends.TerragruntState(old_dir, env, old_backend)
    target = backends.TerragruntState(new_dir, env, new_backend)
    if target.pull() is not None:
        raise ToolingError(
            f"refusing to move {old} to {new}: its new state ({new_backend.describe()}) already holds "
            "resources. Moving would overwrite it. Pick another folder, or find out whose state that is first."
        )
    state = source.pull()
    if state is None:
        say(f"no state at {old_backend.describe()} (never applied): nothing to migrate")
        return False
    target.push(state)
    say(f"pushed the state {old_backend.describe()} -> {new_backend.describe()}")
    return True


def _move_folder(
    root: Path, old: str, new: str, folder_moved: bool, undo: Callable[[], None] | None
) -> None:
    """``git mv OLD NEW`` (the working copy, which remembers the old backend, dropped first)."""
    if folder_moved:
        shutil.rmtree(root / new / ".terragrunt-cache", ignore_errors=True)
        return
    shutil.rmtree(root / old / ".terragrunt-cache", ignore_errors=True)
    (root / new).parent.mkdir(parents=True, exist_ok=True)
    try:
        git.git(root, "mv", old, new)
    except ToolingError:
        if undo is not None:
            undo()
        raise
    say(f"git mv {old} {new} (staged, not committed)")


def _finish(model: Model, old: str, new: str, *, has_backup: bool) -> None:
    for where in _dependents(model, old):
        say(f"warning: {where} still depends on {old}: point its config_path at {new}")
    say(
        f"next: `invoke plan --unit {new}` shows no changes; commit the move"
        + (
            f"; later remove the backup with `invoke move-unit {old} {new} --remove-backup`"
            if has_backup
            else ""
        )
    )
