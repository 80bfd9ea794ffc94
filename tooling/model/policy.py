"""``policy.toml`` as one typed, read-only value: :class:`Policy`. Pure.

:func:`policy_from` is the one parser of the file's document (what ``tomllib``
reads): every table, every key and every value is checked there, once, and an
unknown table or key, or a value of the wrong kind, is refused by name
(:class:`~tooling.errors.ToolingError`, ``policy.toml: [TABLE] KEY ...``; the
reader of the file, :func:`tooling.io.config.read_policy`, adds the line of a
``[layout]`` table). A misspelt key must not silently drop a rule: ``[gate]``
for ``[gates]``, or ``node_type`` for ``node_types``, would otherwise let a VM
change apply without approval.

Every task's preamble (:func:`tooling.cli.run`) makes the task's
:class:`Policy` before it writes anything, so a typo in a table the task does
not use stops it too, and hands that value down: the workspace, the plan's
context, the applier, the verifier, ``check`` and ``doctor`` read its typed
tables (``policy.gates``, ``policy.check``...). Code that runs without a
preamble (a test calling the engine) reads its Policy with the same function.

The tables, each a frozen value: ``[layout]`` (:class:`~tooling.model.layout.Layout`),
``[gates]`` (:class:`GatePolicy`), ``[check]`` (:class:`CheckPolicy`),
``[executors.NAME]`` (:class:`Executor`), ``[apps]`` (:class:`AppPolicy`),
``[apply]`` (:class:`ApplyPolicy`), ``[secrets]`` (:class:`EnvRule`) and
``[sensitive_attributes]`` (:data:`Declared`). What each means, and the rules
that read it, is said where it is used (:mod:`tooling.core.plan.gates`,
:mod:`tooling.core.ci.executors`, :mod:`tooling.core.rules`, :mod:`tooling.core.apps.tier`,
:mod:`tooling.core.apply.age`, :mod:`tooling.core.text.redact`,
:mod:`tooling.core.plan.sensitive`).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from types import MappingProxyType
from typing import Any

from tooling.errors import ToolingError
from tooling.model.layout import ROOT_FILE, Layout, LiveRoot
from tooling.model.units import LIVE_DIR

POLICY_FILE = "policy.toml"

#: the top-level tables of policy.toml
TABLES = frozenset(
    {"gates", "check", "executors", "apps", "layout", "secrets", "sensitive_attributes", "apply"}
)


# --------------------------------------------------------------------------- the tables


#: what OpenTofu can do to the state alone, the real resource left as it is
STATE_ACTIONS = ("forget", "import", "move")
#: ``[gates] auto_state_actions`` when policy.toml does not set it
DEFAULT_AUTO_STATE_ACTIONS = ("move",)


@dataclass(frozen=True)
class GatePolicy:
    """``[gates]``: the resource types and addresses that count as nodes/VMs, and the
    state actions (:data:`STATE_ACTIONS`) that need no human on their own."""

    node_types: tuple[str, ...] = ()
    node_addresses: tuple[str, ...] = ()
    auto_state_actions: tuple[str, ...] = DEFAULT_AUTO_STATE_ACTIONS

    def touches_node(self, rtype: str, address: str) -> bool:
        return any(fnmatch.fnmatchcase(rtype, p) for p in self.node_types) or any(
            fnmatch.fnmatchcase(address, p) for p in self.node_addresses
        )


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

#: what a folder below the live folder may be called by default (``[check] unit_name_pattern``)
DEFAULT_PATTERN = "[a-z0-9][a-z0-9-]*"
#: the key of ``[check]`` that replaces :data:`DEFAULT_PATTERN`
NAME_PATTERN_KEY = "unit_name_pattern"


@dataclass(frozen=True)
class CheckPolicy:
    """``[check]``: what the rules of ``invoke check`` and the verifier allow (with the
    layers ``[layout.roots]`` declares, and the buckets ``[apps]`` lists)."""

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
    live: tuple[str, ...] = (LIVE_DIR,)
    #: live roots with a state prefix of their own ([layout.roots]): (folder, prefix)
    root_prefixes: tuple[tuple[str, str], ...] = ()
    #: ``[secrets]``: which environment variables hold secrets (no configuration reads
    #: one: the rule ``secret-read``)
    secrets: EnvRule = field(default_factory=lambda: EnvRule())

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


#: GitHub Actions: "A matrix will generate a maximum of 256 jobs per workflow run" (the
#: legs of one executor, :mod:`tooling.core.ci.split`)
MAX_LEGS = 256
#: the platform of an executor that does not name its own: GitHub's hosted Linux runners
DEFAULT_PLATFORMS = ("linux_amd64",)


@dataclass(frozen=True)
class Executor:
    """One ``[executors.NAME]``: where its units run (:mod:`tooling.core.ci.executors`)."""

    name: str
    runs_on: tuple[str, ...]
    aws_role_arn_patterns: tuple[str, ...] = ()
    gcp_service_account_patterns: tuple[str, ...] = ()
    gcp_audience_patterns: tuple[str, ...] = ()
    #: the OS_ARCH platforms its runners are (the lock files carry checksums for each)
    platforms: tuple[str, ...] = DEFAULT_PLATFORMS
    #: how many legs of the CI matrix its units may be split over
    max_legs: int = 1

    @property
    def checks_identity(self) -> bool:
        return bool(
            self.aws_role_arn_patterns
            or self.gcp_service_account_patterns
            or self.gcp_audience_patterns
        )


@dataclass(frozen=True)
class AppPolicy:
    """``[apps]``: what the app tier allows (:mod:`tooling.core.apps.tier`)."""

    allowed_resource_types: tuple[str, ...]
    foundation_buckets: tuple[str, ...] = ()
    gate: str = "auto"

    def allows(self, resource_type: str) -> bool:
        return any(fnmatch.fnmatchcase(resource_type, p) for p in self.allowed_resource_types)


#: how old a plan may be when it is applied when ``[apply] max_plan_age`` is not set
DEFAULT_MAX_PLAN_AGE = timedelta(hours=24)


@dataclass(frozen=True)
class ApplyPolicy:
    """``[apply]``: how old a plan may be when it is applied (:mod:`tooling.core.apply.age`)."""

    max_plan_age: timedelta = DEFAULT_MAX_PLAN_AGE


#: ``[secrets] env_name_words``'s default: an environment variable whose name has one of
#: these words (or a word ending in one: ``DBPASSWORD``) holds a secret
DEFAULT_ENV_WORDS = (
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "KEY",
    "CREDENTIAL",
    "CREDS",
    "PRIVATE",
    "AUTH",
)
#: a name whose last word is one of these names a thing, not a secret
#: (``AWS_ACCESS_KEY_ID``, ``SOPS_AGE_KEY_FILE``, ``GITHUB_TOKEN_URL``)
NOT_SECRET_LAST_WORDS = frozenset({"ID", "FILE", "PATH", "URL", "DIR", "NAME", "ARN"})


@dataclass(frozen=True)
class EnvRule:
    """``[secrets]``: which environment variables hold secrets, by name (:mod:`tooling.core.text.redact`)."""

    words: tuple[str, ...] = DEFAULT_ENV_WORDS
    names: frozenset[str] = frozenset()  # ``env_names``: exact names, whatever their words

    def is_secret(self, name: str) -> bool:
        if name in self.names:
            return True
        parts = [w for w in re.split(r"[^A-Z0-9]+", name.upper()) if w]
        if not parts or parts[-1] in NOT_SECRET_LAST_WORDS:
            return False
        return any(
            part.endswith(word) or part.endswith(word + "S")
            for part in parts
            for word in self.words
        )


#: ``[sensitive_attributes]``: resource type -> attribute paths (each a tuple of names)
Declared = Mapping[str, tuple[tuple[str, ...], ...]]


@dataclass(frozen=True)
class Policy:
    """policy.toml, every table parsed and checked (:func:`policy_from`): one read-only value."""

    layout: Layout
    gates: GatePolicy
    check: CheckPolicy
    #: ``[executors.NAME]`` by name, in declaration order (the matrix order)
    executors: Mapping[str, Executor]
    apply: ApplyPolicy
    secrets: EnvRule
    sensitive_attributes: Declared
    #: ``[apps]``; None when there is none (only the app tier needs it: :meth:`app_tier`)
    apps: AppPolicy | None

    def app_tier(self) -> AppPolicy:
        """``[apps]``, which the app tier's commands need: refused, saying what to add, when absent."""
        if self.apps is None:
            raise ToolingError(
                f"{POLICY_FILE} has no [apps] table: add one with allowed_resource_types, the "
                'resource types an application may own (e.g. ["aws_db_instance", "aws_s3_bucket"])'
            )
        return self.apps


