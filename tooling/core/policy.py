"""The rule that prevents disasters, as checks. Pure.

"The two tiers never point at the same layer or state; every layer has its own
state key; units hold configuration only, pinned to immutable module
versions; bootstrap/ never runs in CI; the tools are pinned once." Each rule is
a small function over the repository model (:class:`tooling.model.repo.Model`), the
policy (``[check]`` in ``policy.toml``) and file contents (a
:class:`Snapshot`), returning :class:`Violation` values. Nothing here starts a
process or touches the disk: :mod:`tooling.commands.check` gathers the inputs and prints
the results.

Every violation names ``file:line``, the rule it breaks and how to fix it;
``docs/rules.md`` explains each rule id.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tooling.core.refs import find_source_lines
from tooling.core.upgrades import is_branch_name
from tooling.errors import ToolingError
from tooling.model import hcl
from tooling.model.repo import UNIT_FILE, Model, Unit
from tooling.model.sources import is_commit_sha, parse_source
from tooling.model.versions import parse_version

POLICY_FILE = "policy.toml"
TOOL_VERSIONS_FILE = ".tool-versions"

# --------------------------------------------------------------------------- values


@dataclass(frozen=True, order=True)
class Violation:
    """One broken rule at one place: ``file:line: rule: message. Fix: fix``."""

    file: str
    line: int
    rule: str
    message: str
    fix: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.rule}: {self.message.rstrip('.')}. Fix: {self.fix}"

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "rule": self.rule,
            "message": self.message,
            "fix": self.fix,
        }


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

    foundation_prefix: str = "live/"
    app_state_prefix: str = "apps/"
    foundation_state_buckets: tuple[str, ...] = ()
    app_dirs: tuple[str, ...] = ()
    allowed_module_sources: tuple[str, ...] = ()
    layers: tuple[Layer, ...] = ()
    executors: tuple[str, ...] = ()  # declared [executors.*] names; empty: not declared
    tool_pin_files: tuple[str, ...] = DEFAULT_TOOL_PIN_FILES

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
    }
)


def parse_policy(data: Mapping[str, Any]) -> CheckPolicy:
    """The check policy from a parsed ``policy.toml`` (missing keys take the defaults)."""
    section = data.get("check", {})
    if not isinstance(section, dict):
        raise ToolingError(f"{POLICY_FILE}: [check] must be a table")
    unknown = sorted(set(section) - _CHECK_KEYS)
    if unknown:
        raise ToolingError(
            f"{POLICY_FILE}: [check] has unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(_CHECK_KEYS))}"
        )
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
    names = {layer.name for layer in layers}
    for layer in layers:
        for other in layer.may_depend_on:
            if other not in names:
                raise ToolingError(
                    f"{POLICY_FILE}: [check.layers.{layer.name}] may_depend_on names {other!r}, "
                    f"which is not a layer (declared: {', '.join(sorted(names))})"
                )
    executors = data.get("executors", {})
    apps = data.get("apps", {})
    # the app tier (tooling/apptier.py) lists foundation buckets too: one list for both
    app_buckets = (
        _strings(apps, "foundation_state_buckets", "[apps]") if isinstance(apps, dict) else ()
    )
    buckets = _strings(section, "foundation_state_buckets", "[check]")
    return CheckPolicy(
        foundation_prefix=_prefix(section, "foundation_state_prefix", "live/"),
        app_state_prefix=_prefix(section, "app_state_prefix", "apps/"),
        foundation_state_buckets=tuple(dict.fromkeys((*buckets, *app_buckets))),
        app_dirs=_strings(section, "app_dirs", "[check]"),
        allowed_module_sources=_strings(section, "allowed_module_sources", "[check]"),
        layers=tuple(layers),
        executors=tuple(executors) if isinstance(executors, dict) else (),
        tool_pin_files=_strings(
            section, "tool_pin_files", "[check]", default=DEFAULT_TOOL_PIN_FILES
        ),
    )


# --------------------------------------------------------------------------- inputs


@dataclass
class Snapshot:
    """The repository's files as the rules see them: paths, which are executable, contents.

    ``paths`` are repository-relative (caches such as ``.terragrunt-cache`` are
    left out by whoever builds it); contents are read on demand through
    ``reader`` and kept, and HCL bodies are parsed once.
    """

    paths: tuple[str, ...]
    reader: Callable[[str], str]
    executable: frozenset[str] = frozenset()
    _texts: dict[str, str] = field(default_factory=dict, repr=False)
    _bodies: dict[str, hcl.Body] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, files: Mapping[str, str], executable: Iterable[str] = ()) -> Snapshot:
        """A snapshot of an in-memory tree (tests)."""
        return cls(tuple(sorted(files)), files.__getitem__, frozenset(executable))

    def text(self, path: str) -> str:
        if path not in self._texts:
            self._texts[path] = self.reader(path)
        return self._texts[path]

    def body(self, path: str) -> hcl.Body:
        """The parsed HCL of ``path``; raises :class:`tooling.model.hcl.HclSyntaxError` naming file:line."""
        if path not in self._bodies:
            self._bodies[path] = hcl.parse(self.text(path).encode(), path)
        return self._bodies[path]

    def under(self, folder: str) -> list[str]:
        prefix = folder.rstrip("/") + "/"
        return [p for p in self.paths if p.startswith(prefix)]


@dataclass(frozen=True)
class AppWorkspace:
    """A per-application workspace: its name and its backend configuration files.

    ``files`` maps a display path (repository-relative when inside the
    repository) to the file's text: ``backend.hcl``, ``*.tfbackend`` (partial
    backend configurations) and ``*.tf`` files that may hold a ``backend`` block.
    """

    name: str
    folder: str
    files: Mapping[str, str]


# --------------------------------------------------------------------------- helpers


def _unit_file(unit: Unit) -> str:
    return f"{unit.path}/{UNIT_FILE}"


def _line_of_text(text: str, needle: str) -> int:
    offset = text.find(needle)
    return text.count("\n", 0, offset) + 1 if offset >= 0 else 1


_SYNTAX_RE = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?:\d+:)? (?P<msg>.*)", re.S)


def syntax_violation(error: ToolingError, where: str = "live") -> Violation:
    """A configuration that cannot be read (HCL that does not parse, an include that
    points nowhere...) as a violation at its file:line (``where`` when it names none)."""
    text = str(error)
    syntax = isinstance(error, hcl.HclSyntaxError)
    rule = "hcl-syntax" if syntax else "config-invalid"
    fix = (
        "fix the syntax (`terragrunt hcl fmt --check` shows the same error)"
        if syntax
        else "fix the configuration the message names"
    )
    match = _SYNTAX_RE.match(text)
    if match is None or " " in match.group("file"):
        return Violation(where, 1, rule, text.rstrip("."), fix)
    message = match.group("msg").split(". Fix the file", 1)[0]
    return Violation(match.group("file"), int(match.group("line")), rule, message, fix)


def _safe_body(snap: Snapshot, path: str, out: list[Violation]) -> hcl.Body | None:
    try:
        return snap.body(path)
    except hcl.HclSyntaxError as exc:
        out.append(syntax_violation(exc))
        return None


def _literal_strings(
    expr: Any, locals_exprs: Mapping[str, Any], seen: frozenset[str] = frozenset()
) -> Iterator[str]:
    """Every string literal an expression can evaluate to, following ``local.X`` in the same file."""
    if not isinstance(expr, tuple | list) or not expr:
        return
    kind = expr[0]
    if kind == "lit":
        if isinstance(expr[1], str):
            yield expr[1]
        return
    if kind == "var":
        if expr[1] == "local" and expr[2] and isinstance(expr[2][0], str):
            name = expr[2][0]
            if name in locals_exprs and name not in seen:
                yield from _literal_strings(locals_exprs[name][0], locals_exprs, seen | {name})
        return
    if kind == "tmpl":
        # the literal runs of a template, joined: a heredoc's text with holes
        yield "".join(
            p[1]
            for p in expr[1]
            if isinstance(p, tuple | list) and p and p[0] == "lit" and isinstance(p[1], str)
        )
        for part in expr[1]:
            yield from _literal_strings(part, locals_exprs, seen)
        return
    children: list[Any] = []
    if kind in ("tup",):
        children = list(expr[1])
    elif kind == "call":
        children = list(expr[2])
    elif kind == "obj":
        children = [v for pair in expr[1] for v in pair]
    elif kind == "cond":
        children = list(expr[1:])
    elif kind == "bin":
        children = list(expr[2:])
    elif kind == "post":
        children = [expr[1]]
    for child in children:
        yield from _literal_strings(child, locals_exprs, seen)


def _locals_of(body: hcl.Body) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for btype, _labels, inner, _line in body["b"]:
        if btype == "locals":
            out.update(inner["a"])
    return out


# --------------------------------------------------------------------------- state keys


def _unit_state_site(unit: Unit, snap: Snapshot) -> int:
    """The line where the unit itself sets its state (remote_state or a state_key local), else 1."""
    path = _unit_file(unit)
    if path not in snap.paths:
        return 1
    text = snap.text(path)
    for needle in ("remote_state", "state_key"):
        if needle in text:
            return _line_of_text(text, needle)
    return 1


def check_state_keys(model: Model, policy: CheckPolicy, snap: Snapshot) -> list[Violation]:
    """Every unit's state key is computed, under the foundation prefix, and unique per bucket."""
    out: list[Violation] = []
    by_key: dict[tuple[str | None, str], list[Unit]] = {}
    for path in model.order:
        unit = model.units[path]
        where = _unit_file(unit)
        if unit.state_key is None:
            out.append(
                Violation(
                    where,
                    1,
                    "state-key-missing",
                    f"the state key of {unit.path} cannot be computed from its configuration",
                    'include root.hcl (include "root" { path = find_in_parent_folders("root.hcl") }), '
                    "which keys the state by the unit's path",
                )
            )
            continue
        line = _unit_state_site(unit, snap)
        if not unit.state_key.startswith(policy.foundation_prefix):
            out.append(
                Violation(
                    where,
                    line,
                    "state-key-prefix",
                    f"state key {unit.state_key!r} of {unit.path} is outside the foundation prefix {policy.foundation_prefix!r}",
                    f"keep foundation state under {policy.foundation_prefix} (remove the unit's own key and let root.hcl "
                    "derive it from the unit's path)",
                )
            )
        by_key.setdefault((unit.state_bucket, unit.state_key), []).append(unit)
    for (bucket, key), units in by_key.items():
        for unit in units:
            # a unit without a bucket of its own uses the one IAC_STATE_BUCKET names at run
            # time: it may be any bucket, so it collides with every other holder of the key
            others = [
                u.path
                for (b2, k2), us in by_key.items()
                if k2 == key
                for u in us
                if u is not unit and (b2 is None or bucket is None or b2 == bucket)
            ]
            if not others:
                continue
            where_bucket = f"s3://{bucket}/" if bucket else ""
            out.append(
                Violation(
                    _unit_file(unit),
                    _unit_state_site(unit, snap),
                    "state-key-duplicate",
                    f"{unit.path} resolves to state {where_bucket}{key}, which {', '.join(sorted(others))} also uses: "
                    "two units would overwrite each other's state",
                    "give every unit its own key (drop the copied remote_state/key and let root.hcl key the state by the unit's path)",
                )
            )
    return out


