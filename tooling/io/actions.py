"""GitHub Actions' interface to a step: its outputs, the event that started the run,
the run's address. The workflow steps (:mod:`tooling.commands.ci`,
:mod:`tooling.commands.mergequeue`) read and write through these."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tooling.errors import ToolingError
from tooling.io.ui import say


def append_outputs(
    text: str, values: Mapping[str, str], environ: Mapping[str, str] | None = None
) -> None:
    """Append ``text`` (``values`` as ``$GITHUB_OUTPUT`` lines,
    :func:`tooling.core.ci.steps.output_lines`) to the step's outputs when it has them;
    always log the values."""
    env = os.environ if environ is None else environ
    target = env.get("GITHUB_OUTPUT", "").strip()
    if target:
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(text)
    for name, value in values.items():
        say(f"output {name}={value}")


def run_url(environ: Mapping[str, str]) -> str:
    """The address of the workflow run, from the runner's variables."""
    server = environ.get("GITHUB_SERVER_URL", "https://github.com").rstrip("/")
    return f"{server}/{environ.get('GITHUB_REPOSITORY', '')}/actions/runs/{environ.get('GITHUB_RUN_ID', '')}"


def event(environ: Mapping[str, str]) -> dict[str, Any]:
    """The payload of the event that started the run (``GITHUB_EVENT_PATH``), or {}."""
    path = environ.get("GITHUB_EVENT_PATH", "").strip()
    if not path:
        return {}
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ToolingError(
            f"GITHUB_EVENT_PATH names {path}, which cannot be read as JSON: {exc}"
        ) from None
    return doc if isinstance(doc, dict) else {}
