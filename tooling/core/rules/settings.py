"""The ``[check]`` section of ``policy.toml``: :mod:`tooling.core.checksettings`, re-exported
for the rules of this package."""

from __future__ import annotations

from tooling.core.checksettings import DEFAULT_TOOL_PIN_FILES as DEFAULT_TOOL_PIN_FILES
from tooling.core.checksettings import CheckPolicy as CheckPolicy
from tooling.core.checksettings import Layer as Layer
from tooling.core.checksettings import parse_policy as parse_policy
