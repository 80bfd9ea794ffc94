"""The command line's harness: what every invoke task shares.

- :class:`UsageProgram` and :func:`use_usage_exit_codes`: invoke's program with
  its usage errors (unknown flag, missing value, wrong type, unknown task)
  exiting 2 with one line saying what to run instead;
- :func:`task` and :class:`Task`: invoke's task, with the options it cannot
  run without declared in one place (``required=``): one missing is a usage
  error naming it, exit 2, before anything runs;
- :func:`run`: the preamble every task shares, then its body. The redaction
  step is installed and the output redacted, a :class:`~tooling.errors.ToolingError`
  becomes ``error: ...`` and its exit code, Ctrl-C exits 130, and anything
  unforeseen is one line, not a traceback (:func:`errors`); the whole policy.toml
  is checked (:func:`check_policy`); then, once each and only here, the first
  line saying what the task runs against (``banner=``, :func:`say_settings`) and
  the pinned tools' versions (``tools=``, :func:`check_tools`). No command below
  prints the first line or checks the tools itself;
- :func:`workspace`: the repository a task runs in, found once per task, with the
  :class:`~tooling.model.policy.Policy` the preamble made (:func:`project`), which
  the commands pass down as a value.

Only invoke and the standard library at import time: ``tasks.py`` imports this
module when invoke loads it, for ``invoke --list`` too.
"""

from __future__ import annotations

import errno
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, NoReturn

from invoke.exceptions import Exit, ParseError
from invoke.program import Program
from invoke.tasks import Task as InvokeTask
from invoke.tasks import task as invoke_task

__all__ = [
    "Task",
    "UsageProgram",
    "check_policy",
    "check_tools",
    "errors",
    "project",
    "run",
    "say_settings",
    "task",
    "use_usage_exit_codes",
    "workspace",
]


class _Typed:
    """The command the user typed: ``invoke`` (the tasks' program), or ``iac`` (the
    console script): every hint names the tasks as typed (:func:`as_typed`)."""

    program = "invoke"


_TYPED = _Typed()


def as_typed(text: str) -> str:
    """``text`` with its hints (`` `invoke TASK` ``) naming the program the user typed."""
    if _TYPED.program == "invoke" or "invoke " not in text:
        return text
    return re.sub(r"(`|positional: )invoke ", rf"\g<1>{_TYPED.program} ", text)


class UsageProgram(Program):
    """invoke's own program, with its usage errors exiting 2 (invoke exits 1 for them).

    An unknown flag, a missing value, a value that is not of the option's type
    (``--jobs abc``, which invoke lets escape as a ``ValueError``), or an
    unknown task are bad usage: one line saying what to run instead, exit 2.
    """

    def parse_tasks(self) -> None:
        binary = getattr(self, "_binary", None)  # invoke's own: "inv[oke]"
        _TYPED.program = binary if binary and re.fullmatch(r"[\w-]+", binary) else "invoke"
        try:
            super().parse_tasks()
            self._refuse_empty_lists()
        except (ParseError, ValueError) as exc:
            line = usage_line(exc, self._task_names(), self._task_of(exc))
            raise Exit(as_typed(line), code=2) from None
        except BrokenPipeError:  # `invoke --help plan | head -1`
            _reader_gone()

    def _task_names(self) -> list[str]:
        collection = getattr(self, "collection", None)
        return sorted(collection.task_names) if collection is not None else []

    def _task_of(self, exc: Exception) -> Any:
        """The task the parse error ``exc`` is about, if any."""
        collection = getattr(self, "collection", None)
        name = getattr(getattr(exc, "context", None), "name", None)
        if collection is None or not name or name not in collection.task_names:
            return None
        return collection[name]

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


