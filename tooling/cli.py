"""The command line's harness: what every invoke task shares.

- :class:`UsageProgram` and :func:`use_usage_exit_codes`: invoke's program with
  its usage errors (unknown flag, missing value, wrong type, unknown task)
  exiting 2 with one line saying what to run instead;
- :func:`errors` and :func:`run`: a task's body runs with its output redacted,
  a :class:`~tooling.errors.ToolingError` becomes ``error: ...`` and its exit
  code, Ctrl-C exits 130, and anything unforeseen is one line, not a traceback;
  the whole policy.toml is checked before the task starts (:func:`check_policy`);
- :func:`workspace` and :func:`say_settings`: the repository a task runs in,
  and the first line of every task that reads the units.

Only invoke and the standard library at import time: ``tasks.py`` imports this
module when invoke loads it, for ``invoke --list`` too.
"""

from __future__ import annotations

import errno
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

from invoke.exceptions import Exit, ParseError
from invoke.program import Program

__all__ = [
    "UsageProgram",
    "check_policy",
    "errors",
    "run",
    "say_settings",
    "use_usage_exit_codes",
    "workspace",
]


class UsageProgram(Program):
    """invoke's own program, with its usage errors exiting 2 (invoke exits 1 for them).

    An unknown flag, a missing value, a value that is not of the option's type
    (``--jobs abc``, which invoke lets escape as a ``ValueError``), or an
    unknown task are bad usage: one line saying what to run instead, exit 2.
    """

    def parse_tasks(self) -> None:
        try:
            super().parse_tasks()
            self._refuse_empty_lists()
        except (ParseError, ValueError) as exc:
            raise Exit(usage_line(exc, self._task_names()), code=2) from None
        except BrokenPipeError:  # `invoke --help plan | head -1`
            _reader_gone()

    def _task_names(self) -> list[str]:
        collection = getattr(self, "collection", None)
        return sorted(collection.task_names) if collection is not None else []

    def _refuse_empty_lists(self) -> None:
        """invoke drops a repeatable flag given without a value (``plan --unit``, which
        would then plan the affected units instead): refuse it like any missing value."""
        words = list(self.core.unparsed)
        # the parser's contexts: building them again (to_contexts) would consume the
        # tasks' help texts, which invoke pops as it reads them
        for context in self.parser.contexts.values():
            repeatable = {flag for flag, arg in context.flags.items() if arg.kind is list}
            for i, word in enumerate(words):
                following = words[i + 1] if i + 1 < len(words) else None
                if word in repeatable and (following is None or following.startswith("-")):
                    raise ParseError(f"{word} needs a value", context)

    def parse_cleanup(self) -> None:
        try:
            super().parse_cleanup()
        except ParseError as exc:  # `invoke --help NOSUCHTASK`
            raise Exit(usage_line(exc, self._task_names()), code=2) from None
        except Exit as exc:
            if exc.code == 1 and str(exc.message or "").startswith("Sub-collection"):
                # `invoke --list NOSUCH`: this repository has one collection, no sub-collections
                raise Exit(
                    f"error: {exc.message} See `invoke --list` for the tasks.", code=2
                ) from None
            raise
        except BrokenPipeError:  # `invoke --list | head`
            _reader_gone()


