"""The rule checked where an application's OpenTofu runs: before ``tofu init`` (the
environment tofu inherits, the module sources) and right after it (the backend OpenTofu
recorded), on ``invoke app-plan`` and ``invoke app-apply``. The rules themselves are
pure, in :mod:`tooling.core.appverify`."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from tooling.core import appverify
from tooling.core.apps import AppState, Found
from tooling.model.policy import Policy


def before_tofu(policy: Policy, found: Sequence[Found], env: Mapping[str, str]) -> list[str]:
    """Problems of what tofu would run with: the inherited environment (``env`` is the
    pipeline's own for tofu, added to this process's) and the remote module sources
    (``[check] allowed_module_sources``)."""
    allowed = policy.check.allowed_module_sources
    return appverify.env_problems({**os.environ, **env}, env) + appverify.module_problems(
        found, allowed
    )


def after_init(env: Mapping[str, str], state: AppState) -> list[str]:
    """Problems of the backend OpenTofu initialised (its record in ``TF_DATA_DIR``)."""
    path = Path(env["TF_DATA_DIR"]) / "terraform.tfstate"
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        record = None
    return appverify.backend_problems(record, state, str(path))
