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
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from tooling.errors import ToolingError


@dataclass(frozen=True)
class Result:
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


def _not_found(argv: Sequence[str]) -> ToolingError:
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
) -> Result:
    """Run ``args`` and return its result; raise if the exit code is not in ``ok_codes``.

    ``env`` is *added* to the current environment (``None`` values are not
    supported: build the full mapping with :func:`child_env` to remove keys).
    """
    argv = _argv(args)
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
    except FileNotFoundError as exc:
        raise _not_found(argv) from exc
    except subprocess.TimeoutExpired as exc:
        raise ToolingError(f"{shlex.join(argv)} timed out after {timeout} s") from exc
    result = Result(argv, proc.returncode, proc.stdout, proc.stderr)
    if proc.returncode not in ok_codes:
        raise CalledProcessError(result, cwd)
    return result


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
    line of the other. If we are interrupted (Ctrl-C, or ``on_line`` raises),
    the child gets one SIGINT (Terragrunt passes it to OpenTofu, which stops
    and releases its state lock) and up to 60 s to exit before it is killed;
    then the exception propagates.
    """
    import signal

    argv = _argv(args)
    try:
        child = subprocess.Popen(
            argv,
            cwd=cwd,
            env=child_env(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
        )
    except FileNotFoundError as exc:
        raise _not_found(argv) from exc
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
        if child.poll() is None:
            child.send_signal(signal.SIGINT)
            try:
                child.wait(timeout=60)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        raise


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
    - The first SIGINT/SIGTERM we get is forwarded once, as SIGINT, to the
      child's whole process group: Terragrunt (1.1.3) does not forward a signal
      sent to its own pid, OpenTofu receives it from the group, prints
      "Interrupt received", stops gracefully, persists state and releases its
      lock. Further signals are not forwarded: a second interrupt would make
      OpenTofu exit without saving state. We wait for the child to exit.

    Returns (exit code, whether we were interrupted). Read ``output`` for what
    the child really did.
    """
    import signal

    argv = _argv(args)
    output.parent.mkdir(parents=True, exist_ok=True)
    with output.open("ab") as sink:
        try:
            child = subprocess.Popen(
                argv,
                cwd=cwd,
                env=child_env(env),
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except FileNotFoundError as exc:
            raise _not_found(argv) from exc
    interrupted = False

    def forward(signum: int, frame: object) -> None:
        nonlocal interrupted
        if interrupted:
            return
        interrupted = True
        print(
            f"\n{signal.Signals(signum).name} received: asking {argv[0]} to stop gracefully "
            "(waiting for OpenTofu to save state and release the lock)...",
            file=sys.stderr,
            flush=True,
        )
        with contextlib.suppress(ProcessLookupError):  # it has just exited
            os.killpg(child.pid, signal.SIGINT)

    in_main = threading.current_thread() is threading.main_thread()
    previous = {}
    if in_main:
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, forward)
    try:
        code = child.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return code, interrupted
