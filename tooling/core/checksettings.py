"""The ``[check]`` section of ``policy.toml``, as a typed :class:`CheckPolicy`. Pure.

The layers of the foundation (folder, executor, which layers each may depend
on), the state prefixes and buckets, the allowed module sources and the files
that may hide a second tool pin. :func:`parse_policy` takes the parsed TOML and
refuses unknown keys and malformed values with a message naming the key.

Outside :mod:`tooling.core.rules` so that checking policy.toml before every task
(:mod:`tooling.core.policydoc`) does not import every rule with it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tooling.core.names import DEFAULT_PATTERN, SETTING, pattern_from
from tooling.core.redact import EnvRule
from tooling.core.redact import parse_policy as secret_names
from tooling.errors import ToolingError
from tooling.model.layout import layout_from
from tooling.model.policydata import interpreted
from tooling.model.policyfile import POLICY_FILE, refuse_unknown_keys


@dataclass(frozen=True)
class Layer:
    """A layer of the foundation: a folder of units, its executor, what it may depend on."""

    name: str
    path: str  # repository folder, e.g. live/cloud
    executor: str
    may_depend_on: tuple[str, ...]


#: where other pins of the tools hide (fnmatch, ``*`` crosses ``/``); policy can replace the list
DEFAULT_TOOL_PIN_FILES = (
    ".github/*.yml",
    ".github/*.yaml",
    ".pre-commit-config.yaml",
    "Dockerfile*",
    "Containerfile*",
    "*.dockerfile",
    ".devcontainer/*",
    "docker/*",
    ".ci/*",
    "Makefile",
    ".mise.toml",
    "mise.toml",
    ".opentofu-version",
    ".terragrunt-version",
)


@dataclass(frozen=True)
class CheckPolicy:
    """The ``[check]`` section of ``policy.toml``."""

    #: the prefixes foundation state keys start with ([check] foundation_state_prefix, one
    #: or a list); empty: each live folder's own (``live/`` for ``live``), as root.hcl's
    #: ``path_relative_to_include()`` keys them
    foundation_prefixes: tuple[str, ...] = ()
    app_state_prefix: str = "apps/"
    foundation_state_buckets: tuple[str, ...] = ()
    app_dirs: tuple[str, ...] = ()
    allowed_module_sources: tuple[str, ...] = ()
    layers: tuple[Layer, ...] = ()
    executors: tuple[str, ...] = ()  # declared [executors.*] names; empty: not declared
    tool_pin_files: tuple[str, ...] = DEFAULT_TOOL_PIN_FILES
    #: what each folder below the live folder may be called (a regular expression)
    unit_name_pattern: str = DEFAULT_PATTERN
    #: files (fnmatch) allowed to hold run_cmd() or hooks, with the reason
    allowed_run_at_parse: Mapping[str, str] = field(default_factory=dict)
    #: per tier, the roles (fnmatch) a unit may have Terragrunt assume (iam_role), with the reason
    allowed_roles: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    #: units (fnmatch on the path) allowed an ``errors`` block (retry, ignore), with the reason
    allowed_errors: Mapping[str, str] = field(default_factory=dict)
    #: files besides the root file whose ``generate`` blocks count as declared, with the reason
    allowed_generate: Mapping[str, str] = field(default_factory=dict)

    #: the live folders of policy.toml [layout] (where units, and no OpenTofu code, live)
    live: tuple[str, ...] = ("live",)
    #: live roots with a state prefix of their own ([layout.roots]): (folder, prefix)
    root_prefixes: tuple[tuple[str, str], ...] = ()
    #: which environment variables hold secrets, by name (policy.toml ``[secrets]``)
    secrets: EnvRule = field(default_factory=EnvRule)

    @property
    def foundation_prefix(self) -> tuple[str, ...]:
        """Where foundation state keys start: the declared prefixes, else each live
        folder's (a live folder "." keys state by the unit's path alone: none)."""
        if self.foundation_prefixes:
            return self.foundation_prefixes
        return tuple(f"{folder}/" for folder in self.live if folder != ".")

    def state_prefix_of(self, path: str) -> tuple[str, ...]:
        """The prefixes one of which the state key of the unit at ``path`` must start
        with: its live root's ``state_prefix`` ([layout.roots]), else
        ``foundation_state_prefix``, else its live folder's (() when any key will do)."""
        best: tuple[str, str] | None = None
        for folder, prefix in self.root_prefixes:
            inside = folder == "." or path == folder or path.startswith(folder + "/")
            if inside and (best is None or len(folder) > len(best[0])):
                best = (folder, prefix)
        if best:
            return (best[1],)
        if self.foundation_prefixes:
            return self.foundation_prefixes
        live = [f for f in self.live if f == "." or path == f or path.startswith(f + "/")]
        folder = max(live, key=len, default=".")
        return () if folder == "." else (f"{folder}/",)

    def layer_of(self, path: str) -> Layer | None:
        """The layer whose folder holds ``path`` (the longest match)."""
        best: Layer | None = None
        for layer in self.layers:
            inside = path == layer.path or path.startswith(layer.path.rstrip("/") + "/")
            if inside and (best is None or len(layer.path) > len(best.path)):
                best = layer
        return best

    def layer_named(self, name: str) -> Layer | None:
        return next((layer for layer in self.layers if layer.name == name), None)


