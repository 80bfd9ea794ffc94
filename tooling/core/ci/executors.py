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
  limit; ``invoke matrix --max-legs N`` overrides it, :mod:`tooling.core.ci.split`);
- ``platforms``: optional, the ``OS_ARCH`` platforms its runners are
  (default ``["linux_amd64"]``). The lock files record provider checksums for
  every platform of every executor (:func:`lock_platforms`), so each installs
  exactly the providers that were reviewed.

Declaration order is the matrix order: the cloud tier, which the cluster tier
reads, is declared (and applied) first. The tables are read and checked with the
rest of policy.toml (:func:`tooling.model.policy.policy_from`): ``policy.executors``,
each an :class:`~tooling.model.policy.Executor`.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tooling.errors import ToolingError
from tooling.model.policy import DEFAULT_PLATFORMS, POLICY_FILE, Executor
from tooling.model.units import UNRESOLVED_EXECUTOR


def matches(value: str, patterns: Sequence[str]) -> bool:
    """Whether ``value`` matches one of the fnmatch ``patterns`` (case-sensitive)."""
    return any(fnmatch.fnmatchcase(value, p) for p in patterns)


def lock_platforms(executors: Mapping[str, Executor]) -> tuple[str, ...]:
    """The platforms a lock file must cover: every executor's, in declaration order.

    No executor declared: the default platform (``linux_amd64``).
    """
    found = [p for executor in executors.values() for p in executor.platforms]
    return tuple(dict.fromkeys(found)) or DEFAULT_PLATFORMS


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
