"""Splitting Terragrunt's JSON log per unit, and naming units in --filter: tables, no process."""

from __future__ import annotations

import json

import pytest

from tooling.core.plan import runlog

ROOT = "/repo"
UNITS = frozenset({"live/cloud/dns", "live/cloud/iam"})


def _json(**fields: object) -> str:
    return json.dumps(fields) + "\n"


@pytest.mark.parametrize(
    ("raw", "level", "working_dir", "msg", "command"),
    [
        (
            _json(
                level="stdout",
                **{"working-dir": "live/cloud/dns", "tf-command-args": ["plan", "-out=x"]},
                msg="a\nb\n",
            ),
            "stdout",
            "live/cloud/dns",
            "a\nb\n",
            "plan",
        ),
        (
            _json(level="info", msg="The following units will be run"),
            "info",
            None,
            "The following units will be run",
            None,
        ),
        ("panic: runtime error\n", "raw", None, "panic: runtime error", None),
        ('{"level":"info", "msg": broken\n', "raw", None, '{"level":"info", "msg": broken', None),
        (_json(level="warn", msg=3), "raw", None, '{"level": "warn", "msg": 3}', None),
    ],
)
def test_a_line_is_parsed_or_kept_raw(
    raw: str, level: str, working_dir: str | None, msg: str, command: str | None
) -> None:
    line = runlog.parse(raw)
    assert (line.level, line.working_dir, line.msg, line.tf_command) == (
        level,
        working_dir,
        msg,
        command,
    )


@pytest.mark.parametrize(
    ("working_dir", "unit"),
    [
        ("live/cloud/dns", "live/cloud/dns"),
        ("./live/cloud/dns", "live/cloud/dns"),
        ("/repo/live/cloud/dns", "live/cloud/dns"),
        ("/repo/live/cloud/dns/", "live/cloud/dns"),
        ("/repo/live/cluster/network", None),  # a dependency read for a unit: not one of ours
        ("/elsewhere/live/cloud/dns", None),
        ("/repo2/live/cloud/dns", None),
        ("live/cloud", None),
        (None, None),
    ],
)
def test_a_line_belongs_to_the_unit_its_working_dir_names(
    working_dir: str | None, unit: str | None
) -> None:
    assert runlog.unit_of(working_dir, ROOT, UNITS) == unit


def test_the_runner_pool_markers_are_recognised() -> None:
    assert (
        runlog.started("Runner Pool Task: starting unit=/repo/live/cloud/dns command=plan")
        == "/repo/live/cloud/dns"
    )
    ok = runlog.finished(
        "Runner Pool Task: finished unit=/repo/live/a b command=plan outcome=succeeded"
    )
    assert ok == runlog.Finished("/repo/live/a b", True, None)
    failed = runlog.finished(
        "Runner Pool Task: finished unit=/repo/live/cloud/iam command=plan outcome=failed err=downloading source\n"
        "* git exited with 1: pathspec 'v9.9.9' did not match\n"
    )
    assert failed is not None and not failed.succeeded and failed.unit_dir == "/repo/live/cloud/iam"
    assert failed.error is not None and "v9.9.9" in failed.error
    assert runlog.finished("Runner Pool Controller: /repo/live/cloud/iam failed") is None
    assert (
        runlog.working_copy("Setting working directory to ./live/x/.terragrunt-cache/a/b")
        == "./live/x/.terragrunt-cache/a/b"
    )


@pytest.mark.parametrize(
    ("path", "query"),
    [
        ("live/cloud/dns", "{./live/cloud/dns}"),
        ("live/cloud/my unit", "{./live/cloud/my unit}"),
        ("live/eu-west-1/vpc_2.0", "{./live/eu-west-1/vpc_2.0}"),
        ("live/cloud/dns $(touch x)", None),  # parentheses are filter syntax
        ("live/cloud/*", None),  # a glob would select more than the unit
        ("live/cloud/[ab]", None),
        ("live/{a}", None),
        ("live/a|b", None),
        ("live/!a", None),
        ("live/a...b", None),  # graph traversal
        ("live/cloud/dns ", None),  # trailing space is trimmed by the lexer
        ("live/../etc", None),
        ("/abs/path", None),
        ("live/x=y", None),
    ],
)
def test_only_paths_the_filter_language_reads_literally_become_filters(
    path: str, query: str | None
) -> None:
    assert runlog.filter_for(path) == query


def test_a_log_line_keeps_opentofu_output_as_printed_and_tags_the_rest() -> None:
    assert (
        runlog.render(runlog.Line("stdout", "u", "  # terraform_data.x will be created\n"))
        == "  # terraform_data.x will be created"
    )
    assert (
        runlog.render(runlog.Line("error", "u", "Error: boom\n\n  on x line 1"))
        == "ERROR Error: boom\n\nERROR   on x line 1"
    )
