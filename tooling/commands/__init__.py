"""One module per command family: the flows behind the invoke tasks."""

from tooling.engine import secrets as _secrets  # noqa: F401  (installs the one redaction step)
