"""The Go runtime settings the tools' processes get (Terragrunt, OpenTofu, the guard):
less frequent garbage collection, a soft memory cap, and the caller's own choice kept."""

from __future__ import annotations

import os

import pytest

from tooling.io import terragrunt

GIB = 1 << 30


@pytest.mark.parametrize(
    ("environ", "mem_total", "expected"),
    [
        ({}, 8 * GIB, {"GOGC": "400", "GOMEMLIMIT": "2048MiB"}),
        ({}, 24 * GIB, {"GOGC": "400", "GOMEMLIMIT": "6144MiB"}),
        ({}, 512 << 20, {"GOGC": "400", "GOMEMLIMIT": "256MiB"}),  # never below 256 MiB
        ({}, None, {"GOGC": "400"}),  # memory unknown: no cap
        ({"GOGC": "100"}, 8 * GIB, {}),  # the caller's GOGC: nothing of ours
        ({"GOMEMLIMIT": "1GiB"}, 8 * GIB, {}),  # the caller's cap: nothing of ours
        ({"GOGC": "off", "GOMEMLIMIT": "3GiB"}, 8 * GIB, {}),
    ],
)
def test_go_runtime_env_collects_less_often_unless_the_caller_chose(
    environ: dict[str, str], mem_total: int | None, expected: dict[str, str]
) -> None:
    assert terragrunt.go_runtime_env(environ, mem_total) == expected


def test_memory_total_is_at_most_the_machine_s_memory() -> None:
    total = terragrunt.memory_total()
    assert total is not None and total > 0
    pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert total <= pages + (64 << 20)  # the machine's, to the kernel's rounding, or a container's


def test_the_tools_environment_carries_the_settings_and_keeps_the_caller_s(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GOGC", raising=False)
    monkeypatch.delenv("GOMEMLIMIT", raising=False)
    env = terragrunt.base_env()
    assert env["GOGC"] == terragrunt.GO_GC_PERCENT
    assert env["GOMEMLIMIT"].endswith("MiB")
    monkeypatch.setenv("GOGC", "50")
    env = terragrunt.base_env()
    assert "GOGC" not in env and "GOMEMLIMIT" not in env  # the caller's GOGC reaches them as is


MEMINFO = "MemTotal:       24576000 kB\nMemFree:         1000000 kB\n"


@pytest.mark.parametrize(
    ("meminfo", "cgroups", "expected"),
    [
        (MEMINFO, ["", ""], 24576000 * 1024),  # no container: the machine's memory
        (MEMINFO, ["2147483648\n", ""], 2 << 30),  # cgroup v2 limit below it
        (MEMINFO, ["max\n", ""], 24576000 * 1024),  # cgroup v2 without a limit
        (MEMINFO, ["", "9223372036854771712\n"], 24576000 * 1024),  # v1 without one
        (MEMINFO, ["", "1073741824\n"], 1 << 30),  # cgroup v1 limit
        ("", ["", ""], None),  # nothing readable
        ("MemTotal: lots kB\n", ["", ""], None),  # nothing parsable
    ],
)
def test_the_memory_limit_is_the_container_s_when_it_is_smaller_than_the_machine_s(
    meminfo: str, cgroups: list[str], expected: int | None
) -> None:
    assert terragrunt.memory_limit(meminfo, cgroups) == expected
