"""Pipeline tooling for a two-tier Terragrunt/OpenTofu infrastructure repository.

Six floors, one way (import-linter enforces it; see ``pyproject.toml``)::

    tasks/      the command surface: one module per task family, one collection
    cli         what every task shares: its preamble, usage errors, one-line failures
    commands/   one module per command family: the entry points behind the tasks
    engine/     what the commands share, one room per domain: plan, apply, apps, ci,
                bump, and the rules enforced where Terragrunt and OpenTofu run (rules)
    io/ core/   the edges (``io.proc`` runs every subprocess; ``io.git``,
                ``io.terragrunt`` and ``io.forge`` wrap one program or API each) and
                the pure core, one room per domain: plan, apply, report, ci, rules,
                apps, bump, refs, text, doctor; neither imports the other
    model/      the repository as data: HCL reader, evaluator, units, the Policy

``errors`` (the one error type) is shared by every floor.
"""

from __future__ import annotations

__version__ = "0.1.0"
