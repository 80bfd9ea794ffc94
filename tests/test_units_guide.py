"""docs/units.md ("Add a unit"), followed step by step in a copy of the example tree.

The unit's file is the guide's HCL block, the commands are its shell blocks,
run with the real ``invoke``, tofu and terragrunt.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from infra_fixtures import REPO, invoke

GUIDE = REPO / "docs" / "units.md"


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.S)


def _commands() -> list[list[str]]:
    out = []
    for block in _blocks("sh"):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if words:
                assert words[0] == "invoke", line
                out.append(words[1:])
    return out


def test_the_add_a_unit_guide_works_as_written(example_repo: Path, tmp_path: Path) -> None:
    (hcl,) = _blocks("hcl")
    path = re.match(r"# (live/\S+):", hcl)
    assert path is not None
    unit = path[1]
    (example_repo / unit).mkdir(parents=True)
    (example_repo / unit / "terragrunt.hcl").write_text(hcl, encoding="utf-8")

    commands = _commands()
    assert [c[0] for c in commands] == ["check", "units", "affected", "plan"]
    for argv in commands:
        ran = invoke(example_repo, *argv)
        assert ran.returncode == 0, (argv, ran.output)
        if argv[0] in ("units", "affected"):
            assert unit in ran.stdout, (argv, ran.stdout)

    summary = json.loads((example_repo / ".iac" / "plans" / "summary.json").read_text())
    assert [u["path"] for u in summary["units"]] == [unit]
    assert summary["units"][0]["status"] == "changes"