# --------------------------------------------------------------------------- the parser


def policy_from(document: Mapping[str, Any], where: str = POLICY_FILE) -> Policy:
    """The :class:`Policy` of policy.toml's ``document`` (missing tables and keys: their
    defaults), every table checked in turn; the first value refused raises
    :class:`~tooling.errors.ToolingError` naming the table and the key (``where`` names
    the file in the errors of ``[layout]``, which is read to find the repository)."""
    _refuse_unknown_keys(document, TABLES, "the top level")
    layout = _layout(document, where)
    gates = _gates(document)
    executors = _executors(document)
    secrets = _secrets(document)  # once: [check] carries the same rule
    check = _check(document, layout, secrets)
    return Policy(
        layout=layout,
        gates=gates,
        check=check,
        executors=executors,
        secrets=secrets,
        sensitive_attributes=_sensitive_attributes(document),
        apply=_apply(document),
        apps=_apps(document["apps"]) if "apps" in document else None,
    )


def _refuse_unknown_keys(table: Mapping[str, Any], known: Iterable[str], where: str) -> None:
    """Raise naming the keys of ``table`` (``where``, e.g. ``[check]``) that are not ``known``."""
    allowed = sorted(set(known))
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise ToolingError(
            f"{POLICY_FILE}: {where} has unknown key(s) {', '.join(unknown)}; "
            f"known keys: {', '.join(allowed)}. Fix the spelling"
        )


