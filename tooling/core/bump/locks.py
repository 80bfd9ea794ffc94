"""Provider lock files in a bump: what a unit's ``.terraform.lock.hcl`` records, and what changed. Pure.

A module bump may need other providers (a new one, another version). The bump
refreshes each bumped unit's lock file with ``terragrunt providers lock``
(:mod:`tooling.engine.bump.pull_requests`) and commits it with the ref; these functions
read the file as OpenTofu writes it and say what moved, for the pull request
and the commit message.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

#: the lock file OpenTofu and Terragrunt keep next to a unit's terragrunt.hcl
LOCK_FILE = ".terraform.lock.hcl"

_BLOCK = re.compile(r'^provider\s+"([^"]+)"\s*\{(.*?)^\}', re.MULTILINE | re.DOTALL)
_ATTR = re.compile(r'^\s*(version|constraints)\s*=\s*"([^"]*)"', re.MULTILINE)
_HASHES = re.compile(r"^\s*hashes\s*=\s*\[(.*?)\]", re.MULTILINE | re.DOTALL)
_STRING = re.compile(r'"([^"]*)"')


@dataclass(frozen=True)
class LockedProvider:
    """One ``provider`` block of a lock file."""

    address: str
    version: str
    constraints: str
    hashes: tuple[str, ...]


@dataclass(frozen=True)
class LockChange:
    """One provider of one unit's lock file that a bump changed."""

    unit: str
    address: str
    #: ``None``: the provider was not in the lock file before
    old_version: str | None
    #: ``None``: the provider left the lock file
    new_version: str | None
    hashes: int = 0

    @property
    def kind(self) -> str:
        if self.old_version is None:
            return "added"
        if self.new_version is None:
            return "removed"
        if self.old_version != self.new_version:
            return "updated"
        return "checksums"


def lock_path(unit: str) -> str:
    """The repository path of ``unit``'s lock file."""
    return f"{unit}/{LOCK_FILE}"


def lock_command(platforms: Sequence[str]) -> str:
    """The command that refreshes a unit's lock file for ``platforms`` (run in the unit's folder).

    Dependency outputs are skipped: they do not change which providers a unit
    needs, and an unapplied dependency's mocks are usually allowed for plans only.
    """
    return " ".join(
        [
            "terragrunt run --experiment optional-dependency-outputs --no-dependency-outputs",
            "-- providers lock",
            *(f"-platform={p}" for p in platforms),
        ]
    )


#: what OpenTofu says when the configuration needs other providers than the lock file records
#: (``init -lockfile=readonly``) or when an installed provider does not match its checksums
_LOCK_ERRORS = (
    "provider dependency changes detected",
    "lock file is read-only",
    "inconsistent dependency lock file",
    "dependency lock file",
)


def lock_hint(error: str, unit: str, platforms: Sequence[str]) -> str | None:
    """What to do when a plan of ``unit`` failed on its lock file (``None``: another failure).

    A plan never rewrites a lock file: the fix is to lock the providers on purpose
    and commit the file, which a module bump does itself.
    """
    lowered = error.lower()
    if not any(marker in lowered for marker in _LOCK_ERRORS):
        return None
    return (
        f"{lock_path(unit)} does not record the providers this configuration needs, and a plan "
        f"never rewrites it. Run `{lock_command(platforms)}` in {unit}, review and commit "
        f"{lock_path(unit)} (`invoke bump-module` does this when it bumps a module)."
    )


def parse_lock(text: str) -> dict[str, LockedProvider]:
    """The providers a lock file records, by address (``registry.opentofu.org/hashicorp/time``)."""
    out = {}
    for block in _BLOCK.finditer(text):
        address, body = block.group(1), block.group(2)
        attrs = dict(_ATTR.findall(body))
        hashes = _HASHES.search(body)
        out[address] = LockedProvider(
            address,
            attrs.get("version", ""),
            attrs.get("constraints", ""),
            tuple(_STRING.findall(hashes.group(1))) if hashes else (),
        )
    return out


def lock_changes(unit: str, old: str | None, new: str | None) -> list[LockChange]:
    """What moved between two versions of ``unit``'s lock file (``None``: no file)."""
    before = parse_lock(old or "")
    after = parse_lock(new or "")
    changes = []
    for address in sorted(set(before) | set(after)):
        was, now = before.get(address), after.get(address)
        if was == now:
            continue
        changes.append(
            LockChange(
                unit,
                address,
                was.version if was else None,
                now.version if now else None,
                len(now.hashes) if now else 0,
            )
        )
    return changes


def _describe(change: LockChange) -> str:
    if change.kind == "added":
        return f"{change.address} {change.new_version} (added)"
    if change.kind == "removed":
        return f"{change.address} {change.old_version} (removed)"
    if change.kind == "updated":
        return f"{change.address} {change.old_version} -> {change.new_version}"
    return f"{change.address} {change.new_version} (checksums)"


def lock_commit_lines(changes: Sequence[LockChange]) -> list[str]:
    """Commit message lines: ``unit/.terraform.lock.hcl: provider old -> new``."""
    return [f"{lock_path(c.unit)}: {_describe(c)}" for c in changes]


def lock_body(changes: Sequence[LockChange], platforms: Sequence[str]) -> list[str]:
    """The pull request section on lock files (empty when none changed)."""
    if not changes:
        return []
    by_unit: dict[str, list[LockChange]] = {}
    for change in changes:
        by_unit.setdefault(change.unit, []).append(change)
    lines = [
        "",
        f"### Provider lock files ({', '.join(platforms)})",
        "",
        "The new module version needs other providers: `terragrunt providers lock` refreshed "
        "the lock file of each unit below, and it is part of this change. Plans install exactly "
        "these versions and checksums (`tofu init -lockfile=readonly`).",
        "",
        "| Lock file | Provider | Version | Checksums |",
        "|---|---|---|---|",
    ]
    for unit, unit_changes in by_unit.items():
        for c in unit_changes:
            if c.kind == "added":
                version = f"{c.new_version} (added)"
            elif c.kind == "removed":
                version = f"{c.old_version} (removed)"
            elif c.kind == "updated":
                version = f"{c.old_version} -> {c.new_version}"
            else:
                version = f"{c.new_version} (checksums only)"
            lines.append(f"| `{lock_path(unit)}` | `{c.address}` | {version} | {c.hashes} |")
    return lines
