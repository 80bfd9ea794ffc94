"""A plan run as values: what to plan (:class:`PlanRequest`), what it runs with
(:class:`PlanContext`) and what came of it (:class:`PlanOutcome`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from tooling.io.config import Settings
from tooling.model.policy import Policy
from tooling.model.units import Model

if TYPE_CHECKING:
    from tooling.core.ci.legs import Leg
    from tooling.core.plan.affected import Affected
    from tooling.core.plan.results import Result
    from tooling.core.plan.summary import Summary
    from tooling.engine.plan.reviewed import ReviewedPlans
    from tooling.io.workspace import Workspace


class Mode(StrEnum):
    """Which plan: the command that asks for it."""

    #: ``invoke plan``: the units a change affects (or the named ones, or all), gated
    PLAN = "plan"
    #: ``invoke drift``: every unit (of an executor) against reality, without the lock;
    #: no plan is kept
    DRIFT = "drift"
    #: ``invoke app-plan``: an application's folder of plain OpenTofu
    APP_PLAN = "app-plan"


@dataclass(frozen=True)
class PlanRequest:
    """What one plan run plans, as its command's options say."""

    mode: Mode
    #: the report folder (absolute), which the command has claimed
    out: Path
    #: the change's base revision (``--base``; None: the default branch, or the pull
    #: request's base in Actions)
    base: str | None = None
    #: the units named (``--unit``), in the order given
    units: tuple[str, ...] = ()
    #: every unit (``--all``)
    all_units: bool = False
    #: only this executor's units
    executor: str | None = None
    #: plans at a time (None: one per CPU)
    jobs: int | None = None
    #: one leg of a split matrix: its units of the affected ones; summary.json records it
    leg: Leg | None = None
    #: the pull request's plan folder, read before the report folder was claimed: each
    #: plan is compared with it (:mod:`tooling.engine.plan.reviewed`)
    reviewed: ReviewedPlans | None = None
    #: the application (``app-plan``): its name and folder
    app: str = ""
    app_dir: Path | None = None

    @property
    def parallel(self) -> int:
        """How many plans run at a time."""
        return self.jobs or os.cpu_count() or 2


@dataclass(frozen=True)
class UnitsContext:
    """The repository's units, for a plan of them (an app's folder has none)."""

    #: the working tree's model
    model: Model
    #: the project root below git's top level ("" at the top)
    git_prefix: str
    #: the settings as they apply to this repository (what summary.json records)
    run_settings: Settings
    #: the model of a git revision, each read once per run
    model_at: Callable[[str], Model]
    #: the environment of Terragrunt and OpenTofu, with the module repositories of the
    #: sources given mapped as well (a deleted unit's destroy plan fetches a module the
    #: working tree may no longer pin)
    environment: Callable[[Iterable[str]], dict[str, str]]
    #: where Terragrunt runs for a unit (a stack's generated unit: in its scratch copy)
    run_dir: Callable[[str], Path]


@dataclass(frozen=True)
class PlanContext:
    """The repository a plan runs in, as values read once by the command (:meth:`of`)."""

    root: Path
    #: the settings as the environment gives them (state, module sources, caches)
    settings: Settings
    #: policy.toml, read and checked once by the task's preamble
    policy: Policy
    #: its units (None for an app's plan, which reads none)
    units: UnitsContext | None = None

    @classmethod
    def of(cls, ws: Workspace, mode: Mode) -> PlanContext:
        """The context of ``ws`` for a ``mode`` run: an app's plan reads no unit, so its
        context holds neither the model nor anything derived from it."""
        if mode is Mode.APP_PLAN:
            return cls(ws.root, ws.settings, ws.policy)
        ws.check_tools()  # checked by the task's preamble already: the workspace checks once
        units = UnitsContext(
            model=ws.current_model,
            git_prefix=ws.git_prefix,
            run_settings=ws.run_settings,
            model_at=lambda rev: ws.model(ws.tree_at(rev)),
            environment=ws.env_for,
            run_dir=ws.run_dir,
        )
        return cls(ws.root, ws.settings, ws.policy, units)

    def of_units(self) -> UnitsContext:
        """:attr:`units`, which a plan of units needs (a context without them is a bug)."""
        if self.units is None:
            raise TypeError("a plan of units needs a context with its units (PlanContext.of)")
        return self.units


@dataclass(frozen=True)
class PlanOutcome:
    """What a plan run came to: what the command shows and its exit code follows."""

    #: per unit, in plan order (an app's plan: one)
    results: tuple[Result, ...]
    #: Ctrl-C or SIGTERM stopped the plans: the report is incomplete
    interrupted: bool
    #: the commit planned (an app's: its repository's, None when its folder is in none)
    head: str | None
    #: summary.json as written (None for drift, which keeps no plan)
    summary: Summary | None = None
    #: what the change affects (None when units were named, or all planned)
    change: Affected | None = None
    #: how many uncommitted changes of the working tree were planned
    uncommitted: int = 0
