"""Bad input fails early and clearly: the pure parts as tables, then each finding end to end
(a broken unit, an unusable state backend, a destroy that cannot be planned, odd unit names)."""

from __future__ import annotations

import tomllib

import pytest

from tooling.commands import pipeline, preflight
from tooling.core import names
from tooling.core.targets import check_options, unit_arg
from tooling.errors import ToolingError, UsageError
from tooling.io import config
from tooling.model.hcl import HclSyntaxError, parse

# --------------------------------------------------------------------------- tables


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        ("live/cloud/dns", "live/cloud/dns"),
        ("./live/cloud/dns/", "live/cloud/dns"),  # what tab completion writes
        ("live//cloud/./dns", "live/cloud/dns"),
    ],
)
def test_unit_arguments_accept_tab_completed_paths(raw: str, path: str) -> None:
    assert unit_arg(raw) == path


@pytest.mark.parametrize("raw", ["", "/", "./", "/live/cloud/dns", "../live/dns", "live/../x"])
def test_unit_arguments_outside_the_repository_are_usage_errors(raw: str) -> None:
    with pytest.raises(UsageError) as err:
        unit_arg(raw)
    assert err.value.code == 2 and "--unit" in str(err.value)


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"all_units": True, "units": ["live/a"], "executor": None}, "--all and --unit"),
        ({"all_units": False, "units": [], "executor": "nope"}, "--executor nope"),
    ],
)
def test_plan_options_that_cannot_mean_what_they_say_are_usage_errors(
    options: dict[str, object], fragment: str
) -> None:
    with pytest.raises(UsageError, match=fragment):
        check_options(**options, executors={"hosted", "lan"})  # type: ignore[arg-type]


def test_plan_options_that_make_sense_pass() -> None:
    check_options(all_units=True, units=[], executor="lan", executors={"hosted", "lan"})
    check_options(all_units=False, units=["live/a"], executor=None, executors=set())


@pytest.mark.parametrize(("text", "jobs"), [("", None), ("1", 1), ("8", 8)])
def test_jobs_is_a_whole_number_of_one_or_more(text: str, jobs: int | None) -> None:
    assert pipeline.parse_jobs(text) == jobs


@pytest.mark.parametrize("text", ["0", "-1", "abc", "1.5", " "])
def test_jobs_otherwise_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError, match="--jobs"):
        pipeline.parse_jobs(text)


@pytest.mark.parametrize(
    ("paths", "bad"),
    [
        (["live/cloud/dns", "live/cluster/vms-2"], {}),
        (["live/cloud/dns x"], {"live/cloud/dns x": "does not match"}),
        (["live/cloud/$(touch x)"], {"live/cloud/$(touch x)": "does not match"}),
        (["live/cloud/dnś"], {"live/cloud/dnś": "non-ASCII"}),
        (["live/cloud/-dns"], {"live/cloud/-dns": "does not match"}),
        (["live/cloud/Dns"], {"live/cloud/Dns": "does not match"}),
        (["live/Cloud/dns"], {"live/Cloud/dns": "does not match"}),
        (
            ["live/cloud/DNS", "live/cloud/dns"],
            {"live/cloud/DNS": "does not match", "live/cloud/dns": "differs only by case"},
        ),
        (
            ["live/Cloud/a", "live/cloud/b"],
            {"live/Cloud/a": "does not match", "live/cloud/b": "differs only by case"},
        ),
    ],
)
def test_unit_folder_names_are_lowercase_segments_without_case_twins(
    paths: list[str], bad: dict[str, str]
) -> None:
    found = {b.path: b.why for b in names.bad_unit_names(paths)}
    assert set(found) == set(bad)
    for path, why in bad.items():
        assert why in found[path]


def test_case_twins_are_caught_with_a_pattern_that_allows_capitals() -> None:
    found = names.bad_unit_names(["live/a/DNS", "live/a/dns"], pattern="[A-Za-z]+")
    assert [b.path for b in found] == ["live/a/DNS", "live/a/dns"]


def test_the_name_pattern_is_a_policy_setting_and_a_bad_one_is_named() -> None:
    assert names.pattern_from({}) == names.DEFAULT_PATTERN
    assert names.pattern_from({"check": {"unit_name_pattern": "[a-z_]+"}}) == "[a-z_]+"
    with pytest.raises(ToolingError, match="unit_name_pattern"):
        names.pattern_from({"check": {"unit_name_pattern": "[a-"}})


def test_an_hcl_file_ending_in_an_open_block_names_file_line_and_column() -> None:
    with pytest.raises(HclSyntaxError) as err:
        parse(b'inputs = {}\nlocals {\n', "live/a/terragrunt.hcl")
    assert str(err.value).startswith("live/a/terragrunt.hcl:3:1: HCL syntax error")


def test_a_toml_error_names_file_line_and_column() -> None:
    with pytest.raises(tomllib.TOMLDecodeError) as err:
        tomllib.loads("[gates]\nx = 1\n[gates\n")
    assert config.toml_error("policy.toml", err.value).startswith("policy.toml:3:7: ")


@pytest.mark.parametrize(
    ("kind", "code", "fragment"),
    [
        ("credentials", "", "no AWS credentials"),
        ("unreachable", "", "cannot reach"),
        ("client", "404", "does not exist"),
        ("client", "NoSuchBucket", "does not exist"),
        ("client", "InvalidAccessKeyId", "refused these AWS credentials"),
        ("client", "403", "refused these AWS credentials"),
        ("client", "PermanentRedirect", "IAC_STATE_REGION"),
    ],
)
def test_each_state_backend_problem_says_what_to_do(kind: str, code: str, fragment: str) -> None:
    message = preflight.backend_problem("b", "http://127.0.0.1:1", kind=kind, code=code, detail="d")
    assert fragment in message and "s3://b" in message