# [layout]

_ROOT_KEYS = ("state_prefix", "executor", "may_depend_on", "tier")


def _layout(document: Mapping[str, Any], where: str) -> Layout:
    """``[layout]`` (missing keys: today's layout, ``live/`` and ``root.hcl``)."""
    table = document.get("layout", {})
    if not isinstance(table, Mapping):
        raise ToolingError(f"{where}: [layout] must be a table")
    _refuse_unknown_keys(table, ("live", "root_file", "roots"), "[layout]")
    roots = _roots(table.get("roots", {}), where)
    live = table.get("live", [r.path for r in roots] or [LIVE_DIR])
    if isinstance(live, str):
        live = [live]
    if not isinstance(live, list) or not live or not all(isinstance(x, str) and x for x in live):
        raise ToolingError(
            f'{where}: [layout] live must be a folder or a list of folders, e.g. ["live"]'
        )
    folders = [_folder(folder, where, "[layout] live") for folder in live]
    # a declared root is a live folder, whether or not `live` names it
    folders += [r.path for r in roots if r.path not in folders]
    root_file = table.get("root_file", ROOT_FILE)
    if not isinstance(root_file, str) or not root_file or "/" in root_file:
        raise ToolingError(f'{where}: [layout] root_file must be a file name, e.g. "root.hcl"')
    return Layout(tuple(folders), root_file, roots)


def _folder(folder: str, where: str, what: str) -> str:
    clean = folder.strip("/") or "."
    if clean.startswith("..") or folder.startswith("/") or "/../" in f"/{clean}/":
        raise ToolingError(f"{where}: {what} {folder!r} must be a folder inside the repository")
    return clean


