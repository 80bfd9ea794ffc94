"""What every task's preamble owns (tooling/cli.py), and what no import does."""

from __future__ import annotations

import ast
import io
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from infra_fixtures import REPO, Invoked, invoke_in_process

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


# --------------------------------------------------------------------------- required options


def _in_process(*argv: str) -> Invoked:
    """``iac ARGV`` in this process: the collection's own program (usage errors exit 2)."""
    from tooling.cli import UsageProgram
    from tooling.tasks import ns

    program = UsageProgram(namespace=ns, name="iac", binary="iac", version="test")
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with redirect_stdout(out), redirect_stderr(err):
        try:
            program.run(["iac", *argv], exit=True)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return Invoked(code, out.getvalue(), err.getvalue())


def _every_task() -> list[tuple[str, Any]]:
    from tooling.tasks import ns

    return sorted((name, ns[name]) for name in ns.task_names)


def test_every_task_declares_its_required_options_one_way() -> None:
    from tooling.cli import Task

    tasks = _every_task()
    assert len(tasks) >= 25
    for name, task in tasks:
        assert isinstance(task, Task), f"{name}: not a tooling.cli.Task"
        # a positional parameter is required; its declaration is the one place that says so
        assert set(task.positional) <= set(task.required), name
    assert sum(len(task.required) for _, task in tasks) >= 15


def _required_cases() -> list[tuple[str, str, bool]]:
    """(task, required option, given empty rather than left out) for every task's every one."""
    return [
        (name, option, empty)
        for name, task in _every_task()
        for option in task.required
        for empty in (False, True)
    ]


