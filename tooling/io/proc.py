"""The one subprocess runner.

Every external program (git, terragrunt, tofu) is started through :func:`run`.
It never uses a shell, always captures output as text, and on failure raises
:class:`CalledProcessError` carrying the command, exit code, stdout and stderr
(after pre-commit's ``cmd_output_b``).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from tooling.errors import ToolingError


@dataclass(frozen=True)
class Result:
    """A finished program: its arguments, exit code and output."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


class CalledProcessError(ToolingError):
    """A program exited with a code the caller did not accept."""

    def __init__(self, result: Result, cwd: Path | None) -> None:
        self.result = result
        where = f" (in {cwd})" if cwd else ""
        parts = [
            f"command failed with exit code {result.returncode}{where}: {shlex.join(result.args)}"
        ]
        if result.stdout.strip():
            parts.append("stdout:\n" + _tail(result.stdout))
        if result.stderr.strip():
            parts.append("stderr:\n" + _tail(result.stderr))
        super().__init__("\n".join(parts))


def _tail(text: str, lines: int = 40) -> str:
    kept = text.rstrip().splitlines()
    if len(kept) > lines:
        kept = [f"... ({len(kept) - lines} earlier lines omitted)", *kept[-lines:]]
    return "\n".join("    " + line for line in kept)


def _echo_enabled() -> bool:
    return os.environ.get("IAC_ECHO_COMMANDS", "") not in ("", "0", "false")


_ECHO_LOCK = threading.Lock()


def _echo(argv: Sequence[str]) -> None:
    """Print ``+ command`` on stderr as one write, so lines from threads never interleave."""
    with _ECHO_LOCK:
        sys.stderr.write(f"+ {shlex.join(argv)}\n")
        sys.stderr.flush()


def _argv(args: Sequence[str]) -> tuple[str, ...]:
    """``args`` as strings, echoed first when ``IAC_ECHO_COMMANDS`` asks for it."""
    argv = tuple(str(a) for a in args)
    if _echo_enabled():
        _echo(argv)
    return argv


def _not_found(
    argv: Sequence[str], exc: OSError, cwd: str | os.PathLike[str] | None = None
) -> ToolingError:
    """Why ``argv`` could not start: its folder ``cwd`` is gone (or is not a folder), or
    the program is missing. Python raises the same error for both."""
    folder = Path(cwd) if cwd is not None else None
    if folder is not None and not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        return ToolingError(
            f"{folder}: the folder {argv[0]} was to run in {what} ({exc.strerror}); "
            "restore it, or plan again from the current tree"
        )
    return ToolingError(
        f"{argv[0]}: program not found. Run `invoke setup` (or install it) and try again."
    )