def _roots(raw: Any, where: str) -> tuple[LiveRoot, ...]:
    """``[layout.roots."FOLDER"]`` tables -> live roots (checked: known keys, kinds, no twins)."""
    if not isinstance(raw, Mapping):
        raise ToolingError(
            f'{where}: [layout] roots must be tables, e.g. [layout.roots."prod"] state_prefix = "prod/"'
        )
    out: list[LiveRoot] = []
    for name, table in raw.items():
        here = f'[layout.roots."{name}"]'
        if not isinstance(table, Mapping):
            raise ToolingError(f'{where}: {here} must be a table, e.g. state_prefix = "{name}/"')
        _refuse_unknown_keys(table, _ROOT_KEYS, here)
        path = _folder(name, where, f"{here}: the folder")
        prefix = table.get("state_prefix")
        if prefix is not None and (not isinstance(prefix, str) or not prefix.strip("/")):
            raise ToolingError(
                f'{where}: {here} state_prefix must be a key prefix, e.g. "{path.strip(".") or "prod"}/"'
            )
        executor = table.get("executor")
        if executor is not None and (not isinstance(executor, str) or not executor):
            raise ToolingError(
                f'{where}: {here} executor must be an executor\'s name, e.g. "hosted"'
            )
        may = table.get("may_depend_on", [])
        if isinstance(may, str):
            may = [may]
        if not isinstance(may, list) or not all(isinstance(x, str) and x for x in may):
            raise ToolingError(f"{where}: {here} may_depend_on must be a list of layer names")
        if may and executor is None:
            raise ToolingError(
                f"{where}: {here} may_depend_on needs executor: a root is a layer once it "
                'names where its units run (e.g. executor = "hosted")'
            )
        tier = table.get("tier")
        if tier is not None and (not isinstance(tier, str) or not tier.strip()):
            raise ToolingError(
                f'{where}: {here} tier must be a tier\'s name, e.g. "{path.split("/")[-1]}"'
            )
        if any(r.path == path for r in out):
            raise ToolingError(f"{where}: {here} names the folder {path!r} twice; keep one")
        out.append(
            LiveRoot(
                path,
                None if prefix is None else prefix.strip("/") + "/",
                executor,
                tuple(may),
                tier,
            )
        )
    return tuple(out)


# [gates]


def _gates(document: Mapping[str, Any]) -> GatePolicy:
    """``[gates]`` (missing: no node/VM rules)."""
    gates = document.get("gates", {})
    if not isinstance(gates, dict):
        raise ToolingError(
            f"{POLICY_FILE}: [gates] must be a table with node_types and node_addresses"
        )
    out: list[tuple[str, ...]] = []
    for key in ("node_types", "node_addresses"):
        value = gates.get(key, ())
        if not isinstance(value, list | tuple) or not all(isinstance(p, str) and p for p in value):
            raise ToolingError(f"{POLICY_FILE}: [gates] {key} must be a list of patterns (strings)")
        out.append(tuple(value))
    auto = gates.get("auto_state_actions", list(DEFAULT_AUTO_STATE_ACTIONS))
    if not isinstance(auto, list | tuple) or not all(a in STATE_ACTIONS for a in auto):
        raise ToolingError(
            f"{POLICY_FILE}: [gates] auto_state_actions must be a list of "
            f"{', '.join(STATE_ACTIONS)} (found {auto!r}): the state actions that apply "
            "without a human on their own"
        )
    _refuse_unknown_keys(gates, ("node_types", "node_addresses", "auto_state_actions"), "[gates]")
    return GatePolicy(out[0], out[1], tuple(dict.fromkeys(auto)))


# [executors.NAME]

_EXECUTOR_KEYS = frozenset(
    {
        "runs_on",
        "aws_role_arn_pattern",
        "gcp_service_account_pattern",
        "gcp_audience_pattern",
        "platforms",
        "max_legs",
    }
)
#: an OS_ARCH platform as OpenTofu writes it (a pattern: compiled when an executor names one)
_PLATFORM = r"[a-z0-9]+_[a-z0-9]+"