def _reader_gone() -> NoReturn:
    """The reader of stdout went away: nothing more to say, and no traceback about it."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    raise Exit(code=1)


def usage_line(exc: Exception, tasks: Sequence[str] = ()) -> str:
    """The one line for invoke's usage error ``exc``; an unknown task among ``tasks``
    gets the closest names ("did you mean")."""
    context = getattr(exc, "context", None)
    name = getattr(context, "name", None)
    what = str(exc).strip().rstrip("!").replace("\n", " ") or type(exc).__name__
    # invoke names a flag by its repr: say --out, not <Argument: out (o)>
    what = re.sub(
        r"Flag <Argument: ([\w-]+)[^>]*> needed value and was not given one",
        lambda m: f"--{m[1].replace('_', '-').strip('-')} needs a value",
        what,
    )
    what = re.sub(r"'(\w+?)_'", r"'\1'", what)  # id_ (a Python name) is ID on the command line
    unknown = re.fullmatch(r"No idea what '(.+)' is", what)
    if unknown and tasks:
        from tooling.core.suggest import did_you_mean

        # a task's name as typed: invoke accepts bump_module and bump-module alike
        hint = did_you_mean(unknown[1].replace("_", "-"), tasks)
        if hint:
            return f"error: no task {unknown[1]!r}.{hint} See `invoke --list` for the tasks."
    if isinstance(exc, ValueError):  # invoke converting a flag's value to its type
        what = f"a value is not of the option's type ({what})"
    if name:
        return f"error: {name}: {what}. See `invoke --help {name}`."
    return f"error: {what}. See `invoke --list` for the tasks and `invoke --help TASK` for their options."


def use_usage_exit_codes() -> None:
    """Make the running invoke program (``invoke`` or ``python -m invoke``) a :class:`UsageProgram`.

    invoke loads this file after parsing its own options and before parsing the
    tasks' ones, so from here on its parse errors go through ``UsageProgram``.
    """
    import invoke.main

    running = getattr(invoke.main, "program", None)
    if type(running) is Program:
        running.__class__ = UsageProgram


@contextmanager
def errors() -> Iterator[None]:
    from tooling.engine import secrets
    from tooling.errors import ToolingError
    from tooling.io.redacting import guard_streams

    secrets.install()  # the one redaction step, installed by the preamble (no import does it)
    # every line the tooling prints passes through the one redaction step
    with guard_streams():
        try:
            yield
        except ToolingError as exc:
            print(f"error: {exc}", file=sys.stderr)
            raise Exit(code=exc.code) from None
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            raise Exit(code=130) from None
        except (Exit, SystemExit):
            raise
        except BrokenPipeError:  # `invoke units --json | head`
            _reader_gone()
        except OSError as exc:
            if exc.errno not in _ENVIRONMENT_ERRORS or not exc.filename:
                _bug(exc)
            # the machine's doing (a full disk, a read-only folder...), not the tooling's
            print(
                f"error: {exc.filename}: {exc.strerror or type(exc).__name__}. "
                "Free space, make it writable, or use another folder.",
                file=sys.stderr,
            )
            raise Exit(code=1) from None
        except Exception as exc:
            _bug(exc)


#: OS errors that say something about the machine, not about the tooling
_ENVIRONMENT_ERRORS = frozenset(
    getattr(errno, name)
    for name in ("ENOSPC", "EDQUOT", "EROFS", "EACCES", "EPERM", "ENOTDIR", "EIO", "EMFILE")
    if hasattr(errno, name)
)


def _bug(exc: Exception) -> NoReturn:
    """A failure the tooling did not foresee: one line, not a traceback (IAC_DEBUG=1
    shows it). It is a bug: the message says so."""
    if os.environ.get("IAC_DEBUG"):
        raise exc
    print(
        f"error: unexpected {type(exc).__name__}: {exc}. This is a bug in the tooling: "
        "run again with IAC_DEBUG=1 for the traceback and report it.",
        file=sys.stderr,
    )
    raise Exit(code=1) from None


def workspace() -> Any:
    from tooling.engine import secrets
    from tooling.io import toolchain
    from tooling.io.workspace import Workspace, mark_private

    toolchain.ensure_bin_dir_on_path()
    ws = Workspace.here(Path.cwd())
    mark_private(ws.root)  # before anything is written there
    secrets.use_policy(ws.policy)  # which environment variables are secret: [secrets]
    return ws


def say_settings(ws: Any) -> None:
    """The first line of every task that reads the units: what it runs against (stderr)."""
    from tooling.io.ui import say

    say(ws.describe())


def check_policy(start: Path | None = None) -> None:
    """The whole policy.toml of the repository around ``start`` (default: the current
    folder), checked before a task does anything: an unknown table or key, or a value
    of the wrong kind, is refused by name whatever the task reads. Outside a
    repository there is nothing to check (the task says where it expected one)."""
    from tooling.core.policydoc import validate
    from tooling.errors import ToolingError
    from tooling.io import config
    from tooling.io.workspace import nearest_root
    from tooling.model.policyfile import POLICY_FILE, located

    try:
        root = nearest_root(start)
        if root is not None:
            validate(config.read_policy(root))
    except ToolingError as exc:
        if "[layout" not in str(exc):
            raise
        # name the line of the [layout] table the error is about (policy.toml:LINE: ...)
        here = (start or Path.cwd()).resolve()
        holder = next((c for c in (here, *here.parents) if (c / POLICY_FILE).is_file()), None)
        try:
            text = (holder / POLICY_FILE).read_text(encoding="utf-8") if holder else ""
        except (OSError, UnicodeDecodeError):
            text = ""
        raise ToolingError(located(str(exc), text), code=exc.code) from None


def run(fn: Callable[[], int | None]) -> None:
    """Run a task's body: policy.toml checked first, then ``fn`` under :func:`errors`."""
    with errors():
        check_policy()
        code = fn()
    if code:
        raise Exit(code=code)
