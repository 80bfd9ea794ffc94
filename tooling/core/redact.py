"""Redaction: the one step every written, posted or printed text passes through. Pure.

A :class:`Redactor` holds secret values (strings) and replaces each occurrence
in a text with :data:`MASK`. Values come in any shape OpenTofu can hold (a
string, a number, a map, a list, nested); :func:`secret_strings` flattens them.
A multi-line value is registered whole *and* line by line, because a plan
prints a multi-line string as a heredoc, one line at a time.

The same value can reach a text escaped: inside JSON (``summary.json``, a
quoted ``"`` or ``\\n``), or inside an HCL string in a plan (``\\"``). Both
escaped forms are registered too.

Values too short or too common to be secrets (``true``, ``1``, ``us``) are
skipped: replacing them would garble every text without protecting anything.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

MASK = "(redacted)"
#: shorter values are not redacted (see the module docstring)
MIN_LENGTH = 4
_TRIVIAL = frozenset({"true", "false", "null", "none", "yes", "no"})

#: environment variables whose values are secrets, by name
_SECRET_NAME = re.compile(
    r"(^TF_VAR_)|(TOKEN|SECRET|PASSWORD|PASSWD|PRIVATE_KEY|CREDENTIAL|API_KEY|ACCESS_KEY(?!_ID))",
    re.I,
)
#: environment variables that match the pattern above but are not secrets
_NOT_SECRET = frozenset({"GITHUB_TOKEN_URL", "ACTIONS_ID_TOKEN_REQUEST_URL", "TF_VAR_FILE"})


def _leaves(value: Any) -> Iterable[str]:
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, str):
        yield value
    elif isinstance(value, int | float):
        yield str(value)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            yield from _leaves(item)


def _worth_redacting(text: str) -> bool:
    stripped = text.strip()
    return len(stripped) >= MIN_LENGTH and stripped.lower() not in _TRIVIAL


def secret_strings(value: Any) -> set[str]:
    """Every string to redact for ``value``: its leaves, each non-trivial line of a
    multi-line leaf, and their JSON- and HCL-escaped forms."""
    found: set[str] = set()
    for leaf in _leaves(value):
        pieces = [leaf]
        if "\n" in leaf or "\r" in leaf:
            pieces.extend(line.strip() for line in leaf.splitlines())
        for piece in pieces:
            if not _worth_redacting(piece):
                continue
            found.add(piece)
            escaped = json.dumps(piece, ensure_ascii=False)[1:-1]
            found.add(escaped)
            found.add(json.dumps(piece)[1:-1])  # \uXXXX escapes, as json.dumps writes by default
            found.add(piece.replace("\\", "\\\\").replace('"', '\\"'))
    return {s for s in found if _worth_redacting(s)}


def secret_env(environ: Mapping[str, str]) -> set[str]:
    """The secret values in an environment: tokens, passwords, keys, ``TF_VAR_*``."""
    values: set[str] = set()
    for name, value in environ.items():
        if name in _NOT_SECRET or not _SECRET_NAME.search(name):
            continue
        values |= secret_strings(value)
    return values


def sensitive_outputs(outputs: Mapping[str, Any] | None) -> set[str]:
    """Secret strings of the ``sensitive`` outputs in ``tofu output -json`` /
    ``show -json`` form (``{name: {"sensitive": bool, "value": ...}}``)."""
    values: set[str] = set()
    for entry in (outputs or {}).values():
        if isinstance(entry, Mapping) and entry.get("sensitive") and "value" in entry:
            values |= secret_strings(entry["value"])
    return values


def _sensitive_marks(mark: Any, value: Any) -> Iterable[Any]:
    """The parts of ``value`` that ``mark`` (a ``*_sensitive`` structure of a plan) flags."""
    if mark is True:
        yield value
    elif isinstance(mark, Mapping) and isinstance(value, Mapping):
        for key, sub in mark.items():
            if key in value:
                yield from _sensitive_marks(sub, value[key])
    elif isinstance(mark, list) and isinstance(value, list):
        for sub, item in zip(mark, value, strict=False):
            yield from _sensitive_marks(sub, item)


def sensitive_in_plan(plan: Mapping[str, Any]) -> set[str]:
    """Secret strings a ``show -json`` plan document knows about: values of
    variables declared ``sensitive``, sensitive outputs (before and after), and
    sensitive resource attributes."""
    values: set[str] = set()
    declared = ((plan.get("configuration") or {}).get("root_module") or {}).get("variables") or {}
    for name, given in (plan.get("variables") or {}).items():
        if (declared.get(name) or {}).get("sensitive") and isinstance(given, Mapping):
            values |= secret_strings(given.get("value"))
    values |= sensitive_outputs((plan.get("planned_values") or {}).get("outputs"))
    prior = (plan.get("prior_state") or {}).get("values") or {}
    values |= sensitive_outputs(prior.get("outputs"))
    for change in plan.get("resource_changes") or ():
        detail = change.get("change") or {}
        for side in ("before", "after"):
            values |= {
                s
                for part in _sensitive_marks(detail.get(f"{side}_sensitive"), detail.get(side))
                for s in secret_strings(part)
            }
    return values


@dataclass(frozen=True)
class Redactor:
    """Replaces every registered secret in a text. Longest first, so a secret that
    contains another is masked whole."""

    secrets: tuple[str, ...] = ()

    @classmethod
    def of(cls, values: Iterable[str]) -> Redactor:
        kept = {v for v in values if _worth_redacting(v)}
        return cls(tuple(sorted(kept, key=lambda s: (-len(s), s))))

    def with_values(self, values: Iterable[str]) -> Redactor:
        return Redactor.of({*self.secrets, *values})

    def __call__(self, text: str) -> str:
        return redact(text, self.secrets)


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every value of ``secrets`` replaced by :data:`MASK`."""
    ordered = sorted({s for s in secrets if s}, key=len, reverse=True)
    if not ordered or not text:
        return text
    pattern = re.compile("|".join(re.escape(s) for s in ordered))
    return pattern.sub(MASK, text)


def mask_commands(values: Iterable[str]) -> list[str]:
    """GitHub Actions ``::add-mask::`` lines for ``values`` (one per line of a
    multi-line value: the runner masks single lines)."""
    lines: list[str] = []
    for value in sorted(set(values)):
        for line in value.splitlines() or [value]:
            if _worth_redacting(line) and f"::add-mask::{line.strip()}" not in lines:
                lines.append(f"::add-mask::{line.strip()}")
    return lines
