"""Terragrunt's ``--log-format json`` output of one ``run --all``, split per unit. Pure.

``terragrunt run --all --log-format json`` writes one JSON object per line:
``{"time", "level", "working-dir", "tf-path", "tf-command-args", "msg"}``.
``level`` is a log level (``trace`` … ``error``) or ``stdout``/``stderr`` for
what OpenTofu printed; ``working-dir`` is the unit's folder, relative to where
Terragrunt runs or absolute. Three debug messages of Terragrunt 1.1.3's runner
pool mark a unit's life (``internal/runner/runnerpool``):

- ``Runner Pool Task: starting unit=<abs path> command=plan``
- ``Runner Pool Task: finished unit=<abs path> command=plan outcome=succeeded|failed[ err=…]``
- ``Setting working directory to <path>`` (the unit's working copy)

Debug lines are only *read* for these markers; they are never written to a
log (they are verbose and may echo configuration).
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass
from typing import Any

#: levels that are never written to a unit's log
QUIET_LEVELS = frozenset({"trace", "debug"})


@dataclass(frozen=True)
class Line:
    level: str  # trace | debug | info | warn | error | stdout | stderr | raw (not JSON)
    working_dir: str | None
    msg: str
    tf_command: str | None = None  # the OpenTofu command that printed it (init, plan, output…)


def parse(raw: str) -> Line:
    """One output line; anything that is not Terragrunt's JSON is kept as ``raw``."""
    text = raw.rstrip("\n")
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("msg"), str):
            args = data.get("tf-command-args")
            command = (
                args[0] if isinstance(args, list) and args and isinstance(args[0], str) else None
            )
            wd = data.get("working-dir")
            return Line(
                str(data.get("level", "info")),
                wd if isinstance(wd, str) and wd else None,
                data["msg"],
                command,
            )
    return Line("raw", None, text)


def unit_of(working_dir: str | None, root: str, units: frozenset[str]) -> str | None:
    """The unit (a path relative to ``root``, POSIX) a line belongs to, if it is one of ``units``."""
    if not working_dir:
        return None
    if working_dir.startswith("/") and not working_dir.startswith(root.rstrip("/") + "/"):
        return None
    path = relative(working_dir, root)
    return path if path in units else None


_STARTED = re.compile(r"^Runner Pool Task: starting unit=(.+) command=\S+$")
_FINISHED = re.compile(
    r"^Runner Pool Task: finished unit=(.+?) command=\S+ outcome=(succeeded|failed)(?: err=(.*))?$",
    re.S,
)
_WORKDIR = re.compile(r"^Setting working directory to (.+)$")


_PROTECTED = re.compile(r"^Unit (.+) is protected by prevent_destroy flag$")


def protected(msg: str) -> str | None:
    """The absolute unit folder Terragrunt leaves out of a destroy for its
    ``prevent_destroy`` (a debug line; the unit then has no run at all)."""
    m = _PROTECTED.match(msg)
    return m.group(1) if m else None


def started(msg: str) -> str | None:
    """The absolute unit folder a ``starting`` marker names."""
    m = _STARTED.match(msg)
    return m.group(1) if m else None


@dataclass(frozen=True)
class Finished:
    unit_dir: str
    succeeded: bool
    error: str | None


def finished(msg: str) -> Finished | None:
    m = _FINISHED.match(msg)
    if not m:
        return None
    return Finished(m.group(1), m.group(2) == "succeeded", (m.group(3) or "").strip() or None)


def working_copy(msg: str) -> str | None:
    m = _WORKDIR.match(msg)
    return m.group(1).strip() if m else None


def relative(unit_dir: str, root: str) -> str:
    """A unit folder from a marker (absolute, or relative to ``root``), relative to ``root`` (POSIX)."""
    path = unit_dir.replace("\\", "/")
    base = root.rstrip("/") + "/"
    if path.startswith(base):
        path = path[len(base) :]
    return posixpath.normpath(path)


def render(line: Line) -> str:
    """A line as a unit's log shows it: OpenTofu's output as printed, the rest tagged by level."""
    msg = line.msg.rstrip("\n")
    if line.level in ("stdout", "stderr", "raw"):
        return msg
    return "\n".join(f"{line.level.upper():<5} {part}" if part else "" for part in msg.split("\n"))


# A path this plain goes into a --filter as `{./<path>}` unchanged: no glob
# metacharacter and none of the filter language's operators.
_PLAIN_PATH = re.compile(
    r"^[A-Za-z0-9_][A-Za-z0-9_.@+,%~ -]*(/[A-Za-z0-9_][A-Za-z0-9_.@+,%~ -]*)*$"
)


def filter_for(path: str) -> str | None:
    """The ``--filter`` query selecting exactly the unit at ``path``, or None when the
    path holds a character Terragrunt's filter language or globs would read as syntax."""
    if (
        not _PLAIN_PATH.match(path)
        or "..." in path
        or path != posixpath.normpath(path)
        or path.endswith(" ")
    ):
        return None
    return "{./" + path + "}"


def run_report(text: str, root: str) -> dict[str, dict[str, Any]]:
    """Terragrunt's JSON run report (``--report-file``), by unit path relative to ``root``;
    empty when it wrote none or wrote something else."""
    try:
        entries = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(entries, list):
        return {}
    return {
        relative(str(e["Name"]), root): e
        for e in entries
        if isinstance(e, dict) and isinstance(e.get("Name"), str)
    }
