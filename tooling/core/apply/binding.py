"""What binds a saved plan to what it was made of: the working tree it was planned
from, and the unit whose state it was planned against. Pure.

- **The working tree.** A plan is made from the files on disk, not from HEAD:
  an uncommitted edit is planned (and would be applied) as if it were the
  commit. ``summary.json`` records ``worktree``: whether the tree was dirty,
  the changed files and a digest of the difference (``git diff HEAD`` plus the
  untracked files' content), and ``invoke apply`` refuses a plan of a dirty tree.
- **The unit's state.** A saved plan carries the backend it was planned with
  (OpenTofu's plan file is a zip whose ``tfplan`` entry is a protocol buffer;
  its field 13 is the backend: type, configuration as msgpack, workspace).
  ``tofu show -json`` does not show it, so it is read here, and ``invoke
  apply`` refuses a plan whose state key is not the unit's own (plans swapped
  or copied between units).
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tooling.core.plan.summary import Summary, Worktree

#: the plan zip's entry that holds the plan itself (OpenTofu's planfile format)
TFPLAN_ENTRY = "tfplan"
_PLAN_BACKEND = 13  # Plan.backend
_BACKEND_TYPE, _BACKEND_CONFIG, _BACKEND_WORKSPACE = 1, 2, 3
_DYNAMIC_MSGPACK = 1  # DynamicValue.msgpack


# ------------------------------------------------------------------ the working tree


def worktree_digest(diff: str, untracked: Sequence[tuple[str, bytes]]) -> str:
    """``sha256:…`` of the uncommitted difference: ``git diff HEAD --binary`` and each
    untracked file (path and content, sorted by path)."""
    digest = hashlib.sha256()
    digest.update(diff.encode("utf-8", "surrogateescape"))
    for path, content in sorted(untracked):
        digest.update(b"\0untracked\0" + path.encode() + b"\0")
        digest.update(hashlib.sha256(content).digest())
    return "sha256:" + digest.hexdigest()


def worktree_record(
    files: Sequence[str], diff: str, untracked: Sequence[tuple[str, bytes]]
) -> Worktree:
    """summary.json's ``worktree``: clean, or dirty with its changed files and digest."""
    if not files:
        return Worktree(dirty=False)
    return Worktree(True, tuple(sorted(set(files))), worktree_digest(diff, untracked))


def dirty_refusal(summary: Summary, where: str, plans_dir: str) -> str | None:
    """Why ``invoke apply`` refuses these plans because of the tree they were made from
    (None: made from a clean tree at their commit)."""
    tree = summary.worktree
    if tree is None:
        return (
            f"{where}: does not say whether the plans were made from a clean tree (no `worktree`); "
            f"nothing applied. Plan again: `invoke plan --out {plans_dir}`"
        )
    if not tree.dirty:
        return None
    files = tree.files
    shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
    return (
        f"{where}: these plans were made from a tree with uncommitted changes ({shown}; "
        f"{tree.digest}), not from commit {str(summary.head)[:12]}; nothing applied. "
        f"Commit (or discard) the changes, then plan again: `invoke plan --out {plans_dir}`"
    )


# ------------------------------------------------------------------ the plan's backend


@dataclass(frozen=True)
class Backend:
    """The backend a saved plan was made with."""

    type: str
    config: Mapping[str, Any]
    workspace: str

    @property
    def state(self) -> str | None:
        """Where its state lives: the S3 (or similar) key, or the local path."""
        for name in ("key", "path"):
            value = self.config.get(name)
            if isinstance(value, str) and value:
                return value
        return None


class PlanFormatError(ValueError):
    """The bytes are not a plan this reader understands."""


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data):
            raise PlanFormatError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise PlanFormatError("varint too long")


def proto_fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) of a protocol buffer message: an int for varints and fixed
    widths, bytes for length-delimited fields (strings, messages)."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            yield number, value
        elif wire == 1:
            yield number, int.from_bytes(data[pos : pos + 8], "little")
            pos += 8
        elif wire == 2:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise PlanFormatError("truncated field")
            yield number, data[pos : pos + size]
            pos += size
        elif wire == 5:
            yield number, int.from_bytes(data[pos : pos + 4], "little")
            pos += 4
        else:
            raise PlanFormatError(f"unsupported wire type {wire}")


_FIXED = {0xCC: ">B", 0xCD: ">H", 0xCE: ">I", 0xCF: ">Q", 0xD0: ">b", 0xD1: ">h", 0xD2: ">i"}
_FIXED |= {0xD3: ">q", 0xCA: ">f", 0xCB: ">d"}
_SIZED = {0xD9: ">B", 0xDA: ">H", 0xDB: ">I", 0xC4: ">B", 0xC5: ">H", 0xC6: ">I"}
_EXT = {0xD4: 1, 0xD5: 2, 0xD6: 4, 0xD7: 8, 0xD8: 16}
_EXT_SIZED = {0xC7: ">B", 0xC8: ">H", 0xC9: ">I"}