def _executors(document: Mapping[str, Any]) -> Mapping[str, Executor]:
    """The ``[executors.*]`` tables, in declaration order."""
    section = document.get("executors", {})
    if not isinstance(section, dict):
        raise ToolingError(f"{POLICY_FILE}: [executors] must be a table of [executors.NAME] tables")
    out: dict[str, Executor] = {}
    for name, table in section.items():
        if not isinstance(table, dict):
            raise ToolingError(f"{POLICY_FILE}: [executors.{name}] must be a table")
        _refuse_unknown_keys(table, _EXECUTOR_KEYS, f"[executors.{name}]")
        runs_on = table.get("runs_on")
        if (
            not isinstance(runs_on, list)
            or not runs_on
            or not all(isinstance(x, str) and x for x in runs_on)
        ):
            raise ToolingError(
                f"{POLICY_FILE}: [executors.{name}] needs runs_on, a non-empty list of runner labels "
                f'(e.g. ["ubuntu-latest"] or ["self-hosted", "lan"])'
            )
        out[name] = Executor(
            name=name,
            runs_on=tuple(runs_on),
            aws_role_arn_patterns=_patterns(
                name, "aws_role_arn_pattern", table.get("aws_role_arn_pattern")
            ),
            gcp_service_account_patterns=_patterns(
                name, "gcp_service_account_pattern", table.get("gcp_service_account_pattern")
            ),
            gcp_audience_patterns=_patterns(
                name, "gcp_audience_pattern", table.get("gcp_audience_pattern")
            ),
            platforms=_platforms(name, table.get("platforms")),
            max_legs=_max_legs(name, table.get("max_legs")),
        )
    return MappingProxyType(out)


def _patterns(name: str, key: str, raw: Any) -> tuple[str, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw or not all(isinstance(p, str) and p for p in raw):
        raise ToolingError(
            f"{POLICY_FILE}: [executors.{name}] {key} must be a pattern or a list of patterns"
        )
    return tuple(raw)


def _platforms(name: str, raw: Any) -> tuple[str, ...]:
    if raw is None:
        return DEFAULT_PLATFORMS
    if (
        not isinstance(raw, list)
        or not raw
        or not all(isinstance(p, str) and re.fullmatch(_PLATFORM, p) for p in raw)
    ):
        raise ToolingError(
            f"{POLICY_FILE}: [executors.{name}] platforms must be a non-empty list of OS_ARCH "
            f'names as OpenTofu writes them (e.g. ["linux_amd64", "linux_arm64"]), got {raw!r}'
        )
    return tuple(dict.fromkeys(raw))


def _max_legs(name: str, raw: Any) -> int:
    if raw is None:
        return 1
    if isinstance(raw, bool) or not isinstance(raw, int) or not 1 <= raw <= MAX_LEGS:
        raise ToolingError(
            f"{POLICY_FILE}: [executors.{name}] max_legs must be a whole number from 1 to "
            f"{MAX_LEGS} (GitHub starts at most {MAX_LEGS} jobs from one matrix), got {raw!r}"
        )
    return raw


# [check]

_CHECK_KEYS = frozenset(
    {
        "foundation_state_prefix",
        "app_state_prefix",
        "foundation_state_buckets",
        "app_dirs",
        "allowed_module_sources",
        "layers",
        "tool_pin_files",
        NAME_PATTERN_KEY,
        "allowed_run_at_parse",
        "allowed_roles",
        "allowed_errors",
        "allowed_generate",
    }
)


def _check(document: Mapping[str, Any], layout: Layout, secrets: EnvRule) -> CheckPolicy:
    """``[check]`` (missing keys take the defaults), with the layers ``[layout.roots]``
    declares, the foundation buckets ``[apps]`` lists and ``secrets`` (``[secrets]``)."""
    section = document.get("check", {})
    if not isinstance(section, dict):
        raise ToolingError(f"{POLICY_FILE}: [check] must be a table")
    _refuse_unknown_keys(section, _CHECK_KEYS, "[check]")
    layers = _layers(section, layout)
    executors = document.get("executors", {})
    apps = document.get("apps", {})
    # the app tier ([apps], tooling/core/apps/tier.py) lists foundation buckets too: one list for both
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
        layers=layers,
        executors=tuple(executors) if isinstance(executors, dict) else (),
        tool_pin_files=_strings(
            section, "tool_pin_files", "[check]", default=DEFAULT_TOOL_PIN_FILES
        ),
        unit_name_pattern=_name_pattern(section),
        allowed_run_at_parse=_reasons(section, "allowed_run_at_parse"),
        allowed_roles=_roles(section),
        allowed_errors=_reasons(section, "allowed_errors"),
        allowed_generate=_reasons(section, "allowed_generate"),
        live=layout.live,
        root_prefixes=tuple(
            (r.path, r.state_prefix) for r in layout.roots if r.state_prefix is not None
        ),
        secrets=secrets,
    )


