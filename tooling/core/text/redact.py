"""Redaction: the one step every written, posted or printed text passes through. Pure.

A :class:`Redactor` holds secret values (strings) and replaces each occurrence
in a text with :data:`MASK`. Values come in any shape OpenTofu can hold (a
string, a number, a map, a list, nested); :func:`secret_strings` flattens them.
A multi-line value is registered whole *and* line by line, because a plan
prints a multi-line string as a heredoc, one line at a time.

The same value can reach a text escaped or encoded: inside JSON
(``summary.json``, a quoted ``"`` or ``\\n``), inside an HCL string in a plan
(``\\"``), as ``base64encode()`` writes it, or URL-encoded. Each of those forms
is registered too. (A secret encoded *together with* other text, such as
``base64encode("user:${var.password}")``, cannot be found in the result.)

**Short values.** A value shorter than :data:`MIN_LENGTH` characters (``us``,
``abc``) is masked only where it stands whole between double quotes (``"abc"``,
as a plan or JSON prints a string): replacing it anywhere would garble every
text. ``true``/``false``/``null``/``yes``/``no``/``none`` are never masked.
:func:`short_secret_env` names the environment variables concerned, so the
command warns once, naming the variable (never the value).

**What is a secret.** Values of sensitive variables and outputs (see
:func:`sensitive_in_plan`, :func:`sensitive_outputs`), values registered by the
command, and environment variables whose *name* says secret
(:class:`~tooling.model.policy.EnvRule`, policy.toml ``[secrets]``): never every
``TF_VAR_*``, whose values are often plain words (``cloud``) that also name folders.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from tooling.core.text.markdown import plain
from tooling.model.policy import EnvRule

MASK = "(redacted)"
#: shorter values are masked only whole between double quotes (see the module docstring)
MIN_LENGTH = 4
_TRIVIAL = frozenset({"true", "false", "null", "none", "yes", "no"})


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


def _short(text: str) -> bool:
    """A value masked only whole between quotes (see the module docstring)."""
    stripped = text.strip()
    return 0 < len(stripped) < MIN_LENGTH and stripped.lower() not in _TRIVIAL


_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def _url_encoded(text: str) -> str:
    """``text`` percent-encoded as ``urlencode()`` writes it (RFC 3986: all but the unreserved)."""
    return "".join(
        c if c in _UNRESERVED else "".join(f"%{b:02X}" for b in c.encode()) for c in text
    )


def html_escaped(text: str) -> str:
    """``text`` as ``html.escape`` writes it (quotes too), without importing :mod:`html`
    (and its table of entities) before every task."""
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#x27;")
    )


def _forms(piece: str) -> set[str]:
    """``piece`` as a text may hold it: plain, JSON- and HCL-escaped, base64, URL-encoded."""
    return {
        piece,
        json.dumps(piece, ensure_ascii=False)[1:-1],
        json.dumps(piece)[1:-1],  # \uXXXX escapes, as json.dumps writes by default
        piece.replace("\\", "\\\\").replace('"', '\\"'),
        base64.b64encode(piece.encode()).decode(),  # as base64encode() writes it
        _url_encoded(piece),
        plain(piece),  # as the reviewer's page escapes a text (tooling.core.text.markdown)
        piece.replace("|", "\\|"),  # a name in a table cell
        html_escaped(piece),  # inside <summary>
    }


def secret_strings(value: Any) -> set[str]:
    """Every string to redact for ``value``: its leaves, each non-trivial line of a
    multi-line leaf, and their escaped and encoded forms (:func:`_forms`). Short
    values are kept as they are (the :class:`Redactor` masks them only between quotes)."""
    found: set[str] = set()
    for leaf in _leaves(value):
        pieces = [leaf]
        if "\n" in leaf or "\r" in leaf:
            pieces.extend(line.strip() for line in leaf.splitlines())
        for piece in pieces:
            if _worth_redacting(piece):
                found |= {s for s in _forms(piece) if _worth_redacting(s)}
            elif _short(piece):
                found.add(piece.strip())
    return found


def secret_env(environ: Mapping[str, str], rule: EnvRule | None = None) -> set[str]:
    """The secret values of an environment: those of the variables ``rule`` names secret."""
    rule = rule or EnvRule()
    values: set[str] = set()
    for name, value in environ.items():
        if rule.is_secret(name):
            values |= secret_strings(value)
    return values


def short_secret_env(environ: Mapping[str, str], rule: EnvRule | None = None) -> list[str]:
    """The names of the secret environment variables whose value is too short to mask
    everywhere (masked only whole between quotes): the command warns, naming them."""
    rule = rule or EnvRule()
    return sorted(n for n, v in environ.items() if rule.is_secret(n) and _short(v))


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
    contains another is masked whole; a short one only whole between double quotes."""

    secrets: tuple[str, ...] = ()
    short: tuple[str, ...] = ()

    @classmethod
    def of(cls, values: Iterable[str]) -> Redactor:
        kept = set(values)
        long = {v for v in kept if _worth_redacting(v)}
        short = {v.strip() for v in kept if _short(v)}
        return cls(
            tuple(sorted(long, key=lambda s: (-len(s), s))),
            tuple(sorted(short, key=lambda s: (-len(s), s))),
        )

    def with_values(self, values: Iterable[str]) -> Redactor:
        return Redactor.of({*self.secrets, *self.short, *values})

    @cached_property
    def _long_pattern(self) -> re.Pattern[str] | None:
        """One pattern of every long secret, longest first (compiled once per redactor:
        a report redacts each of its strings)."""
        return _alternatives(self.secrets)

    @cached_property
    def _short_pattern(self) -> re.Pattern[str] | None:
        alternatives = _alternatives(self.short)
        return re.compile(f'(?<=")(?:{alternatives.pattern})(?=")') if alternatives else None

    def __call__(self, text: str) -> str:
        if not text:
            return text
        if self._long_pattern is not None:
            text = self._long_pattern.sub(MASK, text)
        if self._short_pattern is not None:
            text = self._short_pattern.sub(MASK, text)
        return text


def _alternatives(secrets: Iterable[str]) -> re.Pattern[str] | None:
    """One pattern matching any of ``secrets``, the longest first (so a secret that
    contains another is matched whole); None for none."""
    ordered = sorted({s for s in secrets if s}, key=len, reverse=True)
    return re.compile("|".join(re.escape(s) for s in ordered)) if ordered else None


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every value of ``secrets`` replaced by :data:`MASK`."""
    pattern = _alternatives(secrets) if text else None
    return pattern.sub(MASK, text) if pattern is not None else text


def mask_commands(values: Iterable[str]) -> list[str]:
    """GitHub Actions ``::add-mask::`` lines for ``values`` (one per line of a
    multi-line value: the runner masks single lines)."""
    lines: list[str] = []
    for value in sorted(set(values)):
        for line in value.splitlines() or [value]:
            if _worth_redacting(line) and f"::add-mask::{line.strip()}" not in lines:
                lines.append(f"::add-mask::{line.strip()}")
    return lines
