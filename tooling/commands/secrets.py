"""The secret values this process knows, and the redaction step built from them.

Fed by the secret environment variables (tokens, passwords, ``TF_VAR_*``),
read once, and by every sensitive value a run learns (dependencies' sensitive
outputs, sensitive variables, sensitive attributes: see
:mod:`tooling.core.redact`). Installed as the one redaction step of
:mod:`tooling.io.outdir` on import, so every report file, posted text, job
summary and line the tooling prints passes through it. In GitHub Actions each
new value is also announced with ``::add-mask::`` (one line per line of a
multi-line value) so the runner masks it in the job log too.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterable

from tooling.core.redact import Redactor, mask_commands, secret_env
from tooling.io import outdir


class _Secrets:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._redactor = Redactor()
        self._env_loaded = False

    def current(self) -> Redactor:
        with self._lock:
            self._load_env()
            return self._redactor

    def add(self, values: Iterable[str]) -> None:
        with self._lock:
            self._load_env()
            self._add(values)

    def _load_env(self) -> None:
        """The environment's secrets, learned once, on first use (under the lock)."""
        if not self._env_loaded:
            self._env_loaded = True
            self._add(secret_env(os.environ))

    def _add(self, values: Iterable[str]) -> None:
        new = set(values) - set(self._redactor.secrets)
        if not new:
            return
        self._redactor = self._redactor.with_values(new)
        if os.environ.get("GITHUB_ACTIONS") == "true":
            raw = sys.__stdout__  # not the redacting wrapper: the runner must read the value
            if raw is not None:
                for line in mask_commands(new):
                    raw.write(line + "\n")
                raw.flush()

    def reset(self) -> None:
        with self._lock:
            self._redactor = Redactor()
            self._env_loaded = False


_SECRETS = _Secrets()


def register(values: Iterable[str]) -> None:
    """Add secret strings (from :mod:`tooling.core.redact`'s collectors)."""
    _SECRETS.add(values)


def redact(text: str) -> str:
    return _SECRETS.current()(text)


def reset() -> None:
    """Forget every value (a new command in the same process; tests)."""
    _SECRETS.reset()


outdir.install_redactor(redact)