def _layers(section: Mapping[str, Any], layout: Layout) -> tuple[Layer, ...]:
    """``[check.layers.NAME]``, and each live root that names its executor (a layer named
    after its folder); each ``may_depend_on`` names a layer."""
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
    return tuple(layers)


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


def _name_pattern(section: Mapping[str, Any]) -> str:
    """``[check] unit_name_pattern``, a regular expression (:data:`DEFAULT_PATTERN` when unset)."""
    raw = section.get(NAME_PATTERN_KEY, DEFAULT_PATTERN)
    if not isinstance(raw, str) or not raw:
        raise ToolingError(
            f"{POLICY_FILE}: [check] {NAME_PATTERN_KEY} must be a regular expression string"
        )
    try:
        re.compile(raw)
    except re.error as exc:
        raise ToolingError(
            f"{POLICY_FILE}: [check] {NAME_PATTERN_KEY} {raw!r}: not a regular expression ({exc})"
        ) from None
    return raw


def _roles(section: Mapping[str, Any]) -> Mapping[str, Mapping[str, str]]:
    """``[check.allowed_roles.TIER]``: ``"ROLE ARN PATTERN" = "the reason"`` per tier."""
    raw = section.get("allowed_roles", {})
    if not isinstance(raw, Mapping) or not all(isinstance(t, Mapping) for t in raw.values()):
        raise ToolingError(
            f"{POLICY_FILE}: [check.allowed_roles] must hold one table per tier, e.g. "
            '[check.allowed_roles.cloud] "arn:aws:iam::*:role/dns-admin" = "why"'
        )
    return MappingProxyType({str(tier): _reasons(raw, str(tier)) for tier in raw})


def _reasons(section: Mapping[str, Any], key: str) -> Mapping[str, str]:
    """A ``[check.KEY]`` table of ``"FILE PATTERN" = "the reason"`` entries."""
    raw = section.get(key, {})
    if not isinstance(raw, Mapping) or not all(
        isinstance(v, str) and v.strip() for v in raw.values()
    ):
        raise ToolingError(
            f'{POLICY_FILE}: [check.{key}] must map each file to the reason it is allowed, e.g. "root.hcl" = "fetches ..."'
        )
    return MappingProxyType(dict(raw))


# [secrets]


def _secrets(document: Mapping[str, Any]) -> EnvRule:
    """``[secrets]`` (missing: :data:`DEFAULT_ENV_WORDS`)."""
    table = document.get("secrets", {})
    if not isinstance(table, Mapping):
        raise ToolingError(
            f"{POLICY_FILE}: [secrets] must be a table with env_name_words and env_names"
        )
    _refuse_unknown_keys(table, ("env_name_words", "env_names"), "[secrets]")
    lists: dict[str, tuple[str, ...]] = {}
    for key, default in (("env_name_words", DEFAULT_ENV_WORDS), ("env_names", ())):
        value = table.get(key, default)
        if not isinstance(value, list | tuple) or not all(
            isinstance(w, str) and re.fullmatch(r"[A-Za-z0-9_]+", w) for w in value
        ):
            raise ToolingError(
                f"{POLICY_FILE}: [secrets] {key} must be a list of names (letters, digits, _), "
                f'e.g. {key} = ["TOKEN"]'
            )
        lists[key] = tuple(value)
    return EnvRule(tuple(w.upper() for w in lists["env_name_words"]), frozenset(lists["env_names"]))


# [sensitive_attributes]

_SENSITIVE = "sensitive_attributes"


def _sensitive_attributes(document: Mapping[str, Any]) -> Declared:
    """``[sensitive_attributes]`` (missing: none)."""
    table = document.get(_SENSITIVE, {})
    if not isinstance(table, Mapping):
        raise ToolingError(
            f"{POLICY_FILE}: [{_SENSITIVE}] must be a table of resource type = [attribute paths]"
        )
    out: dict[str, tuple[tuple[str, ...], ...]] = {}
    for rtype, paths in table.items():
        if not isinstance(paths, list) or not all(
            isinstance(p, str) and p and all(p.split(".")) for p in paths
        ):
            raise ToolingError(
                f'{POLICY_FILE}: [{_SENSITIVE}] {rtype} must be a list of attribute paths such as ["env"]'
            )
        out[str(rtype)] = tuple(tuple(p.split(".")) for p in paths)
    return MappingProxyType(out)


