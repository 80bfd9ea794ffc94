"""Provider lock files in bumps and plans: the pure parts, as tables.

The end-to-end behaviour, with a real provider, is in tests/test_bump_locks_e2e.py.
"""

from __future__ import annotations

import pytest

from tooling.core.bump.locks import (
    LockChange,
    lock_body,
    lock_changes,
    lock_command,
    lock_commit_lines,
    lock_hint,
    parse_lock,
)
from tooling.core.ci import executors
from tooling.errors import ToolingError
from tooling.io import terragrunt
from tooling.model.policy import policy_from

HEADER = '# This file is maintained automatically by "tofu init".\n# Manual edits may be lost in future updates.\n'


def block(address: str, version: str, *hashes: str) -> str:
    lines = "".join(f'    "{h}",\n' for h in hashes)
    return (
        f'\nprovider "{address}" {{\n  version     = "{version}"\n'
        f'  constraints = "{version}"\n  hashes = [\n{lines}  ]\n}}\n'
    )


TIME = "registry.opentofu.org/hashicorp/time"
NULL = "registry.opentofu.org/hashicorp/null"


def test_a_lock_file_is_read_as_providers_with_version_constraints_and_hashes() -> None:
    text = HEADER + block(TIME, "0.14.2", "h1:aaa=", "zh:bbb") + block(NULL, "3.2.4", "h1:ccc=")
    locked = parse_lock(text)
    assert sorted(locked) == [NULL, TIME]
    assert locked[TIME].version == "0.14.2"
    assert locked[TIME].constraints == "0.14.2"
    assert locked[TIME].hashes == ("h1:aaa=", "zh:bbb")
    assert parse_lock(HEADER) == {}


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (None, HEADER + block(TIME, "0.14.2", "h1:a="), [(TIME, None, "0.14.2", "added")]),
        (
            HEADER + block(TIME, "0.13.1", "h1:a="),
            HEADER + block(TIME, "0.14.2", "h1:b=", "h1:c="),
            [(TIME, "0.13.1", "0.14.2", "updated")],
        ),
        (HEADER + block(TIME, "0.14.2", "h1:a="), HEADER, [(TIME, "0.14.2", None, "removed")]),
        (
            HEADER + block(TIME, "0.14.2", "h1:a="),
            HEADER + block(TIME, "0.14.2", "h1:a=", "h1:arm="),
            [(TIME, "0.14.2", "0.14.2", "checksums")],
        ),
        (HEADER + block(TIME, "0.14.2", "h1:a="), HEADER + block(TIME, "0.14.2", "h1:a="), []),
        (None, None, []),
    ],
)
def test_what_a_bump_changed_in_a_lock_file(
    old: str | None, new: str | None, expected: list[tuple[str, str | None, str | None, str]]
) -> None:
    got = lock_changes("live/cloud/dns", old, new)
    assert [(c.address, c.old_version, c.new_version, c.kind) for c in got] == expected
    assert all(c.unit == "live/cloud/dns" for c in got)


def test_commit_lines_and_pull_request_table_name_the_lock_file_and_versions() -> None:
    changes = [
        LockChange("live/a", TIME, None, "0.14.2", 2),
        LockChange("live/b", NULL, "3.2.3", "3.2.4", 1),
    ]
    assert lock_commit_lines(changes) == [
        f"live/a/.terraform.lock.hcl: {TIME} 0.14.2 (added)",
        f"live/b/.terraform.lock.hcl: {NULL} 3.2.3 -> 3.2.4",
    ]
    body = "\n".join(lock_body(changes, ["linux_amd64", "linux_arm64"]))
    assert "### Provider lock files (linux_amd64, linux_arm64)" in body
    assert f"| `live/a/.terraform.lock.hcl` | `{TIME}` | 0.14.2 (added) | 2 |" in body
    assert f"| `live/b/.terraform.lock.hcl` | `{NULL}` | 3.2.3 -> 3.2.4 | 1 |" in body
    assert lock_body([], ["linux_amd64"]) == []


