"""What Terragrunt leaves out of a ``run --all``: ``exclude`` blocks and the ``.terragrunt-excludes`` file.

Terragrunt 1.1.3, as measured with the pinned binary (``tests/test_fidelity.py``):

- ``exclude { if = true, actions = [...] }`` takes the unit out of the queue of
  ``run --all <command>`` when ``actions`` holds the command, ``"all"``, or
  ``"all_except_output"`` (any command but ``output``), even when ``--filter``
  names the unit. ``find`` still lists it (``find --queue-construct-as plan``
  does not). With ``exclude_dependencies = true`` the unit's *direct*
  dependencies are left out too, when the unit is in the queue.
- ``.terragrunt-excludes`` in the folder Terragrunt runs in (the plans run at
  the repository root) lists one path per line (blank lines and ``#`` comments
  ignored, spaces trimmed): a unit whose path, relative to that folder, matches
  it is left out of ``find`` and of every ``run --all``, also when ``--filter``
  names it. A line is a glob matched against the whole path (``*`` within one
  folder, ``**`` across folders): ``e`` does not exclude ``e/f``, ``e/**`` does.
  Terragrunt reads each line as a filter query; a line that uses the filter
  language beyond a path (``[ref]``, ``{...}``, ``!``, ``|``, ``=``) is not
  understood here and excludes nothing in the model.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

EXCLUDES_FILE = ".terragrunt-excludes"

#: actions that take a unit out of every command but one
_ALL = "all"
_ALL_EXCEPT_OUTPUT = "all_except_output"

_FILTER_SYNTAX = re.compile(r"[\[\]{}!|=^]|\.\.\.")


def excludes(exclude: dict[str, Any] | None, command: str) -> bool:
    """Whether a unit's evaluated ``exclude`` takes it out of ``run --all <command>``."""
    if not exclude:
        return False
    actions = exclude.get("actions") or ()
    return (
        command in actions
        or _ALL in actions
        or (_ALL_EXCEPT_OUTPUT in actions and command != "output")
    )


@dataclass(frozen=True)
class Pattern:
    line: int
    text: str
    regex: re.Pattern[str] | None  # None: a filter query the model does not read


def parse_excludes_file(text: str, root: str) -> list[Pattern]:
    """The lines of a ``.terragrunt-excludes`` file; ``root`` is the absolute folder it sits in."""
    out: list[Pattern] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if _FILTER_SYNTAX.search(line):
            out.append(Pattern(number, line, None))
            continue
        path = line
        if path.startswith("/"):
            prefix = root.rstrip("/") + "/"
            if not path.startswith(prefix):
                out.append(Pattern(number, line, None))
                continue
            path = path[len(prefix) :]
        path = posixpath.normpath(path)
        out.append(Pattern(number, line, _glob_regex(path)))
    return out


def _glob_regex(pattern: str) -> re.Pattern[str]:
    parts: list[str] = []
    for segment in pattern.split("/"):
        if segment == "**":
            parts.append("(?:[^/]+/)*")
            continue
        chunk = ""
        for ch in segment:
            if ch == "*":
                chunk += "[^/]*"
            elif ch == "?":
                chunk += "[^/]"
            else:
                chunk += re.escape(ch)
        parts.append(chunk + "/")
    return re.compile("^" + "".join(parts) + "$")


def matching(patterns: Iterable[Pattern], path: str) -> Pattern | None:
    """The first pattern that excludes the unit at ``path``, if any."""
    for pattern in patterns:
        if pattern.regex is not None and pattern.regex.match(path + "/"):
            return pattern
    return None
