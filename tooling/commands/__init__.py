"""The entry points: one thin module per command family, each calling down into
:mod:`tooling.engine`, :mod:`tooling.io` and :mod:`tooling.core`; none imports another."""
