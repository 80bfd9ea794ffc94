"""The pipeline removes only files it wrote: a user's file that happens to carry a name
the verifier writes beside a unit (``.iac-declared.hcl``, ``.iac-declared.json``,
``.iac-rendered.json``) survives a plan, or the plan refuses the unit naming it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from infra_fixtures import invoke, read_summary, units_by_path

from tooling.engine.rules import verify
from tooling.errors import ToolingError
from tooling.io.workspace import Workspace

pytestmark = pytest.mark.e2e

DNS = "live/cloud/dns"
MINE = {
    ".iac-declared.hcl": "# my own notes on the DNS unit; not the pipeline's\n",
    ".iac-declared.json": '{"mine": true}\n',
    ".iac-rendered.json": '{"mine": true}\n',
}


def _leave_my_files(repo: Path) -> None:
    for name, text in MINE.items():
        (repo / DNS / name).write_text(text)


def _my_files_are_intact(repo: Path) -> None:
    for name, text in MINE.items():
        assert (repo / DNS / name).read_text() == text, name


def test_a_users_files_named_like_the_verifiers_survive_a_plan_untouched(
    example_repo: Path, tmp_path: Path
) -> None:
    _leave_my_files(example_repo)
    out = tmp_path / "plans"
    ran = invoke(example_repo, "plan", "--all", "--out", str(out))
    assert ran.returncode == 0, ran.output
    _my_files_are_intact(example_repo)
    # the unit was planned: its declared side came from the model, no file was needed
    assert units_by_path(read_summary(out))[DNS]["status"] in ("changes", "no-changes")
    leftovers = [p.name for p in (example_repo / DNS).iterdir() if p.name.startswith(".iac-")]
    assert sorted(leftovers) == sorted(MINE)


def test_a_unit_whose_declared_side_needs_the_reserved_name_is_refused_naming_the_file(
    example_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _leave_my_files(example_repo)

    def inexact(*_args: Any) -> None:  # the model cannot work the declared side out
        return None

    monkeypatch.setattr(verify, "model_declared", inexact)
    ws = Workspace(example_repo)
    with pytest.raises(ToolingError) as raised:
        verify.rendered_declared(example_repo / DNS, DNS, ws.tool_env, ws.policy)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"{DNS}/.iac-declared.hcl: ")
    assert "not the pipeline's" in message and "rename it" in message
    _my_files_are_intact(example_repo)
    # many units at once: the unit is not rendered with the user's file in place (the
    # guard then refuses it, naming why), and the other units are rendered as before
    sides = verify.declared_sides(
        [(example_repo / p, p) for p in ("live/cloud/dns", "live/cloud/iam")],
        ws.tool_env,
        ws.policy,
    )
    assert sides[DNS][0] is None and "not the pipeline's" in str(sides[DNS][1])
    assert sides["live/cloud/iam"][0] is not None and sides["live/cloud/iam"][1] is None
    _my_files_are_intact(example_repo)
    assert not (example_repo / "live/cloud/iam" / verify.DECLARED_CONFIG).exists()


def test_a_declared_file_an_interrupted_run_left_is_replaced_and_removed(tmp_path: Path) -> None:
    text = verify.declared_text("root.hcl", [])
    left = tmp_path / verify.DECLARED_CONFIG
    left.write_text(text + "# an older run's\n")
    written = verify.write_declared(tmp_path, text, "live/x")
    assert written.read_text() == text
    verify.remove_declared(written)
    assert not written.exists()
    # a file put in its place meanwhile is not the pipeline's: it stays
    left.write_text("mine\n")
    verify.remove_declared(left)
    assert left.read_text() == "mine\n"
    with pytest.raises(ToolingError, match=r"live/x/\.iac-declared\.hcl: .*rename it"):
        verify.write_declared(tmp_path, text, "live/x")
    assert left.read_text() == "mine\n"
