"""Parsed HCL bodies cached by the git blob SHA of the file's bytes, in one ``marshal`` file:
a warm run reads the cache and never builds a syntax tree (:func:`tooling.model.hcl.parse`)."""

from __future__ import annotations

import marshal
import os
from pathlib import Path
from typing import Any

from tooling.model.hcl import Body, parse

CACHE_VERSION = 8


class ParseCache:
    """Parsed bodies keyed by blob SHA, persisted with ``marshal`` in one file."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.entries: dict[str, Body] = {}
        self.dirty = False
        if path is not None and path.exists():
            try:
                # the whole file at once: marshal.load reads a file object in small pieces
                loaded = marshal.loads(path.read_bytes())
                if isinstance(loaded, dict) and loaded.get("v") == CACHE_VERSION:
                    self.entries = loaded["e"]
            except (EOFError, ValueError, TypeError, OSError):
                self.entries = {}  # a corrupt cache is only a slow run, never an error

    def get(self, sha: str, data_loader: Any, filename: str) -> Body:
        body = self.entries.get(sha)
        if body is None:
            body = parse(data_loader(), filename)
            self.entries[sha] = body
            self.dirty = True
        return body

    def save(self) -> None:
        if self.path is None or not self.dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        with tmp.open("wb") as fh:
            marshal.dump({"v": CACHE_VERSION, "e": self.entries}, fh)
        os.replace(tmp, self.path)  # atomic: a crash never leaves a half-written cache
        self.dirty = False