def _strings(
    data: Mapping[str, Any], key: str, where: str, default: Sequence[str] = ()
) -> tuple[str, ...]:
    raw = data.get(key, list(default))
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(x, str) and x for x in raw):
        raise ToolingError(f"{POLICY_FILE}: {where} {key} must be a list of non-empty strings")
    return tuple(raw)


def _prefixes(data: Mapping[str, Any], key: str) -> tuple[str, ...]:
    """A prefix or a list of them (``["non-prod/", "prod/"]``); () when not set."""
    value = data.get(key, [])
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not all(isinstance(v, str) and v.strip("/") for v in values):
        raise ToolingError(
            f'{POLICY_FILE}: [check] {key} must be a folder prefix or a list of them, e.g. "live/" '
            'or ["non-prod/", "prod/"]'
        )
    return tuple(v.strip("/") + "/" for v in values)


def _prefix(data: Mapping[str, Any], key: str, default: str) -> str:
    value = data.get(key, default)
    if not isinstance(value, str) or not value.strip("/"):
        raise ToolingError(
            f"{POLICY_FILE}: [check] {key} must be a folder prefix such as {default!r}"
        )
    return value.strip("/") + "/"


_CHECK_KEYS = frozenset(
    {
        "foundation_state_prefix",
        "app_state_prefix",
        "foundation_state_buckets",
        "app_dirs",
        "allowed_module_sources",
        "layers",
        "tool_pin_files",
        SETTING,
        "allowed_run_at_parse",
        "allowed_roles",
        "allowed_errors",
        "allowed_generate",
    }
)