_BACKEND_NAMES = ("backend.hcl",)
#: backend attributes that name a state object or a prefix of them
_KEY_ATTRIBUTES = ("key", "prefix", "workspace_key_prefix")


def app_backend_settings(app: AppWorkspace) -> list[tuple[str, int, str | None, str | None]]:
    """``(file, line, key, bucket)`` for each backend configuration of an app workspace.

    ``key``/``bucket`` are None when not a literal string. Raises
    :class:`tooling.model.hcl.HclSyntaxError` for a file that does not parse.
    """
    found: list[tuple[str, int, str | None, str | None]] = []

    def literal(body: hcl.Body, name: str) -> tuple[str | None, int]:
        entry = body["a"].get(name)
        if entry is None:
            return None, 0
        expr, line = entry
        return (expr[1] if expr[0] == "lit" and isinstance(expr[1], str) else None), line

    def settings(path: str, body: hcl.Body, block_line: int) -> None:
        bucket, _ = literal(body, "bucket")
        named = [name for name in _KEY_ATTRIBUTES if name in body["a"]]
        for name in named:
            key, line = literal(body, name)
            if key is not None and name != "key":
                key = key.rstrip("/") + "/"  # a prefix: compare it as a folder
            found.append((path, line or block_line, key, bucket))
        if not named and block_line:
            found.append((path, block_line, None, bucket))

    for path, text in sorted(app.files.items()):
        body = hcl.parse(text.encode(), path)
        name = posixpath.basename(path)
        if name in _BACKEND_NAMES or name.endswith(".tfbackend"):
            settings(path, body, 1 if body["a"] else 0)
            continue
        for btype, _labels, inner, _line in body["b"]:
            if btype != "terraform":
                continue
            for b2, labels, backend, bline in inner["b"]:
                # a local backend keeps state beside the code, not in a shared bucket
                if b2 == "backend" and labels[:1] != ["local"]:
                    settings(path, backend, bline)
    return found