def usage_line(exc: Exception, tasks: Sequence[str] = (), task: object = None) -> str:
    """The one line for invoke's usage error ``exc`` (about ``task``, when it is one); an
    unknown task among ``tasks`` gets the closest names ("did you mean")."""
    context = getattr(exc, "context", None)
    name = getattr(context, "name", None)
    what = str(exc).strip().rstrip("!").replace("\n", " ") or type(exc).__name__
    # invoke names a flag by its repr: say --out, not <Argument: out (o)>
    what = re.sub(
        r"Flag <Argument: ([\w-]+)[^>]*> needed value and was not given one",
        lambda m: f"--{m[1].replace('_', '-').strip('-')} needs a value",
        what,
    )
    positional = re.fullmatch(r"'[\w-]+' did not receive required positional arguments: (.+)", what)
    if positional and isinstance(task, Task):  # the same line as a required option missing
        return missing_line(task, re.findall(r"'(\w+)'", positional[1]))
    what = re.sub(r"'(\w+?)_'", r"'\1'", what)  # id_ (a Python name) is ID on the command line
    unknown = re.fullmatch(r"No idea what '(.+)' is", what)
    if unknown and tasks:
        from tooling.core.text.suggest import did_you_mean

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


class Task(InvokeTask[Any]):
    """invoke's task, with its required options declared once: ``required=``, each
    option (its Python name, as the task function spells it: ``id_``, ``apply_result``)
    with the placeholder of its value (``{"plans": "DIR"}``).

    A required option missing or empty is bad usage: one line naming each missing
    one (:func:`missing_line`), exit 2, before anything else runs (policy.toml is not
    even read). A parameter without a default is positional on the command line
    (``invoke adopt UNIT ADDRESS ID``); it must be declared required as well, and
    invoke's own complaint when one is missing says the same line
    (:class:`UsageProgram`).
    """

    def __init__(
        self, body: Callable[..., Any], *, required: Mapping[str, str] | None = None, **kwargs: Any
    ):
        super().__init__(body, **kwargs)
        self.required: dict[str, str] = dict(required or {})
        options = self.argspec(body).parameters
        unknown = [name for name in self.required if name not in options]
        undeclared = [name for name in self.positional if name not in self.required]
        if unknown or undeclared:  # found when the tasks load, by every test
            raise TypeError(
                f"{body.__name__}: required= names no option {unknown}, "
                f"or leaves out the positional {undeclared}"
            )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        missing = [name for name in self.required if not _given(kwargs.get(name))]
        if missing:
            raise Exit(as_typed(missing_line(self, missing)), code=2)
        return super().__call__(*args, **kwargs)

    @property
    def command(self) -> str:
        """The task's name on the command line (``manual-status``)."""
        return (self.name or self.body.__name__).replace("_", "-")


def _given(value: object) -> bool:
    """Whether an option's value says something: not absent, not empty, not a repeatable
    option given only empty values (``--merge ""``)."""
    if isinstance(value, list | tuple):
        return any(value)
    return bool(value)


def missing_line(task: Task, names: Sequence[str]) -> str:
    """The one line for ``task``'s required options ``names`` (Python names) missing:
    ``error: apply needs --plans DIR. See `invoke --help apply`.``; a positional one also
    shows the positional form (``adopt needs --id ID (positional: invoke adopt UNIT
    ADDRESS ID)``)."""
    wanted = [f"{option_flag(n)} {task.required.get(n, 'VALUE')}" for n in names]
    listed = wanted[0] if len(wanted) == 1 else f"{', '.join(wanted[:-1])} and {wanted[-1]}"
    if any(n in task.positional for n in names):  # they are usually given in order, unflagged
        shape = " ".join(task.required.get(n, n.upper()) for n in task.positional)
        listed += f" (positional: invoke {task.command} {shape})"
    return f"error: {task.command} needs {listed}. See `invoke --help {task.command}`."


def option_flag(name: str) -> str:
    """The command line's spelling of the task function's parameter ``name`` (``id_``: ``--id``)."""
    return "--" + name.strip("_").replace("_", "-")


def task(**kwargs: Any) -> Callable[[Callable[..., Any]], Task]:
    """invoke's ``@task(...)`` making a :class:`Task`: ``@task(required=["plans"], help={...})``."""
    made: Callable[[Callable[..., Any]], Task] = invoke_task(klass=Task, **kwargs)
    return made