# [apply]

#: a duration: a whole number and its unit (a pattern: compiled when ``[apply]`` sets one)
_DURATION = r"\s*([0-9]{1,9})\s*([smhd])\s*"
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def _apply(document: Mapping[str, Any]) -> ApplyPolicy:
    """``[apply]`` (missing: plans apply for :data:`DEFAULT_MAX_PLAN_AGE`)."""
    table = document.get("apply")
    if table is None:
        return ApplyPolicy()
    if not isinstance(table, dict):
        raise ToolingError(f"{POLICY_FILE}: [apply] must be a table")
    _refuse_unknown_keys(table, ("max_plan_age",), "[apply]")
    if "max_plan_age" not in table:
        return ApplyPolicy()
    return ApplyPolicy(_duration(table["max_plan_age"], f"{POLICY_FILE}: [apply] max_plan_age"))


def _duration(text: Any, where: str) -> timedelta:
    """``90s``, ``30m``, ``24h``, ``7d`` as a :class:`timedelta`; refused naming ``where``."""
    found = re.fullmatch(_DURATION, text) if isinstance(text, str) else None
    if found is None or int(found[1]) == 0:
        raise ToolingError(
            f"{where} = {text!r}: a duration is a whole number above 0 and one of s, m, h, d "
            '(e.g. "24h")'
        )
    return timedelta(**{_UNITS[found[2]]: int(found[1])})


# [apps]


def _apps(apps: Any) -> AppPolicy:
    """``[apps]``, when policy.toml has one."""
    if not isinstance(apps, dict):
        raise ToolingError(
            f"{POLICY_FILE} has no [apps] table: add one with allowed_resource_types, the "
            'resource types an application may own (e.g. ["aws_db_instance", "aws_s3_bucket"])'
        )
    _refuse_unknown_keys(
        apps, ("allowed_resource_types", "foundation_state_buckets", "gate"), "[apps]"
    )
    allowed = apps.get("allowed_resource_types")
    if not isinstance(allowed, list) or not all(isinstance(t, str) and t for t in allowed):
        raise ToolingError(
            f"{POLICY_FILE}: [apps] allowed_resource_types must be a list of resource types "
            "(patterns)"
        )
    buckets = apps.get("foundation_state_buckets", [])
    if not isinstance(buckets, list) or not all(isinstance(b, str) for b in buckets):
        raise ToolingError(
            f"{POLICY_FILE}: [apps] foundation_state_buckets must be a list of bucket names"
        )
    gate = apps.get("gate", "auto")
    if gate not in ("auto", "manual"):
        raise ToolingError(f'{POLICY_FILE}: [apps] gate = {gate!r}: use "auto" or "manual"')
    return AppPolicy(tuple(allowed), tuple(buckets), gate)


# --------------------------------------------------------------------------- error lines

# patterns, not compiled objects: only an error message is matched against them (``re``
# compiles them then, once), and every task imports this module
_NAMED_TABLE = r"\[([A-Za-z0-9_./\"' -]+)\]"
_FILE_HEAD = r"^(?P<file>\S*" + re.escape(POLICY_FILE) + r"): "
_HEADER = r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(?:#.*)?$"


def _table_key(name: str) -> str:
    return ".".join(part.strip().strip("\"'") for part in name.split("."))


def located(message: str, text: str) -> str:
    """``policy.toml: [TABLE] ...`` -> ``policy.toml:LINE: [TABLE] ...``, LINE being the
    line of that table's header in ``text`` (the nearest declared parent table when
    the table is not a header of its own); the message as it is when none is found."""
    file = re.match(_FILE_HEAD, message)
    found = re.search(_NAMED_TABLE, message)
    if file is None or found is None:
        return message
    headers: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        match = re.match(_HEADER, line)
        if match:
            headers.setdefault(_table_key(match.group(1)), number)
    wanted = _table_key(found.group(1))
    while wanted:
        if wanted in headers:
            return f"{file['file']}:{headers[wanted]}: {message[file.end() :]}"
        wanted = wanted.rpartition(".")[0]
    return message