def check_app_workspaces(
    model: Model | None, policy: CheckPolicy, apps: Sequence[AppWorkspace]
) -> list[Violation]:
    """App keys stay under ``apps/<name>/``, never name a foundation key, prefix or bucket, and are unique."""
    out: list[Violation] = []
    foundation: dict[str, list[Unit]] = {}
    if model is not None:
        for unit in model.units.values():
            if unit.state_key:
                foundation.setdefault(unit.state_key, []).append(unit)
    claims: list[tuple[str | None, str, str, str, int]] = []  # bucket, key, app, file, line
    for app in apps:
        try:
            settings = app_backend_settings(app)
        except hcl.HclSyntaxError as exc:
            out.append(syntax_violation(exc))
            continue
        expected = f"{policy.app_state_prefix}{app.name}/"
        if not settings:
            out.append(
                Violation(
                    app.folder,
                    1,
                    "app-backend-missing",
                    f"app workspace {app.name!r} declares no backend key",
                    f'add {app.folder}/backend.hcl with key = "{expected}terraform.tfstate" (and its bucket)',
                )
            )
            continue
        for file, line, key, bucket in settings:
            if key is None:
                out.append(
                    Violation(
                        file,
                        line,
                        "app-backend-missing",
                        f"the backend key of app {app.name!r} is not a literal string, so it cannot be checked",
                        f'write the key literally: key = "{expected}terraform.tfstate"',
                    )
                )
                continue
            if bucket is not None and bucket in policy.foundation_state_buckets:
                out.append(
                    Violation(
                        file,
                        line,
                        "tier-overlap",
                        f"app {app.name!r} keeps its state in the foundation's bucket {bucket!r}",
                        "use the app-tier bucket (IAC_APP_STATE_BUCKET); the two tiers never share a bucket",
                    )
                )
            if key.startswith(policy.foundation_prefix) or key in foundation:
                owners = ", ".join(u.path for u in foundation.get(key, []))
                what = (
                    f"the foundation key of {owners}"
                    if owners
                    else f"a key under the foundation prefix {policy.foundation_prefix!r}"
                )
                out.append(
                    Violation(
                        file,
                        line,
                        "tier-overlap",
                        f"app {app.name!r} points its backend at {key!r}, {what}: applying it would overwrite foundation state",
                        f"use a key under {expected} (e.g. {expected}terraform.tfstate)",
                    )
                )
            elif not key.startswith(expected):
                out.append(
                    Violation(
                        file,
                        line,
                        "app-state-prefix",
                        f"app {app.name!r} keeps its state at {key!r}, outside its prefix {expected!r}",
                        f"use a key under {expected} (e.g. {expected}terraform.tfstate)",
                    )
                )
            for unit in foundation.get(key, []):
                if (
                    bucket is None
                    or not policy.foundation_state_buckets
                    or bucket in policy.foundation_state_buckets
                ):
                    out.append(
                        Violation(
                            file,
                            line,
                            "state-key-duplicate",
                            f"app {app.name!r} and unit {unit.path} resolve to the same state key {key!r}",
                            f"use a key under {expected}",
                        )
                    )
                    out.append(
                        Violation(
                            _unit_file(unit),
                            1,
                            "state-key-duplicate",
                            f"unit {unit.path} and app {app.name!r} ({file}) resolve to the same state key {key!r}",
                            f"change the app's backend key to one under {expected}",
                        )
                    )
            claims.append((bucket, key, app.name, file, line))
    for bucket, key, name, file, line in claims:
        clash = sorted(
            {
                other
                for b2, k2, other, _f, _l in claims
                if k2 == key and other != name and (b2 is None or bucket is None or b2 == bucket)
            }
        )
        if clash:
            out.append(
                Violation(
                    file,
                    line,
                    "state-key-duplicate",
                    f"apps {name!r} and {', '.join(map(repr, clash))} resolve to the same state key {key!r}",
                    f"use a key under {policy.app_state_prefix}{name}/",
                )
            )
    return out


