"""``invoke runners``: each executor's runners and their state, from GitHub's API.

- ``invoke runners [--json]``: the listing (``--json``: the document of
  ``tooling/schemas/runners.schema.json``);
- ``--require EXECUTOR``: exit 1 with one line when that executor is
  self-hosted and no runner carrying its labels is online (busy counts as
  online); the routing job runs this before dispatching a LAN leg;
- ``--issue``: keep one issue per self-hosted executor (label ``runners``)
  open while it has no online runner, closed once one is back (the scheduled
  ``runners.yml``).

Listing runners needs a token with Administration: read (``IAC_RUNNERS_TOKEN``,
bootstrap/README.md); the issue is written with ``GITHUB_TOKEN``. The mechanism
is :mod:`tooling.engine.ci.runners`.
"""

from __future__ import annotations

import json
from typing import Any

from tooling.core.ci import runners
from tooling.engine.ci.runners import entry_of, status, sync_issues
from tooling.errors import ToolingError
from tooling.io.ui import say, show
from tooling.io.workspace import Workspace


def run(
    ws: Workspace,
    *,
    as_json: bool = False,
    require: str | None = None,
    issue: bool = False,
    forge: Any = None,
    issue_forge: Any = None,
) -> int:
    doc = status(ws, forge=forge)
    if require:
        entry_of(doc, require)  # an unknown name is bad usage, before anything is printed
    if as_json:
        show(json.dumps(doc, indent=2))
    else:
        for line in runners.render(doc):
            show(line)
    if issue:
        sync_issues(doc, forge=issue_forge)
    if require:
        reason = runners.unavailable(entry_of(doc, require))
        if reason:
            raise ToolingError(reason)
        say(f"executor {require}: a runner is online")
    return 0