@pytest.mark.parametrize(
    ("error", "hinted"),
    [
        (
            "Error: Provider dependency changes detected\nChanges to the required provider "
            "dependencies were detected, but the lock file is read-only.",
            True,
        ),
        ("Error: Inconsistent dependency lock file\nprovider registry.opentofu.org/x/y", True),
        ('Error: Unsupported argument\nAn argument named "foo" is not expected here.', False),
        ("Error: error acquiring the state lock", False),
    ],
)
def test_a_plan_failing_on_its_lock_file_names_the_file_and_the_command(
    error: str, hinted: bool
) -> None:
    hint = lock_hint(error, "live/cloud/dns", ["linux_amd64", "linux_arm64"])
    if not hinted:
        assert hint is None
        return
    assert hint is not None
    assert "live/cloud/dns/.terraform.lock.hcl does not record the providers" in hint
    assert (
        "-- providers lock -platform=linux_amd64 -platform=linux_arm64` in live/cloud/dns" in hint
    )


def test_lock_platforms_are_every_executors_platforms_in_declaration_order() -> None:
    declared = policy_from(
        {
            "executors": {
                "hosted": {"runs_on": ["ubuntu-latest"]},
                "lan": {"runs_on": ["self-hosted"], "platforms": ["linux_arm64", "linux_amd64"]},
                "edge": {"runs_on": ["edge"], "platforms": ["darwin_arm64"]},
            }
        }
    ).executors
    assert declared["hosted"].platforms == ("linux_amd64",)
    assert executors.lock_platforms(declared) == ("linux_amd64", "linux_arm64", "darwin_arm64")
    assert executors.lock_platforms({}) == ("linux_amd64",)


@pytest.mark.parametrize("bad", [[], "linux_amd64", ["linux"], ["Linux_AMD64"], [3]])
def test_a_platform_that_is_not_os_arch_is_refused(bad: object) -> None:
    with pytest.raises(ToolingError, match=r"\[executors.lan\] platforms"):
        policy_from({"executors": {"lan": {"runs_on": ["x"], "platforms": bad}}})


@pytest.mark.parametrize(
    ("mirror", "tail"),
    [
        (None, ["-platform=linux_amd64", "-platform=linux_arm64"]),
        (
            "/srv/mirror",
            ["-platform=linux_amd64", "-platform=linux_arm64", "-fs-mirror=/srv/mirror"],
        ),
        (
            "https://mirror.example.com/providers/",
            [
                "-platform=linux_amd64",
                "-platform=linux_arm64",
                "-net-mirror=https://mirror.example.com/providers/",
            ],
        ),
    ],
)
def test_providers_lock_runs_through_terragrunt_run_with_one_platform_each(
    mirror: str | None, tail: list[str]
) -> None:
    args = terragrunt.providers_lock_args(["linux_amd64", "linux_arm64"], mirror)
    assert args[:2] == ["terragrunt", "run"]
    assert "--no-dependency-outputs" in args[: args.index("--")]
    assert args[args.index("--") :] == ["--", "providers", "lock", *tail]
    # the command people are told to run is the one the bump runs
    output_options = {
        "--non-interactive",
        "--no-color",
        "--log-level",
        "warn",
        "--log-format",
        "bare",
    }
    bare = terragrunt.providers_lock_args(["linux_amd64", "linux_arm64"])
    assert lock_command(["linux_amd64", "linux_arm64"]) == " ".join(
        a for a in bare if a not in output_options
    )


def test_only_the_lock_step_may_write_lock_files() -> None:
    env = terragrunt.base_env()
    assert env["TF_CLI_ARGS_init"] == "-lockfile=readonly"
    locking = terragrunt.lock_env(env)
    assert locking["TF_CLI_ARGS_init"] == "-backend=false"  # no readonly lock file, no state
    assert env["TF_CLI_ARGS_init"] == "-lockfile=readonly"  # the plans' environment is untouched
    assert {k: v for k, v in env.items() if k != "TF_CLI_ARGS_init"} == {
        k: v for k, v in locking.items() if k != "TF_CLI_ARGS_init"
    }