# --------------------------------------------------------------------------- configuration only

_CODE_SUFFIXES = (".tf", ".tofu", ".tf.json", ".tofu.json")
_CODE_BLOCKS = ("resource", "data", "module")
#: a block that creates or adopts infrastructure, in generated OpenTofu code
_INJECTED_RE = re.compile(
    r'^[ \t]*(?:(?P<kind>resource|data|module)[ \t]+["A-Za-z_]|(?P<imp>import)[ \t]*\{)', re.M
)


def check_configuration_only(
    model: Model | None, policy: CheckPolicy, snap: Snapshot
) -> list[Violation]:
    """No OpenTofu code under live/: no .tf/.tofu files, no resource/data/module blocks,
    no ``generate`` block that writes resources (in live/ or in a file units include)."""
    out: list[Violation] = []
    live = policy.foundation_prefix.rstrip("/")
    for path in snap.under(live):
        if path.endswith(_CODE_SUFFIXES):
            out.append(
                Violation(
                    path,
                    1,
                    "config-only-file",
                    "OpenTofu code in live/: units hold configuration only",
                    "move the code into a module in its own repository, tag it, and pin the tag in the unit's terraform.source",
                )
            )
    hcl_files = {p for p in snap.under(live) if p.endswith(".hcl")}
    if model is not None:
        for unit in model.units.values():
            hcl_files.update(r for r in unit.reads if r.endswith(".hcl") and r in snap.paths)
    for path in sorted(hcl_files):
        body = _safe_body(snap, path, out)
        if body is None:
            continue
        local_exprs = _locals_of(body)
        for btype, labels, inner, line in body["b"]:
            if btype in _CODE_BLOCKS:
                out.append(
                    Violation(
                        path,
                        line,
                        "config-only-block",
                        f"a {btype} block {'.'.join(labels)!r} in Terragrunt configuration: units hold configuration only",
                        "declare it in a module in its own repository and pin that module by tag",
                    )
                )
            elif btype == "generate":
                contents = inner["a"].get("contents")
                if contents is None:
                    continue
                for text in _literal_strings(contents[0], local_exprs):
                    match = _INJECTED_RE.search(text)
                    if match:
                        out.append(
                            Violation(
                                path,
                                line,
                                "config-only-generate",
                                f"generate {labels[0] if labels else ''!r} writes a {match.group('kind') or match.group('imp')} block into the unit's code",
                                "generate only backend and provider settings; put resources in a module, and adopt with `invoke adopt`",
                            )
                        )
                        break
    return out


