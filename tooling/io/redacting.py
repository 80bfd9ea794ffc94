"""The one redaction step of the process, and the streams and JSON it guards.

- :func:`install_redactor`: the step itself, set explicitly by a task's preamble
  (:func:`tooling.cli.errors` through :func:`tooling.engine.secrets.install`);
  importing a module installs nothing;
- :func:`redact`: a text through it, failing closed when none is installed;
- :func:`guard_streams`: the tooling's own stdout and stderr through it for the
  duration of a task, and through the terminal escaping the caller hands in
  (:func:`tooling.core.text.terminal.escape`: an escape sequence or a bidirectional
  control in a unit path, a name or an error is shown, never acted on);
- :func:`redact_json`: a JSON document's string values through it, the fields
  that name things (:data:`STRUCTURAL_FIELDS`) never rewritten.

The report folders (:mod:`tooling.io.outdir`) write every file through it.
"""

from __future__ import annotations

import io
import json
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from tooling.errors import ToolingError

_hook_lock = threading.Lock()
_redact_hook: Callable[[str], str] | None = None


def install_redactor(hook: Callable[[str], str]) -> None:
    """Set the redaction step (built from :mod:`tooling.core.text.redact` by the command
    layer, :mod:`tooling.engine.secrets`) that every text written here passes through."""
    global _redact_hook
    with _hook_lock:
        _redact_hook = hook


def redact(text: str) -> str:
    """``text`` through the installed redaction step.

    Fails closed: without one, nothing is written or posted.
    """
    hook = _redact_hook
    if hook is None:
        raise ToolingError("internal error: no redaction step installed; nothing was written")
    return hook(text)


def _unchanged(text: str) -> str:
    return text


class RedactingStream(io.TextIOBase):
    """A text stream that redacts every write, then escapes what a terminal would act
    on (``escape``), before passing it on."""

    def __init__(self, inner: TextIO, escape: Callable[[str], str] = _unchanged) -> None:
        super().__init__()
        self.inner = inner
        self.escape = escape

    def write(self, text: str) -> int:
        self.inner.write(self.escape(redact(text)))
        return len(text)

    def write_control(self, sequence: str) -> None:
        """A terminal control sequence the tooling writes itself (the progress line's
        carriage return and erase-line), passed on as it is: only a literal of the
        tooling's own code, never a text it was given."""
        self.inner.write(sequence)

    def flush(self) -> None:
        self.inner.flush()

    def isatty(self) -> bool:
        return self.inner.isatty()

    def fileno(self) -> int:
        return self.inner.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.inner, "encoding", "utf-8")


@contextmanager
def guard_streams(escape: Callable[[str], str] = _unchanged) -> Iterator[None]:
    """Redact (and ``escape``) the tooling's own stdout and stderr for the duration of
    a command."""
    saved = sys.stdout, sys.stderr
    sys.stdout = RedactingStream(saved[0], escape)
    sys.stderr = RedactingStream(saved[1], escape)
    try:
        yield
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            sys.stdout, sys.stderr = saved


#: JSON fields that name things (units, files, addresses, revisions): redaction never
#: rewrites them, and a secret inside one stops the write (:func:`redact_json`)
STRUCTURAL_FIELDS = frozenset(
    {
        "path",
        "plan_file",
        "text_file",
        "log_file",
        "address",
        "unit",
        "dependencies",
        "dependents",
        "mocked_dependencies",
        "moved_from",
        "reads",
        "file",
        "dir",
        "state_key",
        "plan_sha256",
        "head",
        "base",
        "plans_head",
        "executor",
        "tier",
        "source",
        "module",
        "ref",
    }
)


def _redact_string(value: str) -> str:
    """One JSON string value through the redaction step, seen as JSON shows it (quoted,
    escaped), so a value that is a short secret whole is masked too."""
    encoded = json.dumps(value, ensure_ascii=False)
    masked = redact(encoded)
    if masked == encoded:
        return value
    try:
        decoded = json.loads(masked)
    except ValueError:
        decoded = None
    return decoded if isinstance(decoded, str) else "(redacted)"


def redact_json(data: Any, where: str, pointer: str = "") -> Any:
    """``data`` with every string value redacted; keys and :data:`STRUCTURAL_FIELDS`
    are never rewritten: one that holds a secret raises (naming ``where`` and the field)."""

    def refuse(field: str) -> ToolingError:
        return ToolingError(
            f"{where}: {field or '/'} would hold a secret value (a sensitive output or variable, "
            "a secret-named environment variable or a registered value); nothing was written. "
            "Rename what it names, or change the secret"
        )

    if isinstance(data, dict):
        out: dict[Any, Any] = {}
        for key, value in data.items():
            field = f"{pointer}/{key}"
            if isinstance(key, str) and redact(key) != key:
                raise refuse(pointer + "/<a key>")
            if key in STRUCTURAL_FIELDS:
                names = value if isinstance(value, list) else [value]
                if any(isinstance(n, str) and _redact_string(n) != n for n in names):
                    raise refuse(field)
            out[key] = redact_json(value, where, field)
        return out
    if isinstance(data, list | tuple):
        return [redact_json(item, where, f"{pointer}/{i}") for i, item in enumerate(data)]
    if isinstance(data, str):
        return _redact_string(data)
    return data
