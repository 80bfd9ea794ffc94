"""What every task's preamble owns (tooling/cli.py), and what no import does."""

from __future__ import annotations

import subprocess
import sys

from infra_fixtures import REPO

#: every module of the package imported in a fresh interpreter (``tooling.__main__`` runs
#: the console script when imported: it is the one left out), then the process's streams
#: and redaction step looked at
_IMPORT_EVERYTHING = """
import pkgutil, sys
import tooling
stdout, stderr = sys.stdout, sys.stderr
names = sorted(
    m.name for m in pkgutil.walk_packages(tooling.__path__, "tooling.")
    if m.name != "tooling.__main__"
)
for name in names:
    __import__(name)
from tooling.errors import ToolingError
from tooling.io import redacting
assert sys.stdout is stdout, "an import replaced sys.stdout"
assert sys.stderr is stderr, "an import replaced sys.stderr"
try:
    redacting.redact("text")
except ToolingError as exc:
    print("not installed:", exc)
else:
    print("installed by an import")
print(len(names), "modules")
"""


def test_importing_the_package_installs_no_redaction_step_and_replaces_no_stream() -> None:
    ran = subprocess.run(
        [sys.executable, "-c", _IMPORT_EVERYTHING],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert lines[0].startswith("not installed: internal error: no redaction step installed")
    assert int(lines[-1].split()[0]) > 100  # the whole package, commands and mechanisms too