def run(
    args: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    ok_codes: Sequence[int] = (0,),
    input_text: str | None = None,
    timeout: float | None = None,
    own_group: bool = False,
) -> Result:
    """Run ``args`` and return its result; raise if the exit code is not in ``ok_codes``.

    ``env`` is *added* to the current environment (``None`` values are not
    supported: build the full mapping with :func:`child_env` to remove keys).
    ``own_group`` starts it in a process group of its own, which an interrupt
    reaches once, through :func:`forwarding_interrupts` (Terragrunt and OpenTofu).
    """
    argv = _argv(args)
    if own_group:
        code, stdout, stderr = _run_in_own_group(argv, cwd, env, input_text)
        result = Result(argv, code, stdout, stderr)
        if code not in ok_codes:
            raise CalledProcessError(result, cwd)
        return result
    try:
        proc = subprocess.run(
            argv,
            cwd=cwd,
            env=child_env(env),
            input=input_text,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise _not_found(argv, exc, cwd) from exc
    except subprocess.TimeoutExpired as exc:
        raise ToolingError(f"{shlex.join(argv)} timed out after {timeout} s") from exc
    result = Result(argv, proc.returncode, proc.stdout, proc.stderr)
    if proc.returncode not in ok_codes:
        raise CalledProcessError(result, cwd)
    return result


def run_bytes(
    args: Sequence[str], *, cwd: Path | None = None, input_bytes: bytes = b""
) -> tuple[int, bytes, bytes]:
    """Run ``args`` with ``input_bytes`` on its stdin; its exit code, stdout and stderr as
    bytes (a batch reader such as ``git cat-file --batch``). Every exit code is returned."""
    argv = _argv(args)
    try:
        proc = subprocess.run(
            argv, cwd=cwd, env=child_env(), input=input_bytes, capture_output=True, check=False
        )
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise _not_found(argv, exc, cwd) from exc
    return proc.returncode, proc.stdout, proc.stderr


def stream(
    args: Sequence[str],
    on_line: Callable[[str, str], None],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> int:
    """Run ``args``, calling ``on_line(stream, line)`` ("stdout" or "stderr") for every
    line as it arrives, from two reader threads; return the exit code.

    The two streams keep separate pipes: a long write on one never splits a
    line of the other. The child runs in a process group of its own: within
    :func:`forwarding_interrupts` an interrupt reaches it once and the lines
    it prints while it stops still arrive. If ``on_line`` raises (or we are
    interrupted outside that block), the child's group gets one SIGINT
    (OpenTofu stops and releases its state lock) and up to 60 s to exit
    before it is killed; then the exception propagates.
    """
    argv = _argv(args)
    child = _start(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
    )
    failure: list[BaseException] = []

    def pump(name: str, pipe: IO[str]) -> None:
        try:
            for line in pipe:
                if not failure:
                    on_line(name, line)
        except BaseException as exc:  # re-raised in the caller's thread
            failure.append(exc)

    assert child.stdout is not None and child.stderr is not None
    err_reader = threading.Thread(target=pump, args=("stderr", child.stderr), daemon=True)
    err_reader.start()
    try:
        pump("stdout", child.stdout)
        err_reader.join()
        code = child.wait()
        if failure:
            raise failure[0]
        return code
    except BaseException:
        _stop(child)
        raise
    finally:
        _CHILDREN.discard(child)


class Interrupted(ToolingError):
    """An interrupt arrived before the program could start: it was not started (exit 130)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code=130)


class _Children:
    """Children running in process groups of their own, and whether we were interrupted.

    While :func:`forwarding_interrupts` holds, the first SIGINT/SIGTERM we get
    reaches, once, every process such a child started (:func:`_interrupt_once`:
    OpenTofu prints "Interrupt received", stops gracefully and releases its
    state lock), and no new child starts. A second interrupt is not
    forwarded: it would make OpenTofu exit at once, its lock held.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.live: set[subprocess.Popen[str]] = set()
        self.interrupted = False

    def add(self, child: subprocess.Popen[str]) -> None:
        with self.lock:
            self.live.add(child)
            late = self.interrupted
        if late:  # started in the instant the interrupt was being forwarded
            _interrupt_once(child)

    def discard(self, child: subprocess.Popen[str]) -> None:
        with self.lock:
            self.live.discard(child)

    def interrupt(self) -> bool:
        """Forward one SIGINT to every live group; False when already interrupted."""
        with self.lock:
            if self.interrupted:
                return False
            self.interrupted = True
            live = list(self.live)
        for child in live:
            _interrupt_once(child)
        return True


_CHILDREN = _Children()


def _signal_group(child: subprocess.Popen[Any], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # it has just exited
        os.killpg(child.pid, sig)


def _group_members(pgid: int) -> list[int] | None:
    """The processes of process group ``pgid``, from /proc (None where there is no /proc)."""
    if not os.path.isdir("/proc/self"):
        return None
    found: list[int] = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", encoding="utf-8", errors="replace") as fh:
                stat = fh.read()
        except OSError:  # it has just exited
            continue
        fields = stat[stat.rfind(")") + 2 :].split()  # after "pid (comm) ": state ppid pgrp
        if len(fields) > 2 and fields[2] == str(pgid):
            found.append(int(entry.name))
    return found


def _interrupt_once(leader: subprocess.Popen[Any]) -> None:
    """Give every process ``leader`` started one SIGINT, now and as they start, until it exits.

    ``leader`` (Terragrunt) runs in a group of its own and is never signalled
    itself: told of an interrupt, Terragrunt 1.1.3 forwards one of its own to
    OpenTofu 15 s later (its SignalForwardingDelay) and kills it at 30 s, and
    a second interrupt makes OpenTofu exit at once, its state unsaved and its
    lock held. Its children (OpenTofu, and git or ``tofu init`` on the way)
    get exactly one interrupt each; OpenTofu prints "Interrupt received",
    stops gracefully however long that takes, and Terragrunt exits after it.
    Without /proc, the whole group gets one SIGINT (as a terminal's Ctrl-C).
    """

    def watch() -> None:
        if _group_members(leader.pid) is None:
            _signal_group(leader, signal.SIGINT)
            return
        done: set[int] = {leader.pid}
        while leader.poll() is None:
            for pid in _group_members(leader.pid) or ():
                if pid not in done:
                    done.add(pid)
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGINT)
            time.sleep(0.1)

    threading.Thread(target=watch, name=f"interrupt-{leader.pid}", daemon=True).start()


def _start(argv: Sequence[str], **popen: Any) -> subprocess.Popen[str]:
    """Start ``argv`` in a process group of its own, registered for interrupts; refused
    (:class:`Interrupted`) once an interrupt was forwarded."""
    if _CHILDREN.interrupted:
        raise Interrupted(f"interrupted before {argv[0]} started")
    env = popen.pop("env", None)
    try:
        child: subprocess.Popen[str] = subprocess.Popen(
            argv, env=child_env(env), start_new_session=True, **popen
        )
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise _not_found(argv, exc, popen.get("cwd")) from exc
    _CHILDREN.add(child)
    return child


def _run_in_own_group(
    argv: Sequence[str], cwd: Path | None, env: Mapping[str, str] | None, input_text: str | None
) -> tuple[int, str, str]:
    child = _start(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
    )
    try:
        stdout, stderr = child.communicate(input_text)
    except BaseException:  # not within forwarding_interrupts, or our own failure
        _stop(child)
        raise
    finally:
        _CHILDREN.discard(child)
    return child.returncode, stdout, stderr


def _stop(child: subprocess.Popen[Any]) -> None:
    """Interrupt what ``child`` started (once) and give it 60 s to exit, then kill its group."""
    if child.poll() is not None:
        return
    _interrupt_once(child)
    try:
        child.wait(timeout=60)
    except subprocess.TimeoutExpired:
        _signal_group(child, signal.SIGKILL)
        child.wait()


def _notice(text: str) -> None:
    """A line on stderr from a signal handler: one unbuffered write, which cannot collide
    with a buffered write the handler interrupted (``print`` there can raise)."""
    with contextlib.suppress(OSError):
        os.write(2, text.encode("utf-8", "replace"))


def interrupted() -> bool:
    """Whether an interrupt was forwarded in this run (no new program starts after it)."""
    return _CHILDREN.interrupted


@contextlib.contextmanager
def forwarding_interrupts(what: str = "", *, notice: str | None = None) -> Iterator[None]:
    """Within the block (main thread), Ctrl-C or SIGTERM does not stop us: it is
    forwarded once to what the running Terragrunt processes started
    (:func:`_interrupt_once`), no new one starts, and the block runs to its end
    with their results (check :func:`interrupted`). The first signal prints
    "SIGNAL received: " and ``notice`` (by default: stopping ``what``)."""
    notice = notice or (
        f"stopping {what}; OpenTofu stops gracefully and releases "
        "its lock (waiting for it; nothing new starts)..."
    )
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    with _CHILDREN.lock:
        _CHILDREN.interrupted = False  # a new block: what was interrupted before is over

    def forward(signum: int, frame: object) -> None:
        name = signal.Signals(signum).name
        if _CHILDREN.interrupt():
            _notice(f"\n{name} received: {notice}\n")
        else:
            _notice(f"{name} received again: still waiting for OpenTofu to stop\n")

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a child process: ours plus ``extra``."""
    env = dict(os.environ)
    if extra:
        env.update(extra)
    return env


def run_to_file(
    args: Sequence[str],
    *,
    output: Path,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[int, bool]:
    """Run a long, state-changing command (an apply) so that it finishes what it started.

    - The child writes its output to the file ``output`` (appended), never to a
      pipe: if we are killed, a pipe's reader vanishes and OpenTofu dies at its
      next write, half way through, with its state unwritten and its lock held.
      A file outlives us.
    - The child runs in its own process group (its own session), so a Ctrl-C
      on the terminal, or a runner's signal to our group, reaches only us.
    - The first SIGINT/SIGTERM we get is forwarded once, as SIGINT, to every
      process Terragrunt started, never to Terragrunt itself
      (:func:`_interrupt_once`: told of an interrupt, Terragrunt would send
      OpenTofu a second one 15 s later). OpenTofu prints "Interrupt received",
      stops gracefully however long the resource in flight takes, persists
      state and releases its lock. Further signals are not forwarded: a second
      interrupt would make OpenTofu exit without saving state. We wait for the
      child to exit.

    Returns (exit code, whether we were interrupted). Read ``output`` for what
    the child really did.
    """
    argv = _argv(args)
    output.parent.mkdir(parents=True, exist_ok=True)
    notice = (
        f"asking {argv[0]} to stop gracefully "
        "(waiting for OpenTofu to save state and release the lock)..."
    )
    with forwarding_interrupts(notice=notice):
        with output.open("ab") as sink:
            child = _start(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
            )
        try:
            code = child.wait()
        finally:
            _CHILDREN.discard(child)
        return code, interrupted()
