"""The state backend Terragrunt resolves for a unit, and where its state object lives.

Terragrunt is asked (``terragrunt render --format json``), never guessed: a root file's
``remote_state`` block gives the backend and its settings with every function
resolved (``get_repo_root()``, ``path_relative_to_include()``...); a backend written
by a ``generate`` block (the tooling's own root.hcl) is read from the generated text.
:func:`located` turns a local or S3 backend into a :class:`~tooling.io.statestore.StateStore`
and key; other types (``gcs``, ``azurerm``, ``http``...) are reached through
``terragrunt state pull``/``push`` (:class:`TerragruntState`).
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tooling.errors import ToolingError
from tooling.io import config, terragrunt
from tooling.io.statestore import LocalStore, S3Store, StateStore, s3_client

_BACKEND = re.compile(r'backend\s+"([A-Za-z0-9_-]+)"\s*\{')
_STRING_ATTR = re.compile(r'^\s*([A-Za-z0-9_]+)\s*=\s*"((?:[^"\\]|\\.)*)"', re.M)


@dataclass(frozen=True)
class Backend:
    """A unit's backend as Terragrunt resolves it: its type and settings."""

    type: str
    config: Mapping[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        key = state_key(self)
        return f"{self.type}" + (f" ({key})" if key else "")


def state_key(backend: Backend) -> str | None:
    """The setting that names the unit's state object within its backend."""
    name = {"local": "path", "gcs": "prefix", "http": "address", "pg": "schema_name"}.get(
        backend.type, "key"
    )
    value = backend.config.get(name)
    return value if isinstance(value, str) else None


def from_render(data: Mapping[str, Any]) -> Backend | None:
    """The backend in ``terragrunt render --format json`` output; None when none is declared."""
    remote = data.get("remote_state")
    if isinstance(remote, dict) and isinstance(remote.get("backend"), str) and remote["backend"]:
        conf = remote.get("config")
        return Backend(remote["backend"], conf if isinstance(conf, dict) else {})
    generated = data.get("generate")
    for block in (generated or {}).values() if isinstance(generated, dict) else ():
        contents = block.get("contents") if isinstance(block, dict) else None
        if not isinstance(contents, str):
            continue
        found = _BACKEND.search(contents)
        if found:
            body = contents[found.end() :]
            settings: dict[str, Any] = {}
            for name, value in _STRING_ATTR.findall(body):
                settings.setdefault(name, json.loads(f'"{value}"'))
            if "s3" in settings and "endpoints" not in settings:
                settings["endpoints"] = {"s3": settings.pop("s3")}
            return Backend(found.group(1), settings)
    return None


def of_unit(unit_dir: Path, env: Mapping[str, str]) -> Backend | None:
    """The backend Terragrunt resolves for the unit in ``unit_dir``."""
    return from_render(terragrunt.render_json(unit_dir, env))


@contextlib.contextmanager
def unit_at(root: Path, path: str, source: str) -> Iterator[Path]:
    """The folder ``path`` holding the unit: itself when it exists, else a copy of the unit
    in folder ``source`` made there for the time of the block (Terragrunt resolves a unit's
    backend from where it sits), removed afterwards."""
    target = root / path
    if target.exists():
        yield target
        return
    made = [p for p in target.parents if not p.exists()]
    shutil.copytree(
        root / source, target, ignore=shutil.ignore_patterns(".terragrunt-cache", ".terraform")
    )
    try:
        yield target
    finally:
        shutil.rmtree(target, ignore_errors=True)
        for parent in made:
            shutil.rmtree(parent, ignore_errors=True)


def share_repository_state(
    unit_dir: Path, worktree: Path, repo: Path, env: Mapping[str, str]
) -> None:
    """Before a unit runs from ``worktree`` (a worktree the tooling made of ``repo``, both
    at git's top level): a local backend whose path Terragrunt resolves inside the
    worktree (``get_repo_root()``...) names the repository's state, so that folder of the
    worktree is made a link to the repository's (a destroy plan then reads the real
    state, and its apply writes it)."""
    try:
        backend = of_unit(unit_dir, env)
    except ToolingError:  # the unit's own plan fails on the same configuration, naming it
        return
    key = state_key(backend) if backend is not None and backend.type == "local" else None
    if key is None or not Path(key).is_absolute():
        return
    path = Path(key)
    if not path.is_relative_to(worktree):
        return
    real = repo / path.relative_to(worktree)
    real.parent.mkdir(parents=True, exist_ok=True)
    here = path.parent
    if here.is_symlink():
        return
    if here.exists():  # a folder the revision tracks: link the state file alone
        if not path.exists():
            path.symlink_to(real)
        return
    here.parent.mkdir(parents=True, exist_ok=True)
    here.symlink_to(real.parent, target_is_directory=True)


def located(
    backend: Backend | None, unit: str, settings: config.Settings
) -> tuple[StateStore, str] | None:
    """(store, key) of the unit's state object for a local or S3 backend; None for another type."""
    if backend is None:
        raise ToolingError(
            f"{unit}: Terragrunt resolves no state backend for it (no remote_state, no generated "
            "backend block): its state would stay in the working copy. Declare a backend first"
        )
    key = state_key(backend)
    if backend.type == "local":
        if key is None or not Path(key).is_absolute():
            raise ToolingError(
                f"{unit}: its local backend's path {key!r} is relative to the working copy "
                "(.terragrunt-cache); make it absolute, e.g. "
                '"${get_repo_root()}/state/${path_relative_to_include()}/terraform.tfstate"'
            )
        path = Path(key)
        return LocalStore(path.parent, _repo_of(path)), path.name
    if backend.type == "s3":
        bucket = backend.config.get("bucket")
        if not isinstance(bucket, str) or key is None:
            raise ToolingError(f"{unit}: its s3 backend names no bucket or key")
        endpoints = backend.config.get("endpoints")
        endpoint = endpoints.get("s3") if isinstance(endpoints, dict) else None
        endpoint = endpoint or backend.config.get("endpoint") or settings.state_endpoint
        region = backend.config.get("region") or settings.state_region
        s3_settings = replace(
            settings,
            state_endpoint=endpoint if isinstance(endpoint, str) and endpoint else None,
            state_region=region if isinstance(region, str) else settings.state_region,
        )
        return S3Store(bucket, s3_client(s3_settings)), key
    return None


def _repo_of(path: Path) -> Path | None:
    for parent in path.parents:
        if (parent / ".git").exists():
            return parent
    return None


class TerragruntState:
    """The state of one unit through ``terragrunt state pull``/``push``: any backend type."""

    def __init__(self, unit_dir: Path, env: Mapping[str, str], backend: Backend) -> None:
        self.unit_dir = unit_dir
        self.env = env
        self.backend = backend

    def pull(self) -> bytes | None:
        """The unit's state, None when it holds none (never applied)."""
        ran = terragrunt.run(
            ["terragrunt", "state", "pull", *terragrunt.COMMON], self.unit_dir, self.env
        )
        if ran.returncode != 0:
            raise ToolingError(
                f"{self.unit_dir.name}: `terragrunt state pull` failed: "
                f"{terragrunt.error_summary(ran.stderr or ran.stdout)}"
            )
        text = ran.stdout.strip()
        start = text.find("{")
        if start < 0:
            return None
        data = json.loads(text[start:])
        return None if not data.get("resources") else text[start:].encode()

    def push(self, state: bytes) -> None:
        file = self.unit_dir / ".iac-moved.tfstate"
        file.write_bytes(state)
        try:
            ran = terragrunt.run(
                ["terragrunt", "state", "push", *terragrunt.COMMON, str(file)],
                self.unit_dir,
                self.env,
            )
        finally:
            file.unlink(missing_ok=True)
        if ran.returncode != 0:
            raise ToolingError(
                f"{self.unit_dir.name}: `terragrunt state push` failed: "
                f"{terragrunt.error_summary(ran.stderr or ran.stdout)}"
            )