# --------------------------------------------------------------------------- pins


def _source_site(unit: Unit, snap: Snapshot) -> tuple[str, int, str | None]:
    """(file, line, version in a trailing comment) of the ``source`` the unit uses."""
    included = (r for r in unit.reads if r.endswith(".hcl") and r != _unit_file(unit))
    candidates = [_unit_file(unit), *sorted(included, key=lambda p: -p.count("/"))]
    for path in candidates:
        if path not in snap.paths:
            continue
        try:
            lines = find_source_lines(snap.text(path))
        except ToolingError:
            continue
        if lines:
            return path, lines[0].line, lines[0].comment_version
    return _unit_file(unit), unit.line_of.get("source", 1), None


def check_pins(model: Model, policy: CheckPolicy, snap: Snapshot) -> list[Violation]:
    """Module sources are remote, pinned to a tag (or a SHA with a ``# vX.Y.Z`` comment), and allowed."""
    out: list[Violation] = []
    for path in model.order:
        unit = model.units[path]
        if unit.source is None:
            out.append(
                Violation(
                    _unit_file(unit),
                    1,
                    "pin-no-source",
                    f"{unit.path} pins no module (no terraform {{ source = ... }})",
                    'add terraform { source = "git::https://…/MODULE.git//PATH?ref=vX.Y.Z" }',
                )
            )
            continue
        file, line, comment_version = _source_site(unit, snap)
        source = parse_source(unit.source)
        if unit.source == "<unresolved>" or source.kind == "unknown":
            out.append(
                Violation(
                    file,
                    line,
                    "pin-missing-ref",
                    f"the module source of {unit.path} cannot be read statically ({source.note or unit.source})",
                    'write the source as a literal (or a local holding one): "git::https://…?ref=vX.Y.Z"',
                )
            )
            continue
        if source.kind == "local":
            out.append(
                Violation(
                    file,
                    line,
                    "pin-local-source",
                    f"{unit.path} uses a local module path {unit.source!r}: its version is whatever the checkout holds",
                    "publish the module in its own repository, tag it, and pin the tag (…//PATH?ref=vX.Y.Z)",
                )
            )
            continue
        ref = source.ref
        if ref is None:
            out.append(
                Violation(
                    file,
                    line,
                    "pin-missing-ref",
                    f"{unit.path} does not pin its module: {unit.source!r} has no ?ref= (it follows the default branch)",
                    "append ?ref=vX.Y.Z (a release tag) to the source",
                )
            )
        elif is_commit_sha(ref):
            if comment_version is None:
                out.append(
                    Violation(
                        file,
                        line,
                        "pin-sha-comment",
                        f"{unit.path} pins commit {ref[:12]}… without saying which version it is",
                        f'add the version as a comment on the same line: source = "…?ref={ref}" # vX.Y.Z',
                    )
                )
        elif parse_version(ref) is None:
            what = "a branch" if is_branch_name(ref) else "not a version tag"
            out.append(
                Violation(
                    file,
                    line,
                    "pin-branch",
                    f"{unit.path} pins ?ref={ref}, {what}: it moves, so the same commit can plan differently tomorrow",
                    "pin a release tag (?ref=vX.Y.Z) or a full commit SHA with a # vX.Y.Z comment",
                )
            )
        identity = source.identity
        if (
            identity is not None
            and policy.allowed_module_sources
            and not any(fnmatch.fnmatchcase(identity, p) for p in policy.allowed_module_sources)
        ):
            out.append(
                Violation(
                    file,
                    line,
                    "module-allowlist",
                    f"{unit.path} uses module repository {identity}, which is not in allowed_module_sources "
                    f"({', '.join(policy.allowed_module_sources)})",
                    "use a module from an allowed repository, or add the repository to [check] allowed_module_sources in policy.toml (reviewed)",
                )
            )
    return out


