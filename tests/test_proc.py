"""The one wrapper that starts programs: what it echoes."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tooling.io import proc


def test_echoed_commands_from_threads_stay_on_their_own_lines(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("IAC_ECHO_COMMANDS", "1")
    names = [f"arg-{n}" for n in range(40)]
    threads = [threading.Thread(target=proc.run, args=(["true", name],)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = capfd.readouterr().err.splitlines()
    assert sorted(lines) == sorted(f"+ true {name}" for name in names)


LEADER = r"""
import signal, subprocess, sys, time
out = sys.argv[1]
signal.signal(signal.SIGINT, lambda *_: open(out + "/leader", "a").write("int\n"))
CHILD = (
    "import signal, sys, time\n"
    "got = []\n"
    "signal.signal(signal.SIGINT, lambda *_: (open(sys.argv[1], 'a').write('int\\n'), got.append(1)))\n"
    "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # one sent while starting waits\n"
    "open(sys.argv[1] + '.started', 'w').close()\n"
    "end = time.monotonic() + 0.5 + 3\n"
    "while time.monotonic() < end and not got: time.sleep(0.05)\n"
    "time.sleep(0.3)  # a second interrupt would arrive now\n"
)
first = subprocess.Popen([sys.executable, "-c", CHILD, out + "/first"])
time.sleep(0.5)  # the second starts after the interrupt
# A real child (OpenTofu) handles SIGINT from its first instant; this stand-in
# is Python, which would die of one sent before it set its handler. It starts
# with SIGINT blocked (the mask is inherited), so one sent early waits for it.
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
second = subprocess.Popen([sys.executable, "-c", CHILD, out + "/second"])
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
first.wait(); second.wait()
"""


def test_an_interrupt_reaches_every_process_the_leader_starts_once_and_never_the_leader(
    tmp_path: Path,
) -> None:
    """Terragrunt (the leader) told of an interrupt would send OpenTofu a second one."""
    import subprocess
    import sys
    import time

    leader = subprocess.Popen(
        [sys.executable, "-c", LEADER, str(tmp_path)], start_new_session=True, text=True
    )
    deadline = time.monotonic() + 30
    while not (tmp_path / "first.started").exists():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    proc._interrupt_once(leader)
    assert leader.wait(timeout=30) == 0
    assert (tmp_path / "first").read_text() == "int\n"
    assert (tmp_path / "second").read_text() == "int\n"  # started after the interrupt
    assert not (tmp_path / "leader").exists()