@contextmanager
def errors() -> Iterator[None]:
    from tooling.core.text import terminal
    from tooling.engine import secrets
    from tooling.errors import ToolingError
    from tooling.io.redacting import guard_streams

    secrets.install()  # the one redaction step, installed by the preamble (no import does it)
    # every line the tooling prints passes through the one redaction step, then has
    # what a terminal would act on (escape sequences, bidirectional controls) escaped
    with guard_streams(lambda text: as_typed(terminal.escape(text))):
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


class _TaskRun:
    """The task running now (:func:`run` opens and closes it): its project (the root and
    its policy.toml, found and checked by the preamble) and its workspace, found once."""

    active = False
    project: Any = None
    ws: Any = None


_RUN = _TaskRun()


def project() -> Any:
    """The project the running task works in: its root and its policy.toml as one typed
    :class:`~tooling.model.policy.Policy`, as the preamble found and checked them (None
    outside a repository); outside a task, found anew."""
    if _RUN.active:
        return _RUN.project
    from tooling.io.workspace import nearest_project

    return nearest_project(Path.cwd())


def workspace() -> Any:
    """The repository the running task works in, with the policy its preamble checked:
    found, its ``.iac/`` made private and its secret variables' names read once per task
    (outside a task, each call finds it anew)."""
    if _RUN.ws is not None:
        return _RUN.ws
    from tooling.engine import secrets
    from tooling.engine.rules import stackscreen
    from tooling.io.binpath import ensure_bin_dir_on_path
    from tooling.io.workspace import Workspace, mark_private

    ensure_bin_dir_on_path()
    found = _RUN.project if _RUN.active else None
    # no stack is generated (Terragrunt parses its files) before they are scanned
    if found is not None:
        ws = Workspace(found.root, policy=found.policy, stack_screen=stackscreen.screen)
    else:  # outside a repository (the error names the folder), or outside a task
        ws = Workspace.here(Path.cwd(), stack_screen=stackscreen.screen)
    mark_private(ws.root)  # before anything is written there
    secrets.use_rule(ws.policy.secrets)  # which environment variables are secret: [secrets]
    if _RUN.active:
        _RUN.ws = ws
    return ws


#: what a task's first line describes: the settings as they apply to the units (the
#: repository's model read for it), or the settings alone (a task that reads no unit)
Banner = Literal["units", "settings"]


def say_settings(ws: Any, banner: Banner = "units") -> None:
    """The first line of a task: what it runs against (stderr). Only :func:`run` calls it."""
    from tooling.io.ui import say

    say(ws.describe() if banner == "units" else ws.settings.describe())


def check_tools(ws: Any) -> None:
    """Refuse to go on with tool versions other than the pinned ones. Only :func:`run`
    calls it, once per task (the commands below rely on it)."""
    ws.check_tools()


def check_policy(start: Path | None = None) -> Any:
    """The project around ``start`` (default: the current folder) with its whole
    policy.toml parsed and checked, before a task does anything: an unknown table or
    key, or a value of the wrong kind, is refused by name whatever the task reads
    (:func:`tooling.model.policy.policy_from`). None outside a repository: there is
    nothing to check (the task says where it expected one)."""
    from tooling.io.workspace import nearest_project

    return nearest_project(start)


def run(fn: Callable[[], int | None], *, banner: Banner | None = None, tools: bool = False) -> None:
    """Run a task's body ``fn`` after the preamble every task shares, all under
    :func:`errors`: policy.toml read and checked, then the first line (``banner``) and
    the pinned tools (``tools``), each once; ``fn`` finds the same :func:`workspace`
    and :func:`project`, holding the policy the preamble checked."""
    with errors():
        found = check_policy()  # policy.toml read once: every step gets this value
        _RUN.active, _RUN.project, _RUN.ws = True, found, None
        try:
            if banner:
                say_settings(workspace(), banner)
            if tools:
                check_tools(workspace())
            code = fn()
        finally:
            _RUN.active, _RUN.project, _RUN.ws = False, None, None
    if code:
        raise Exit(code=code)