# --------------------------------------------------------------------------- layers


def _executor_site(unit: Unit, snap: Snapshot) -> tuple[str, int]:
    if "executor" in unit.line_of:
        return _unit_file(unit), unit.line_of["executor"]
    included = sorted(
        (r for r in unit.reads if r.endswith(".hcl") and r != _unit_file(unit) and r in snap.paths),
        key=lambda p: -p.count("/"),
    )
    for path in included:
        try:
            entry = _locals_of(snap.body(path)).get("executor")
        except hcl.HclSyntaxError:
            continue
        if entry is not None:
            return path, int(entry[1])
    return _unit_file(unit), 1


def _read_line(unit: Unit, read: str, snap: Snapshot) -> int:
    """The line of the unit file that names ``read`` (as written relative to the unit, or its tail)."""
    path = _unit_file(unit)
    text = snap.text(path) if path in snap.paths else ""
    target = read.rstrip("/")
    parts = target.split("/")
    for needle in (posixpath.relpath(target, unit.path), "/".join(parts[-2:]), parts[-1]):
        if needle in text:
            return _line_of_text(text, needle)
    return 1


def check_layers(model: Model, policy: CheckPolicy, snap: Snapshot) -> list[Violation]:
    """Each unit is in a declared layer, runs on that layer's executor, and depends only on
    (and reads only from) the layers its layer may depend on."""
    out: list[Violation] = []
    declared = ", ".join(f"{layer.path} ({layer.name})" for layer in policy.layers) or "none"
    for path in model.order:
        unit = model.units[path]
        layer = policy.layer_of(unit.path)
        if layer is None:
            out.append(
                Violation(
                    _unit_file(unit),
                    1,
                    "layer-unknown",
                    f"{unit.path} is in no layer declared in policy.toml (declared: {declared})",
                    "move the unit into a layer's folder, or declare its layer under [check.layers] in policy.toml",
                )
            )
            continue
        if unit.executor != layer.executor:
            file, line = _executor_site(unit, snap)
            fix = (
                f'remove the executor override (the tier file sets it) or set executor = "{layer.executor}"'
                if file == _unit_file(unit)
                else f'set executor = "{layer.executor}" in {file}'
            )
            out.append(
                Violation(
                    file,
                    line,
                    "executor-layer",
                    f"{unit.path} runs on executor {unit.executor!r}, but layer {layer.name} ({layer.path}) runs on "
                    f"{layer.executor!r}",
                    f"{fix}; or move the unit to the layer whose executor it needs",
                )
            )
        elif policy.executors and unit.executor not in policy.executors:
            file, line = _executor_site(unit, snap)
            out.append(
                Violation(
                    file,
                    line,
                    "executor-layer",
                    f"{unit.path} runs on executor {unit.executor!r}, which policy.toml does not declare "
                    f"(declared: {', '.join(policy.executors)})",
                    f"declare [executors.{unit.executor}] in policy.toml, or use a declared executor",
                )
            )
        for dep in unit.dependencies:
            line = unit.line_of.get(f"dependency:{dep}", 1)
            if dep not in model.units:
                out.append(
                    Violation(
                        _unit_file(unit),
                        line,
                        "dependency-missing",
                        f"{unit.path} depends on {dep}, which is not a unit",
                        "point config_path at an existing unit (after a move, update it to the unit's new folder)",
                    )
                )
                continue
            dep_layer = policy.layer_of(dep)
            if dep_layer is not None and dep_layer.name not in layer.may_depend_on:
                out.append(
                    Violation(
                        _unit_file(unit),
                        line,
                        "layer-dependency",
                        f"{unit.path} (layer {layer.name}) depends on {dep} (layer {dep_layer.name}), "
                        f"but {layer.name} may depend only on {', '.join(layer.may_depend_on)}",
                        f"remove the dependency (pass the value another way), or reverse it: let {dep_layer.name} read "
                        f"{layer.name}'s outputs if policy.toml allows that",
                    )
                )
        for read in unit.reads:
            read_layer = policy.layer_of(read.rstrip("/"))
            if (
                read_layer is None
                or read_layer.name == layer.name
                or read_layer.name in layer.may_depend_on
            ):
                continue
            out.append(
                Violation(
                    _unit_file(unit),
                    _read_line(unit, read, snap),
                    "layer-dependency",
                    f"{unit.path} (layer {layer.name}) reads {read}, a file of layer {read_layer.name}, "
                    f"but {layer.name} may depend only on {', '.join(layer.may_depend_on)}",
                    "read only files of the unit's own layer, the layers it may depend on, or shared files outside live/",
                )
            )
    return out


