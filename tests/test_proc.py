"""The one wrapper that starts programs: what it echoes."""

from __future__ import annotations

import threading

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
