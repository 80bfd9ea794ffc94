"""The fields of a document read back, as the typed values are built from it. Pure.

The documents (summary.json, apply.json) are checked against their JSON schemas
before anything is built (:mod:`tooling.io.artifacts`); these helpers check the
type again, so a document that was not checked ends in a ``ValueError`` naming the
field, never in a value of the wrong type.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def text(doc: Mapping[str, Any], key: str) -> str:
    value = doc.get(key)
    if not isinstance(value, str):
        raise ValueError(f"{key}: expected a string, found {type(value).__name__}")
    return value


def optional(doc: Mapping[str, Any], key: str) -> str | None:
    value = doc.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{key}: expected a string or null, found {type(value).__name__}")
    return value


def flag(doc: Mapping[str, Any], key: str) -> bool:
    value = doc.get(key)
    if not isinstance(value, bool):
        raise ValueError(f"{key}: expected true or false")
    return value


def whole(doc: Mapping[str, Any], key: str) -> int:
    value = doc.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{key}: expected a whole number")
    return value


def strings(doc: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = doc.get(key)
    if (
        not isinstance(value, Sequence)
        or isinstance(value, str)
        or not all(isinstance(v, str) for v in value)
    ):
        raise ValueError(f"{key}: expected a list of strings")
    return tuple(value)