# --------------------------------------------------------------------------- bootstrap and CI

_BOOTSTRAP_PATH_RE = re.compile(
    r"(?<![\w.-])(?:\./|\$\{?\{?\s*(?:github\.workspace|GITHUB_WORKSPACE)\s*\}?\}?/)?bootstrap/[\w./-]*"
)
_CD_BOOTSTRAP_RE = re.compile(r"(?:^|[\s;&|(])(?:cd|pushd)\s+[\"']?(?:\./)?bootstrap\b")


def _strip_shell_comment(line: str) -> str:
    stripped = line.lstrip()
    if stripped.startswith("#"):
        return ""
    return re.split(r"\s#", line, maxsplit=1)[0]


def _bootstrap_refs(text: str) -> Iterator[tuple[int, str]]:
    """(line offset, what) for each reference to bootstrap/ in a script, comments ignored."""
    for i, raw in enumerate(text.splitlines()):
        line = _strip_shell_comment(raw)
        for match in _BOOTSTRAP_PATH_RE.finditer(line):
            target = match.group()
            if target.endswith(".md"):
                continue
            yield i, target
        cd = _CD_BOOTSTRAP_RE.search(line)
        if cd:
            yield i, cd.group().strip()


def _yaml_scalars(node: Any, keys: frozenset[str]) -> Iterator[tuple[str, Any]]:
    """(key, value node) for every mapping entry whose key is in ``keys``, anywhere below ``node``."""
    import yaml

    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, yaml.MappingNode):
            for key_node, value_node in current.value:
                if (
                    isinstance(value_node, yaml.ScalarNode)
                    and getattr(key_node, "value", None) in keys
                ):
                    yield key_node.value, value_node
                else:
                    stack.append(value_node)
        elif isinstance(current, yaml.SequenceNode):
            stack.extend(current.value)


