"""The secret values this process knows, and the redaction step built from them.

Fed by the environment variables whose *names* say secret (policy.toml
``[secrets]``, see :class:`tooling.model.policy.EnvRule`), read once, and by
every sensitive value a run learns (dependencies' sensitive outputs, sensitive
variables, sensitive attributes: see :mod:`tooling.core.text.redact`). :func:`install`
makes it the one redaction step of :mod:`tooling.io.redacting` (every task's
preamble calls it; importing this module installs nothing), so every report
file, posted text, job summary and line the tooling prints passes through it.
In GitHub Actions each new value is also announced with ``::add-mask::`` (one
line per line of a multi-line value) so the runner masks it in the job log too.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterable

from tooling.core.text.redact import (
    MIN_LENGTH,
    Redactor,
    mask_commands,
    secret_env,
    short_secret_env,
)
from tooling.io import redacting
from tooling.model.policy import EnvRule


class _Secrets:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._redactor = Redactor()
        self._rule = EnvRule()
        self._env_loaded = False

    def current(self) -> Redactor:
        with self._lock:
            self._load_env()
            return self._redactor

    def add(self, values: Iterable[str]) -> None:
        with self._lock:
            self._load_env()
            self._add(values)

    def use_rule(self, rule: EnvRule) -> None:
        """Which environment variables are secret (read again if the rule changed)."""
        with self._lock:
            if rule != self._rule:
                self._rule = rule
                self._env_loaded = False
            self._load_env()

    def _load_env(self) -> None:
        """The environment's secrets, learned once, on first use (under the lock)."""
        if not self._env_loaded:
            self._env_loaded = True
            self._add(secret_env(os.environ, self._rule))
            err = sys.__stderr__  # not the redacting wrapper, which takes this lock
            for name in short_secret_env(os.environ, self._rule) if err else ():
                # the name only, never the value
                print(
                    f"warning: {name} is shorter than {MIN_LENGTH} characters: it is masked only "
                    'where it stands whole between double quotes ("…"); use a longer secret',
                    file=err,
                )

    def _add(self, values: Iterable[str]) -> None:
        new = set(values) - {*self._redactor.secrets, *self._redactor.short}
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
            self._rule = EnvRule()
            self._env_loaded = False


_SECRETS = _Secrets()


def register(values: Iterable[str]) -> None:
    """Add secret strings (from :mod:`tooling.core.text.redact`'s collectors)."""
    _SECRETS.add(values)


def use_rule(rule: EnvRule) -> None:
    """Take the secret environment variables' names from policy.toml's ``[secrets]``."""
    _SECRETS.use_rule(rule)


def redact(text: str) -> str:
    return _SECRETS.current()(text)


def reset() -> None:
    """Forget every value (a new command in the same process; tests)."""
    _SECRETS.reset()


def install() -> None:
    """Make :func:`redact` the process's one redaction step (:mod:`tooling.io.redacting`).

    Called by every task's preamble (:func:`tooling.cli.errors`), and by
    anything else that writes reports without a task (tests, benchmarks)."""
    redacting.install_redactor(redact)
