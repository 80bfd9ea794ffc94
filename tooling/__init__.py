"""Pipeline tooling for a two-tier Terragrunt/OpenTofu infrastructure repository.

The package is a pure core (change detection, gates, reports) with thin edges:
``proc`` runs every subprocess, and ``git``, ``terragrunt`` and ``forge`` wrap
one external program or API each.
"""

from __future__ import annotations

__version__ = "0.1.0"