def check_ci_never_runs_bootstrap(snap: Snapshot) -> list[Violation]:
    """Nothing under .github/ runs, uses or works in anything from bootstrap/."""
    import yaml

    out: list[Violation] = []
    for path in snap.under(".github"):
        if not path.endswith((".yml", ".yaml")):
            continue
        try:
            root = yaml.compose(snap.text(path))
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            what = "; ".join(
                str(x) for x in (getattr(exc, "context", None), getattr(exc, "problem", None)) if x
            )
            out.append(
                Violation(
                    path,
                    (mark.line + 1) if mark else 1,
                    "yaml-syntax",
                    f"YAML does not parse ({what or exc})",
                    "fix the YAML (actionlint and check-yaml show the same error)",
                )
            )
            continue
        if root is None:
            continue
        for key, node in _yaml_scalars(root, frozenset({"run", "uses", "working-directory"})):
            value = str(node.value)
            first = node.start_mark.line + (1 if node.style in ("|", ">") else 0)
            if key == "run":
                for offset, target in _bootstrap_refs(value):
                    out.append(
                        Violation(
                            path,
                            first + offset + 1,
                            "ci-runs-bootstrap",
                            f"a workflow step runs {target}: bootstrap/ is manual and never runs in CI",
                            "remove the step; run bootstrap by hand from an administrator's shell (bootstrap/README.md)",
                        )
                    )
            elif re.match(r"^(\./)?bootstrap(/|$)", value.strip()):
                out.append(
                    Violation(
                        path,
                        node.start_mark.line + 1,
                        "ci-runs-bootstrap",
                        f"{key}: {value.strip()} runs code from bootstrap/ in CI",
                        "remove it; bootstrap/ holds manual steps only (bootstrap/README.md)",
                    )
                )
    return out


_CI_WORD = re.compile(r"\bCI\b")


def check_bootstrap_guard(snap: Snapshot) -> list[Violation]:
    """Every bootstrap entry point (executable, or a script with a shebang) refuses to run in CI."""
    out: list[Violation] = []
    for path in snap.under("bootstrap"):
        text = (
            snap.text(path)
            if (path in snap.executable or path.endswith((".sh", ".py", ".bash")))
            else ""
        )
        if not text or not (path in snap.executable or text.startswith("#!")):
            continue
        code = "\n".join(_strip_shell_comment(line) for line in text.splitlines())
        if "GITHUB_ACTIONS" not in code or not _CI_WORD.search(code):
            out.append(
                Violation(
                    path,
                    1,
                    "bootstrap-ci-guard",
                    "this bootstrap entry point does not refuse to run when CI or GITHUB_ACTIONS is set",
                    "start it with the guard the other scripts use (refuse_in_ci in seed-secrets.sh, ci_variable in "
                    "bootstrap/bootstrap): exit 2 when CI or GITHUB_ACTIONS is set to a value other than '', false or 0",
                )
            )
    return out


# --------------------------------------------------------------------------- tool versions

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


def check_tool_versions(policy: CheckPolicy, snap: Snapshot) -> list[Violation]:
    """The tools are pinned in .tool-versions only; no other file pins a different version."""
    out: list[Violation] = []
    pins: dict[str, tuple[str, int]] = {}
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
    for lineno, raw in enumerate(snap.text(TOOL_VERSIONS_FILE).splitlines(), start=1):
        fields = raw.split("#", 1)[0].split()
        if len(fields) >= 2:
            pins.setdefault(fields[0], (fields[1], lineno))
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
        elif not re.fullmatch(r"\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?", pins[tool][0]):
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


# --------------------------------------------------------------------------- all together


def check_all(
    model: Model | None,
    policy: CheckPolicy,
    snap: Snapshot,
    apps: Sequence[AppWorkspace] = (),
) -> list[Violation]:
    """Every rule; ``model`` is None when the HCL did not parse (model rules are skipped)."""
    found: list[Violation] = []
    if model is not None:
        found += check_state_keys(model, policy, snap)
        found += check_pins(model, policy, snap)
        found += check_layers(model, policy, snap)
    found += check_app_workspaces(model, policy, apps)
    found += check_configuration_only(model, policy, snap)
    found += check_ci_never_runs_bootstrap(snap)
    found += check_bootstrap_guard(snap)
    found += check_tool_versions(policy, snap)
    return sorted(set(found))
