"""The executors, declared once in ``policy.toml``, and the CI matrix. Pure.

An executor is where a unit's plans and applies run: ``hosted`` (a GitHub-hosted
runner with federated identity) or ``lan`` (the self-hosted runner inside the
home network). Each is declared in ``policy.toml`` under ``[executors.NAME]``:

- ``runs_on``: the runner labels of its jobs (the workflows' ``runs-on``);
- ``aws_role_arn_pattern``: optional, the identity its jobs must hold: one
  fnmatch pattern or a list, matched against the ARN that STS
  ``GetCallerIdentity`` returns (e.g. ``arn:aws:sts::*:assumed-role/github-infra-plan/*``);
- ``gcp_service_account_pattern`` / ``gcp_audience_pattern``: optional, the
  same for Google Cloud: matched against the service account that the
  application default credentials impersonate, and against the audience (the
  workload identity pool provider) of external account credentials;
- ``max_legs``: optional, how many legs (runners) of the CI matrix its plans
  and applies may be split over (default 1; at most 256, GitHub's matrix
  limit; ``invoke matrix --max-legs N`` overrides it, :mod:`tooling.core.shards`);
- ``platforms``: optional, the ``OS_ARCH`` platforms its runners are
  (default ``["linux_amd64"]``). The lock files record provider checksums for
  every platform of every executor (:func:`lock_platforms`), so each installs
  exactly the providers that were reviewed.

Declaration order is the matrix order: the cloud tier, which the cluster tier
reads, is declared (and applied) first.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tooling.errors import ToolingError
from tooling.model.policydata import interpreted
from tooling.model.policyfile import POLICY_FILE, refuse_unknown_keys
from tooling.model.units import UNRESOLVED_EXECUTOR

_KEYS = frozenset(
    {
        "runs_on",
        "aws_role_arn_pattern",
        "gcp_service_account_pattern",
        "gcp_audience_pattern",
        "platforms",
        "max_legs",
    }
)
#: GitHub Actions: "A matrix will generate a maximum of 256 jobs per workflow run" (the
#: legs of one executor, :mod:`tooling.core.shards`)
MAX_LEGS = 256
#: the platform of an executor that does not name its own: GitHub's hosted Linux runners
DEFAULT_PLATFORMS = ("linux_amd64",)
_PLATFORM = re.compile(r"[a-z0-9]+_[a-z0-9]+")


@dataclass(frozen=True)
class Executor:
    """One ``[executors.NAME]`` of policy.toml: where its units run."""

    name: str
    runs_on: tuple[str, ...]
    aws_role_arn_patterns: tuple[str, ...] = ()
    gcp_service_account_patterns: tuple[str, ...] = ()
    gcp_audience_patterns: tuple[str, ...] = ()
    #: the OS_ARCH platforms its runners are (the lock files carry checksums for each)
    platforms: tuple[str, ...] = DEFAULT_PLATFORMS
    #: how many legs of the CI matrix its units may be split over
    max_legs: int = 1

    @property
    def checks_identity(self) -> bool:
        return bool(
            self.aws_role_arn_patterns
            or self.gcp_service_account_patterns
            or self.gcp_audience_patterns
        )


def matches(value: str, patterns: Sequence[str]) -> bool:
    """Whether ``value`` matches one of the fnmatch ``patterns`` (case-sensitive)."""
    return any(fnmatch.fnmatchcase(value, p) for p in patterns)


def _patterns(name: str, key: str, raw: Any) -> tuple[str, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw or not all(isinstance(p, str) and p for p in raw):
        raise ToolingError(
            f"{POLICY_FILE}: [executors.{name}] {key} must be a pattern or a list of patterns"
        )
    return tuple(raw)


def _platforms(name: str, raw: Any) -> tuple[str, ...]:
    if raw is None:
        return DEFAULT_PLATFORMS
    if (
        not isinstance(raw, list)
        or not raw
        or not all(isinstance(p, str) and _PLATFORM.fullmatch(p) for p in raw)
    ):
        raise ToolingError(
            f"{POLICY_FILE}: [executors.{name}] platforms must be a non-empty list of OS_ARCH "
            f'names as OpenTofu writes them (e.g. ["linux_amd64", "linux_arm64"]), got {raw!r}'
        )
    return tuple(dict.fromkeys(raw))


def _max_legs(name: str, raw: Any) -> int:
    if raw is None:
        return 1
    if isinstance(raw, bool) or not isinstance(raw, int) or not 1 <= raw <= MAX_LEGS:
        raise ToolingError(
            f"{POLICY_FILE}: [executors.{name}] max_legs must be a whole number from 1 to "
            f"{MAX_LEGS} (GitHub starts at most {MAX_LEGS} jobs from one matrix), got {raw!r}"
        )
    return raw


def lock_platforms(executors: Mapping[str, Executor]) -> tuple[str, ...]:
    """The platforms a lock file must cover: every executor's, in declaration order.

    No executor declared: the default platform (``linux_amd64``).
    """
    found = [p for executor in executors.values() for p in executor.platforms]
    return tuple(dict.fromkeys(found)) or DEFAULT_PLATFORMS


@interpreted
def parse(data: Mapping[str, Any]) -> dict[str, Executor]:
    """The ``[executors.*]`` tables of a parsed policy.toml, in declaration order."""
    section = data.get("executors", {})
    if not isinstance(section, dict):
        raise ToolingError(f"{POLICY_FILE}: [executors] must be a table of [executors.NAME] tables")
    out: dict[str, Executor] = {}
    for name, table in section.items():
        if not isinstance(table, dict):
            raise ToolingError(f"{POLICY_FILE}: [executors.{name}] must be a table")
        refuse_unknown_keys(table, _KEYS, f"[executors.{name}]")
        runs_on = table.get("runs_on")
        if (
            not isinstance(runs_on, list)
            or not runs_on
            or not all(isinstance(x, str) and x for x in runs_on)
        ):
            raise ToolingError(
                f"{POLICY_FILE}: [executors.{name}] needs runs_on, a non-empty list of runner labels "
                f'(e.g. ["ubuntu-latest"] or ["self-hosted", "lan"])'
            )
        out[name] = Executor(
            name=name,
            runs_on=tuple(runs_on),
            aws_role_arn_patterns=_patterns(
                name, "aws_role_arn_pattern", table.get("aws_role_arn_pattern")
            ),
            gcp_service_account_patterns=_patterns(
                name, "gcp_service_account_pattern", table.get("gcp_service_account_pattern")
            ),
            gcp_audience_patterns=_patterns(
                name, "gcp_audience_pattern", table.get("gcp_audience_pattern")
            ),
            platforms=_platforms(name, table.get("platforms")),
            max_legs=_max_legs(name, table.get("max_legs")),
        )
    return out


def get(executors: Mapping[str, Executor], name: str, *, what: str) -> Executor:
    """The executor called ``name``; an error naming ``what`` refers to it otherwise."""
    found = executors.get(name)
    if found is None and name == UNRESOLVED_EXECUTOR:
        raise ToolingError(
            f"{what}: the model cannot evaluate it, so no executor runs it (fail closed). "
            "Fix the unit: `invoke check` names the file and line"
        )
    if found is None:
        declared = ", ".join(executors) or "none"
        raise ToolingError(
            f"{what} names executor {name!r}, which {POLICY_FILE} does not declare "
            f"(declared: {declared}). Add an [executors.{name}] table with its runs_on labels, or fix the name."
        )
    return found


def matrix(units: Iterable[tuple[str, str]], executors: Mapping[str, Executor]) -> dict[str, Any]:
    """The CI matrix for ``units`` (``(path, executor)`` pairs, in plan order).

    One entry per executor that has units, in declaration order; executors
    without units are left out, so ``{"include": []}`` means nothing to plan.
    """
    by_executor: dict[str, list[str]] = {}
    for path, name in units:
        get(executors, name, what=f"unit {path}")
        paths = by_executor.setdefault(name, [])
        if path not in paths:
            paths.append(path)
    include = [
        {"executor": name, "runs_on": list(executor.runs_on), "units": by_executor[name]}
        for name, executor in executors.items()
        if name in by_executor
    ]
    return {"include": include}
