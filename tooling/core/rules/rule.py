"""What a rule is: its ids, where it runs, and its check over one :class:`Context`. Pure.

Every rule of the pipeline is a :class:`Rule` value, declared in the module of its
family and listed once in :data:`tooling.core.rules.registry.RULES`; ``invoke
check``, the plan's refusals before Terragrunt and the verifier where OpenTofu
runs are each one loop over that list for their :class:`Stage` (as pre-commit's
languages sit behind one interface). A check reads one typed :class:`Context`,
whatever the stage: the policy, the files, the model, the app workspaces, each
unit's configuration; the stage decides which parts are filled.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tooling.core.rules.parsed import ParseClosure
from tooling.core.rules.snapshot import AppWorkspace, Snapshot, Violation
from tooling.errors import ToolingError
from tooling.model.policy import CheckPolicy
from tooling.model.units import Model


class Stage(enum.Flag):
    """Where a rule runs (a rule may run at several: ``Stage.CHECK | Stage.AT_EXECUTION``)."""

    #: ``invoke check``: the repository's files read as text and as the model, no tool run
    CHECK = enum.auto()
    #: ``invoke plan``, ``drift`` and ``adopt``, before any Terragrunt process starts: the
    #: text of every file the units to plan read (:mod:`tooling.engine.rules.before_terragrunt`)
    BEFORE_TERRAGRUNT = enum.auto()
    #: at the point of execution: right before a unit's Terragrunt process, its static
    #: form against what the root file declares (:mod:`tooling.engine.rules.verify`); the guard
    #: then checks each OpenTofu command (``tooling/guard``: its checks are no registry
    #: rules, a rule's table entry names the one that backs it)
    AT_EXECUTION = enum.auto()


@dataclass(frozen=True)
class UnitFacts:
    """What the verifier knows of a unit besides its configuration."""

    path: str  # repository path, e.g. live/cloud/iam
    tier: str
    root_file: str = "root.hcl"
    #: the files the unit reads (repository path -> text), to name a line; may be empty
    sources: Mapping[str, str] | None = None

    @property
    def unit_file(self) -> str:
        return f"{self.path}/terragrunt.hcl"


@dataclass(frozen=True)
class UnitRender:
    """One unit's configuration, both sides: ``rendered`` (the unit's own, its includes
    merged) and ``declared`` (what the root file and the ``[check.allowed_generate]``
    files declare for it), in the shape ``terragrunt render --format json`` prints: the
    unit's static form (:func:`tooling.core.rules.static.static_units`), in ``invoke
    check`` and at the point of execution alike."""

    rendered: Mapping[str, Any]
    declared: Mapping[str, Any]
    facts: UnitFacts


def _no_files() -> Snapshot:
    return Snapshot.of({})


@dataclass(frozen=True)
class Context:
    """Everything a rule reads, one type for every rule and stage.

    - ``CHECK`` fills all of it (:func:`tooling.core.rules.registry.check_context`);
    - ``BEFORE_TERRAGRUNT``: ``snap``, ``closure`` and ``hcl_files``, the files Terragrunt
      will parse for the units in play;
    - ``AT_EXECUTION``: ``units``, the one unit about to run (its static form).

    A rule reads what it needs and finds the rest empty (no model: ``model`` is None).
    """

    #: policy.toml's ``[check]`` (its ``live`` is ``[layout]``'s live folders)
    policy: CheckPolicy = field(default_factory=CheckPolicy)
    #: the root file's name (``[layout] root_file``)
    root_file: str = "root.hcl"
    #: the files as the rules read them (repository-relative), HCL parsed once
    snap: Snapshot = field(default_factory=_no_files)
    #: the repository's units (None: not read at this stage, or it could not be read)
    model: Model | None = None
    #: why the model could not be read, when it could not
    model_error: ToolingError | None = None
    #: the app workspaces (``[check] app_dirs`` and ``--apps``)
    apps: tuple[AppWorkspace, ...] = ()
    #: the Terragrunt files the text rules read, in the order they are read
    hcl_files: tuple[str, ...] = ()
    #: each unit's configuration, both sides
    units: tuple[UnitRender, ...] = ()
    #: what Terragrunt parses for the units in play (``CHECK``: every unit), and what of
    #: it leaves the repository (:func:`tooling.core.rules.parsed.parse_closure`)
    closure: ParseClosure | None = None


#: a rule's check: the context in, its violations out (any order; the caller sorts)
Check = Callable[[Context], Iterable[Violation]]
#: a rule judged on one unit's configuration (both sides) under the policy
Judge = Callable[[UnitRender, CheckPolicy], list[Violation]]


def each_unit(judge: Judge) -> Check:
    """The check of a rule judged unit by unit: ``judge`` on every unit of the context
    (where OpenTofu runs, the unit about to run; in ``invoke check``, every unit's
    static form)."""

    def check(ctx: Context) -> list[Violation]:
        return [v for unit in ctx.units for v in judge(unit, ctx.policy)]

    check.__doc__ = judge.__doc__
    return check


@dataclass(frozen=True)
class Rule:
    """One rule (or one family of rules read in one pass): what it is called, what it
    reports, where it runs and how it checks."""

    #: unique in the registry
    name: str
    #: the rule ids its violations carry (docs/rules.md has a section for each)
    ids: tuple[str, ...]
    #: what it checks, in a few words (the docs' table)
    summary: str
    stages: Stage
    check: Check
    #: its violations in the file of a unit the model could not read are kept: it reads
    #: the text alone, as the plan refuses before Terragrunt (another rule's are dropped
    #: there: that unit's own ``config-invalid`` or ``hcl-syntax`` says why)
    keeps_unreadable: bool = False
    #: the docs' table: what to say for a stage instead of "yes"
    notes: Mapping[Stage, str] = field(default_factory=dict)
    #: the docs' table: where else it is enforced, outside the registry's loops
    also: str = ""
