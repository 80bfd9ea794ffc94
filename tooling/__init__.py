"""Pipeline tooling for a two-tier Terragrunt/OpenTofu infrastructure repository.

Four layers, one way (import-linter enforces it; see ``pyproject.toml``)::

    commands/   one module per command family: the flows behind the invoke tasks
       |
       +--> io/      the edges: ``io.proc`` runs every subprocess; ``io.git``,
       |             ``io.terragrunt`` and ``io.forge`` wrap one program or API each
       +--> core/    pure decisions over plain data: changes, gates, report, bumps, rules
                 |
                 +--> model/   the repository as data: HCL reader, evaluator, units

``errors`` (the one error type) is shared by every layer.
"""

from __future__ import annotations

__version__ = "0.1.0"
