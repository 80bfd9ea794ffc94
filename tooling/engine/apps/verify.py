"""The rule checked where an application's OpenTofu runs: before ``tofu init`` (the
environment tofu inherits, the module sources) and right after it (the backend OpenTofu
recorded), on ``invoke app-plan`` and ``invoke app-apply``. The rules themselves are
pure, in :mod:`tooling.core.apps.verify`."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from tooling.core.apps import verify
from tooling.core.apps.tier import AppState, Found
from tooling.core.rules import execpoint
from tooling.model.policy import Policy


def before_tofu(
    policy: Policy,
    found: Sequence[Found],
    env: Mapping[str, str],
    app_dir: Path | None = None,
) -> list[str]:
    """Problems of what tofu would run with: the inherited environment (``env`` is the
    pipeline's own for tofu, added to this process's; ``TF_VAR_`` only of the variables
    of the app's root module in ``app_dir``) and the remote module sources
    (``[check] allowed_module_sources``)."""
    allowed = policy.check.allowed_module_sources
    variables = execpoint.variables_in(_root_module(app_dir)) if app_dir else frozenset()
    return verify.env_problems({**os.environ, **env}, env, variables) + verify.module_problems(
        found, allowed
    )


def _root_module(app_dir: Path) -> dict[str, bytes]:
    """The OpenTofu files of the app's root module (its variables are declared there)."""
    out: dict[str, bytes] = {}
    for path in sorted(app_dir.iterdir()):
        if path.is_file() and path.name.endswith((".tf", ".tofu", ".tf.json", ".tofu.json")):
            out[path.name] = path.read_bytes()
    return out


def after_init(env: Mapping[str, str], state: AppState) -> list[str]:
    """Problems of the backend OpenTofu initialised (its record in ``TF_DATA_DIR``)."""
    path = Path(env["TF_DATA_DIR"]) / "terraform.tfstate"
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        record = None
    return verify.backend_problems(record, state, str(path))
