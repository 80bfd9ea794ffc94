"""The tools are pinned once: in ``.tool-versions``, exact, and in no other file
at another version. Pure.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re

from tooling.core.rules.rule import Context, Rule, Stage
from tooling.core.rules.snapshot import Violation
from tooling.model.tools import TOOL_VERSIONS_FILE, read_tool_versions

_TOOL_ALIASES = {
    "tofu": "opentofu",
    "opentofu": "opentofu",
    "open_tofu": "opentofu",
    "terragrunt": "terragrunt",
    "tg": "terragrunt",
    "actionlint": "actionlint",
}
_V = r"v?(?P<version>\d+\.\d+(?:\.\d+)?(?:-[0-9A-Za-z.]+)?)"
_PIN_PATTERNS = (
    # tofu_version: 1.6.0, TERRAGRUNT_VERSION=0.55.0, terragrunt-version: "0.55", OPENTOFU_VERSION ?= 1.6
    re.compile(
        r"(?<![A-Za-z0-9])(?P<tool>open[_-]?tofu|tofu|terragrunt|tg|actionlint)[_-]?version[\"']?\s*(?::|\?=|:=|=)\s*[\"']?"
        + _V,
        re.I,
    ),
    # opentofu = "1.6.0" (mise), opentofu 1.6.0 (asdf-like)
    re.compile(
        r"^\s*(?P<tool>opentofu|terragrunt|actionlint)\s*(?:=\s*)?[\"']?" + _V + r"[\"']?\s*$",
        re.I | re.M,
    ),
    # release downloads and go modules: opentofu/opentofu/releases/download/v1.6.0, github.com/gruntwork-io/terragrunt@v0.55.0
    re.compile(
        r"(?:opentofu|gruntwork-io|rhysd)/(?P<tool>opentofu|terragrunt|actionlint)(?:/releases/download/|@|/cmd/\w+@|:)"
        + _V,
        re.I,
    ),
    re.compile(r"(?P<tool>tofu)_" + _V + r"_", re.I),
)


def _tool_name(raw: str) -> str:
    key = raw.lower().replace("-", "_")
    return _TOOL_ALIASES.get(key, _TOOL_ALIASES.get(key.replace("_", ""), key))


def check_tool_versions(ctx: Context) -> list[Violation]:
    """The tools are pinned in .tool-versions only; no other file pins a different version."""
    policy, snap = ctx.policy, ctx.snap
    out: list[Violation] = []
    if TOOL_VERSIONS_FILE not in snap.paths:
        return [
            Violation(
                TOOL_VERSIONS_FILE,
                1,
                "tool-version-pin",
                ".tool-versions is missing",
                "pin 'opentofu X.Y.Z' and 'terragrunt X.Y.Z' in .tool-versions at the repository root",
            )
        ]
    # the installer's reader: a line `invoke setup` refuses is a violation here too
    read = read_tool_versions(snap.text(TOOL_VERSIONS_FILE))
    pins = {name: (pin.version, pin.line) for name, pin in read.pins.items()}
    out += [
        Violation(
            TOOL_VERSIONS_FILE, problem.line, "tool-version-pin", problem.message, problem.fix
        )
        for problem in read.problems
    ]
    for tool in ("opentofu", "terragrunt"):
        if tool not in pins:
            out.append(
                Violation(
                    TOOL_VERSIONS_FILE,
                    1,
                    "tool-version-pin",
                    f"{tool} is not pinned",
                    f"add a line '{tool} X.Y.Z' to .tool-versions",
                )
            )
        elif not read.pins[tool].exact:
            out.append(
                Violation(
                    TOOL_VERSIONS_FILE,
                    pins[tool][1],
                    "tool-version-pin",
                    f"{tool} {pins[tool][0]!r} is not an exact version",
                    f"pin an exact release: '{tool} 1.2.3' (no 'v', no 'latest', no range)",
                )
            )
    candidates = [
        p
        for p in snap.paths
        if p != TOOL_VERSIONS_FILE and any(fnmatch.fnmatchcase(p, g) for g in policy.tool_pin_files)
    ]
    for path in candidates:
        text = snap.text(path)
        name = posixpath.basename(path)
        if name in (".opentofu-version", ".terragrunt-version"):
            tool = "opentofu" if "opentofu" in name else "terragrunt"
            version = text.strip().lstrip("v")
            if version and tool in pins and version != pins[tool][0]:
                out.append(_second_pin(path, 1, tool, version, pins[tool][0]))
            continue
        reported: set[tuple[int, str]] = set()
        for pattern in _PIN_PATTERNS:
            for match in pattern.finditer(text):
                tool = _tool_name(match.group("tool"))
                version = match.group("version")
                line = text.count("\n", 0, match.start("version")) + 1
                if tool not in pins or version == pins[tool][0] or (line, tool) in reported:
                    continue
                reported.add((line, tool))
                out.append(_second_pin(path, line, tool, version, pins[tool][0]))
    return out


def _second_pin(path: str, line: int, tool: str, version: str, pinned: str) -> Violation:
    return Violation(
        path,
        line,
        "tool-version-pin",
        f"pins {tool} {version}, but .tool-versions pins {pinned}: two executors would run different tools",
        f"remove this pin and install from .tool-versions (`invoke setup`), or change .tool-versions (the one pin) to {version}",
    )


TOOL_VERSIONS = Rule(
    name="tool-versions",
    ids=("tool-version-pin",),
    summary="OpenTofu, Terragrunt and actionlint are pinned once, exactly",
    stages=Stage.CHECK,
    check=check_tool_versions,
)
