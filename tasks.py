"""invoke tasks of this repository: the collection of :mod:`tooling.tasks`, the same tasks
the ``iac`` console script runs in any repository that installs the package."""

from __future__ import annotations

from tooling.tasks import ns

__all__ = ["ns"]