@pytest.mark.parametrize(("name", "option", "empty"), _required_cases())
def test_a_missing_required_option_is_a_usage_error_naming_it(
    name: str, option: str, empty: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tooling.cli import option_flag
    from tooling.tasks import ns

    monkeypatch.chdir(tmp_path)  # no repository: nothing but the options is read
    task = ns[name]
    others = [
        part
        for other in task.required
        if other != option
        for part in (option_flag(other), str(tmp_path / "given"))
    ]
    argv = [name, *others, *((option_flag(option), "") if empty else ())]
    ran = _in_process(*argv)
    flag = option_flag(option)
    assert ran.returncode == 2, ran.output
    (line,) = ran.stderr.splitlines()
    assert line.startswith(f"error: {name} needs ") and f"{flag} {task.required[option]}" in line
    # only the missing one is named
    assert [o for o in task.required if f"{option_flag(o)} " in line] == [option]
    assert not (tmp_path / ".iac").exists()  # nothing ran


# --------------------------------------------------------------------------- aliases


def _is_module(dotted: str) -> bool:
    """Whether ``dotted`` names a module or package of this repository (not a name in one)."""
    where = REPO.joinpath(*dotted.split("."))
    return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()


def _module_aliases(path: Path) -> list[str]:
    """``import a.b as c`` and ``from a import m as c`` of a tooling module ``m`` with
    ``c != m``, as ``file:line: ...``."""
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                last = alias.name.rsplit(".", 1)[-1]
                if alias.name.startswith("tooling") and alias.asname not in (None, last):
                    found.append(f"{path}:{node.lineno}: import {alias.name} as {alias.asname}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tooling"):
            for alias in node.names:
                if alias.asname in (None, alias.name):
                    continue
                if _is_module(f"{node.module}.{alias.name}"):
                    found.append(
                        f"{path}:{node.lineno}: from {node.module} import {alias.name} "
                        f"as {alias.asname}"
                    )
    return found


def test_no_import_renames_a_tooling_module() -> None:
    files = sorted((REPO / "tooling").rglob("*.py"))
    assert len(files) > 100
    found = [line for path in files for line in _module_aliases(path)]
    assert found == [], "rename the local name instead:\n" + "\n".join(found)


def test_the_alias_check_finds_a_renamed_module(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from tooling.commands import apply as applying\n"
        "import tooling.io.git as gitw\n"
        "from tooling.commands.apply import apply as apply_plans\n"  # a function: fine
        "from tooling.io import git\n"
    )
    assert _module_aliases(sample) == [
        f"{sample}:1: from tooling.commands import apply as applying",
        f"{sample}:2: import tooling.io.git as gitw",
    ]


# --------------------------------------------------------------------------- the preamble, once


def _preamble_calls(path: Path) -> list[str]:
    """Calls in ``path`` that only the owners may make: the tools' check itself
    (``check_versions(...)``; ``ws.check_tools()`` is the workspace's, made once per
    workspace, and a task has one) or the first line (``say(X.describe())``)."""
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if called == "check_versions":
            found.append(f"{path}:{node.lineno}: {called}()")
        elif called == "say" and len(node.args) == 1:
            arg = node.args[0]
            if isinstance(arg, ast.Call) and getattr(arg.func, "attr", "") == "describe":
                found.append(f"{path}:{node.lineno}: say(....describe())")
    return found


#: the owners: the preamble (the first line), the workspace's one check (a property, so
#: once per workspace, and a task has one: :func:`tooling.cli.workspace`), and the
#: toolchain that defines the check
_OWNERS = ("tooling/cli.py", "tooling/io/workspace.py", "tooling/io/toolchain.py")


def test_only_the_preamble_checks_the_tools_or_prints_the_first_line() -> None:
    files = [
        p
        for p in sorted((REPO / "tooling").rglob("*.py"))
        if str(p.relative_to(REPO)) not in _OWNERS
    ]
    found = [line for path in files for line in _preamble_calls(path)]
    assert found == [], "declare it in the task's run(..., banner=, tools=):\n" + "\n".join(found)
    owners = [line for name in _OWNERS for line in _preamble_calls(REPO / name)]
    assert any("workspace.py" in line and "check_versions" in line for line in owners), owners


def test_the_preamble_check_finds_a_second_check_or_banner(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "def f(ws):\n"
        "    say(ws.describe())\n"
        "    ws.check_tools()\n"
        "    toolchain.check_versions(ws.root)\n"
        "    say(f'app: {state.describe()}')\n"  # a line of its own, not the first line
    )
    assert _preamble_calls(sample) == [
        f"{sample}:2: say(....describe())",
        f"{sample}:4: check_versions()",
    ]


def _counted_run(
    repo: Path, argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[Invoked, int, int]:
    """``invoke ARGV`` in ``repo``, in this process; with the tools' checks it made (the one
    function that checks them, :func:`tooling.io.toolchain.check_versions`, counted) and the
    lines it printed saying what it runs against."""
    from tooling.io import toolchain

    checks: list[Path] = []
    real = toolchain.check_versions

    def counted(repo_root: Path, **kwargs: Any) -> Any:
        checks.append(repo_root)
        return real(repo_root, **kwargs)

    monkeypatch.setattr(toolchain, "check_versions", counted)
    ran = invoke_in_process(repo, *argv, monkeypatch=monkeypatch)
    banners = [line for line in ran.stderr.splitlines() if line.endswith("(embedded default)")]
    return ran, len(checks), len(banners)


def test_every_task_checks_the_tools_and_prints_its_first_line_at_most_once(
    example_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every task of the collection, run for real in the example repository with each
    required option naming a path that does not exist (the task goes through its
    preamble, then stops where that path is read). ``invoke test`` runs pytest through
    invoke's shell runner: its command is recorded instead of started."""
    from invoke.context import Context

    from tooling.cli import option_flag

    started: list[str] = []
    monkeypatch.setattr(Context, "run", lambda self, command, **kw: started.append(command))
    counts = {}
    for name, task in _every_task():
        argv = [name]
        for option in task.required:
            argv += [option_flag(option), str(tmp_path / "absent" / option)]
        ran, checks, banners = _counted_run(example_repo, argv, monkeypatch)
        assert "Traceback" not in ran.output and "bug in the tooling" not in ran.output, (
            name,
            ran.output,
        )
        assert checks <= 1 and banners <= 1, (name, checks, banners, ran.output)
        counts[name] = (checks, banners)
    # the preamble ran: most tasks that read the units said so first, those that run
    # OpenTofu or Terragrunt checked the tools (not a table of names: only that some did)
    assert sum(c for c, _ in counts.values()) >= 5, counts
    assert sum(b for _, b in counts.values()) >= 8, counts
    assert started and "pytest" in started[0]


def test_a_plan_and_its_apply_each_check_the_tools_once(
    example_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "plans"
    planned, checks, banners = _counted_run(
        example_repo, ["plan", "--unit", "live/cloud/iam", "--out", str(out)], monkeypatch
    )
    assert planned.returncode == 0, planned.output
    assert (checks, banners) == (1, 1)
    applied, checks, banners = _counted_run(
        example_repo, ["apply", "--plans", str(out)], monkeypatch
    )
    assert applied.returncode == 0, applied.output
    assert "live/cloud/iam: applied" in applied.stdout
    assert (checks, banners) == (1, 1)


def test_one_plan_parses_policy_toml_once_however_many_steps_read_it(
    example_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tooling.io import config

    reads: list[Path] = []
    parses: list[str] = []
    read, parse = config.read_policy, config.parse_policy_text

    def counted_read(root: Path) -> Any:
        reads.append(root)
        return read(root)

    def counted_parse(text: str, *where: str) -> Any:
        parses.append(text)
        return parse(text, *where)

    monkeypatch.setattr(config, "read_policy", counted_read)
    monkeypatch.setattr(config, "parse_policy_text", counted_parse)
    out = tmp_path / "plans"
    ran = invoke_in_process(
        example_repo, "plan", "--unit", "live/cloud/iam", "--out", str(out), monkeypatch=monkeypatch
    )
    assert ran.returncode == 0, ran.output
    assert len(reads) == 1  # the preamble's: the layout, the workspace, the verifier... get it
    assert parses == [(example_repo / "policy.toml").read_text(encoding="utf-8")]