@interpreted
def parse_policy(data: Mapping[str, Any]) -> CheckPolicy:
    """The check policy from a parsed ``policy.toml`` (missing keys take the defaults)."""
    section = data.get("check", {})
    if not isinstance(section, dict):
        raise ToolingError(f"{POLICY_FILE}: [check] must be a table")
    refuse_unknown_keys(section, _CHECK_KEYS, "[check]")
    layers: list[Layer] = []
    raw_layers = section.get("layers", {})
    if not isinstance(raw_layers, dict):
        raise ToolingError(
            f"{POLICY_FILE}: [check.layers] must be a table of [check.layers.NAME] tables"
        )
    for name, table in raw_layers.items():
        where = f"[check.layers.{name}]"
        if not isinstance(table, dict):
            raise ToolingError(f"{POLICY_FILE}: {where} must be a table")
        path, executor = table.get("path"), table.get("executor")
        if not isinstance(path, str) or not path.strip("/"):
            raise ToolingError(
                f'{POLICY_FILE}: {where} needs path, the layer\'s folder (e.g. "live/{name}")'
            )
        if not isinstance(executor, str) or not executor:
            raise ToolingError(
                f'{POLICY_FILE}: {where} needs executor, where its units run (e.g. "hosted")'
            )
        may = _strings(table, "may_depend_on", where, default=[name])
        layers.append(Layer(name, path.strip("/"), executor, may))
    layout = layout_from(data)
    declared_paths = {layer.path for layer in layers}
    for root in layout.roots:
        # a live root that names its executor is a layer, named after its folder
        if root.executor is not None and root.path not in declared_paths:
            layers.append(
                Layer(root.path, root.path, root.executor, root.may_depend_on or (root.path,))
            )
    names = {layer.name for layer in layers}
    for layer in layers:
        for other in layer.may_depend_on:
            if other not in names:
                table = (
                    f'[layout.roots."{layer.name}"]'
                    if layout.root_of(layer.path) and layer.name == layer.path
                    else f"[check.layers.{layer.name}]"
                )
                raise ToolingError(
                    f"{POLICY_FILE}: {table} may_depend_on names {other!r}, "
                    f"which is not a layer (declared: {', '.join(sorted(names))})"
                )
    executors = data.get("executors", {})
    apps = data.get("apps", {})
    # the app tier ([apps], tooling/core/apps.py) lists foundation buckets too: one list for both
    app_buckets = (
        _strings(apps, "foundation_state_buckets", "[apps]") if isinstance(apps, dict) else ()
    )
    buckets = _strings(section, "foundation_state_buckets", "[check]")
    return CheckPolicy(
        foundation_prefixes=_prefixes(section, "foundation_state_prefix"),
        app_state_prefix=_prefix(section, "app_state_prefix", "apps/"),
        foundation_state_buckets=tuple(dict.fromkeys((*buckets, *app_buckets))),
        app_dirs=_strings(section, "app_dirs", "[check]"),
        allowed_module_sources=_strings(section, "allowed_module_sources", "[check]"),
        layers=tuple(layers),
        executors=tuple(executors) if isinstance(executors, dict) else (),
        tool_pin_files=_strings(
            section, "tool_pin_files", "[check]", default=DEFAULT_TOOL_PIN_FILES
        ),
        unit_name_pattern=pattern_from(data),
        allowed_run_at_parse=_reasons(section, "allowed_run_at_parse"),
        allowed_roles=_roles(section),
        allowed_errors=_reasons(section, "allowed_errors"),
        allowed_generate=_reasons(section, "allowed_generate"),
        live=layout.live,
        root_prefixes=tuple(
            (r.path, r.state_prefix) for r in layout.roots if r.state_prefix is not None
        ),
        secrets=secret_names(data),
    )


def _roles(section: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """``[check.allowed_roles.TIER]``: ``"ROLE ARN PATTERN" = "the reason"`` per tier."""
    raw = section.get("allowed_roles", {})
    if not isinstance(raw, Mapping) or not all(isinstance(t, Mapping) for t in raw.values()):
        raise ToolingError(
            f"{POLICY_FILE}: [check.allowed_roles] must hold one table per tier, e.g. "
            '[check.allowed_roles.cloud] "arn:aws:iam::*:role/dns-admin" = "why"'
        )
    return {str(tier): _reasons(raw, str(tier)) for tier in raw}


def _reasons(section: Mapping[str, Any], key: str) -> dict[str, str]:
    """A ``[check.KEY]`` table of ``"FILE PATTERN" = "the reason"`` entries."""
    raw = section.get(key, {})
    if not isinstance(raw, Mapping) or not all(
        isinstance(v, str) and v.strip() for v in raw.values()
    ):
        raise ToolingError(
            f'{POLICY_FILE}: [check.{key}] must map each file to the reason it is allowed, e.g. "root.hcl" = "fetches ..."'
        )
    return dict(raw)