def unpack(data: bytes, pos: int = 0) -> tuple[Any, int]:
    """One msgpack value of ``data`` at ``pos`` and the position after it (unknown
    values, msgpack extensions, are None)."""
    if pos >= len(data):
        raise PlanFormatError("truncated msgpack value")
    tag = data[pos]
    pos += 1
    if tag <= 0x7F:
        return tag, pos
    if tag >= 0xE0:
        return tag - 0x100, pos
    if 0x80 <= tag <= 0x8F:
        return _unpack_map(data, pos, tag & 0x0F)
    if 0x90 <= tag <= 0x9F:
        return _unpack_array(data, pos, tag & 0x0F)
    if 0xA0 <= tag <= 0xBF:
        size = tag & 0x1F
        return data[pos : pos + size].decode(errors="replace"), pos + size
    if tag in (0xC0, 0xC2, 0xC3):
        return {0xC0: None, 0xC2: False, 0xC3: True}[tag], pos
    if tag in _FIXED:
        fmt = _FIXED[tag]
        return struct.unpack_from(fmt, data, pos)[0], pos + struct.calcsize(fmt)
    if tag in _SIZED:
        fmt = _SIZED[tag]
        size = struct.unpack_from(fmt, data, pos)[0]
        pos += struct.calcsize(fmt)
        raw = data[pos : pos + size]
        return (raw.decode(errors="replace") if tag >= 0xD9 else raw), pos + size
    if tag in _EXT:
        return None, pos + 1 + _EXT[tag]
    if tag in _EXT_SIZED:
        fmt = _EXT_SIZED[tag]
        size = struct.unpack_from(fmt, data, pos)[0]
        return None, pos + struct.calcsize(fmt) + 1 + size
    if tag in (0xDC, 0xDD, 0xDE, 0xDF):
        fmt = ">H" if tag in (0xDC, 0xDE) else ">I"
        count = struct.unpack_from(fmt, data, pos)[0]
        pos += struct.calcsize(fmt)
        return (_unpack_array if tag in (0xDC, 0xDD) else _unpack_map)(data, pos, count)
    raise PlanFormatError(f"unsupported msgpack type 0x{tag:02x}")


def _unpack_map(data: bytes, pos: int, count: int) -> tuple[dict[Any, Any], int]:
    out: dict[Any, Any] = {}
    for _ in range(count):
        key, pos = unpack(data, pos)
        value, pos = unpack(data, pos)
        out[key if isinstance(key, str | int) else repr(key)] = value
    return out, pos


def _unpack_array(data: bytes, pos: int, count: int) -> tuple[list[Any], int]:
    items = []
    for _ in range(count):
        item, pos = unpack(data, pos)
        items.append(item)
    return items, pos


def plan_backend(tfplan: bytes) -> Backend | None:
    """The backend recorded in a plan's ``tfplan`` entry (None: the plan records none)."""
    for number, value in proto_fields(tfplan):
        if number != _PLAN_BACKEND or not isinstance(value, bytes):
            continue
        kind, workspace, config = "", "default", {}
        for field, inner in proto_fields(value):
            if not isinstance(inner, bytes):
                continue
            if field == _BACKEND_TYPE:
                kind = inner.decode(errors="replace")
            elif field == _BACKEND_WORKSPACE:
                workspace = inner.decode(errors="replace")
            elif field == _BACKEND_CONFIG:
                for dyn, packed in proto_fields(inner):
                    if dyn == _DYNAMIC_MSGPACK and isinstance(packed, bytes):
                        decoded, _ = unpack(packed)
                        config = decoded if isinstance(decoded, dict) else {}
        return Backend(kind, config, workspace)
    return None


def state_matches(backend: Backend, state_key: str) -> bool:
    """Is ``backend``'s state the one at ``state_key`` (``live/x/terraform.tfstate``):
    the S3 key itself, or a local path that ends with it?"""
    where = backend.state
    if where is None:
        return False
    if backend.type == "local":
        return where.replace("\\", "/") == state_key or where.replace("\\", "/").endswith(
            "/" + state_key
        )
    return where == state_key


def backend_problem(
    plan_file: str, backend: Backend | None, state_key: str | None, bucket: str | None = None
) -> str | None:
    """Why a saved plan is not bound to its unit's state (None: it is): ``state_key`` in
    ``bucket`` (S3), or in local state when ``bucket`` is None."""
    if backend is not None:
        planned = backend.config.get("bucket") if backend.type == "s3" else None
        if (backend.type, planned) != (("s3", bucket) if bucket else ("local", None)):
            here = f"S3 state in s3://{bucket}" if bucket else "local state"
            there = f"s3://{planned}" if planned else f"a {backend.type} backend"
            return (
                f"plan file {plan_file} was planned against {there}, this apply runs against "
                f"{here}: plans made with other state settings (IAC_STATE_BUCKET); re-plan"
            )
    if state_key is None:
        return f"plan file {plan_file}: the unit's state key is unknown, so the plan cannot be bound to it"
    if backend is None:
        return f"plan file {plan_file} records no state backend: not a plan made by `invoke plan`; re-plan"
    if not state_matches(backend, state_key) or backend.workspace != "default":
        return (
            f"plan file {plan_file} was planned against the state {backend.state or '(none)'} "
            f"({backend.type} backend, workspace {backend.workspace}), not this unit's {state_key}: "
            "a plan made for another unit (swapped or copied); re-plan"
        )
    return None
