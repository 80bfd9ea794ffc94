"""``policy.toml``: its name, its tables, and the one check of their keys.

Each table is interpreted where it is used (``[gates]`` by
:func:`tooling.core.gates.parse_policy`, ``[executors]`` by
:func:`tooling.core.executors.parse`, ``[check]`` by
:func:`tooling.core.checksettings.parse_policy`, ``[apps]`` by
:func:`tooling.core.apps.parse_policy`, ``[layout]`` by
:func:`tooling.model.layout.layout_from`, ``[secrets]`` by
:func:`tooling.core.redact.parse_policy`, ``[sensitive_attributes]`` by
:func:`tooling.core.declared.parse_policy`). Every one of them refuses a key it
does not know, through :func:`refuse_unknown_keys`: a misspelt key must not
silently drop a rule. ``[gate]`` for ``[gates]``, or ``node_type`` for
``node_types``, would otherwise let a VM change apply without approval.
Every task reads all of them first (:func:`tooling.core.policydoc.validate`,
called by :func:`tooling.cli.run`), so a typo in a table the task
does not use stops it too, before it writes anything.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from tooling.errors import ToolingError

POLICY_FILE = "policy.toml"

#: the top-level tables of policy.toml
TABLES = frozenset(
    {"gates", "check", "executors", "apps", "layout", "secrets", "sensitive_attributes", "apply"}
)


def refuse_unknown_keys(table: Mapping[str, Any], known: Iterable[str], where: str) -> None:
    """Raise naming the keys of ``table`` (``where``, e.g. ``[check]``) that are not ``known``."""
    allowed = sorted(set(known))
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise ToolingError(
            f"{POLICY_FILE}: {where} has unknown key(s) {', '.join(unknown)}; "
            f"known keys: {', '.join(allowed)}. Fix the spelling"
        )


def check_tables(policy: Mapping[str, Any]) -> Mapping[str, Any]:
    """``policy`` itself, once its top level holds only the known tables."""
    refuse_unknown_keys(policy, TABLES, "the top level")
    return policy


# patterns, not compiled objects: only an error message is matched against them (``re``
# compiles them then, once), and every task imports this module
_NAMED_TABLE = r"\[([A-Za-z0-9_./\"' -]+)\]"
_FILE_HEAD = r"^(?P<file>\S*" + re.escape(POLICY_FILE) + r"): "
_HEADER = r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(?:#.*)?$"


def _table_key(name: str) -> str:
    return ".".join(part.strip().strip("\"'") for part in name.split("."))


def located(message: str, text: str) -> str:
    """``policy.toml: [TABLE] ...`` -> ``policy.toml:LINE: [TABLE] ...``, LINE being the
    line of that table's header in ``text`` (the nearest declared parent table when
    the table is not a header of its own); the message as it is when none is found."""
    file = re.match(_FILE_HEAD, message)
    found = re.search(_NAMED_TABLE, message)
    if file is None or found is None:
        return message
    headers: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        match = re.match(_HEADER, line)
        if match:
            headers.setdefault(_table_key(match.group(1)), number)
    wanted = _table_key(found.group(1))
    while wanted:
        if wanted in headers:
            return f"{file['file']}:{headers[wanted]}: {message[file.end() :]}"
        wanted = wanted.rpartition(".")[0]
    return message
