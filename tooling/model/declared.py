"""What the root file declares for one unit, worked out by the model: no Terragrunt process.

The guard compares a unit's working copy (its generated files) and the backend
OpenTofu recorded with what the root file (and the files ``[check.allowed_generate]``
lists) *declare* for that unit. Rendering a file that includes only those costs a
``terragrunt render`` per unit; this module evaluates them with the repository's
own evaluator instead, in the scope Terragrunt would use (the unit's folder), into
the shape ``terragrunt render --format json`` prints for the parts compared:
``generate`` blocks and the ``terraform`` block's hooks.

It answers only when it can be exact: a root file with any other block or
top-level attribute, a value the model cannot work out, or a file read while
evaluating, and it returns None (the caller renders with Terragrunt).
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tooling.errors import ToolingError
from tooling.model.configfiles import ConfigFile, Loader, Scope
from tooling.model.evaluator import UnitEvaluator
from tooling.model.exprs import UNKNOWN, blocks_of
from tooling.model.parsecache import ParseCache
from tooling.model.trees import WorkTree

#: the blocks of a declaring file this module reproduces; any other: None
_BLOCKS = frozenset({"locals", "generate", "terraform"})
_HOOK_BLOCKS = ("before_hook", "after_hook", "error_hook")
#: a hook's attributes as `terragrunt render` prints them (absent: null)
_HOOK_ATTRS = ("commands", "execute", "if", "run_on_error", "suppress_stdout", "working_dir")
_ERROR_HOOK_ATTRS = ("commands", "execute", "on_errors", "suppress_stdout", "working_dir")
#: a generate block's attributes and the defaults Terragrunt 1.1.3 renders
_GENERATE_DEFAULTS: dict[str, Any] = {
    "comment_prefix": "# ",
    "disable": False,
    "disable_signature": False,
    "hcl_fmt": None,
    "if_disabled": "skip",
    "mutable": None,
}
_GENERATE_ATTRS = frozenset({"path", "if_exists", "contents", *_GENERATE_DEFAULTS})


class _Env(UnitEvaluator):
    """The evaluator with ``get_env`` reading the environment Terragrunt runs with."""

    def __init__(self, loader: Loader, unit_dir: str, env: Mapping[str, str]) -> None:
        super().__init__(loader, unit_dir)
        self.env = env

    def fn_get_env(self, args: list[Any], file: ConfigFile) -> Any:
        if not args or not isinstance(args[0], str):
            return UNKNOWN
        if args[0] in self.env:
            return self.env[args[0]]
        return args[1] if len(args) > 1 else UNKNOWN  # Terragrunt fails without a default

    def fn_jsondecode(self, args: list[Any], file: ConfigFile) -> Any:
        if len(args) != 1 or not isinstance(args[0], str):
            return UNKNOWN
        try:
            return json.loads(args[0])
        except ValueError:
            return UNKNOWN  # Terragrunt fails on it: its render names the error


def _known(value: Any) -> bool:
    if value is UNKNOWN:
        return False
    if isinstance(value, dict):
        return all(_known(v) for v in value.values())
    if isinstance(value, list):
        return all(_known(v) for v in value)
    return True


def _render_value(value: Any) -> Any:
    """A value as the render's JSON carries it (numbers that are whole print as ints)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _hooks(ev: UnitEvaluator, file: ConfigFile, inner: dict[str, Any]) -> dict[str, Any] | None:
    out: dict[str, Any] = {b: {} for b in _HOOK_BLOCKS}
    for kind, labels, body, _line in inner["b"]:
        if kind not in _HOOK_BLOCKS or body["b"]:
            return None
        attrs = _ERROR_HOOK_ATTRS if kind == "error_hook" else _HOOK_ATTRS
        if not set(body["a"]) <= set(attrs) or len(labels) != 1:
            return None
        hook: dict[str, Any] = {a: _render_value(ev.attr(file, body, a)) for a in attrs}
        hook["name"] = labels[0]
        out[kind][labels[0]] = hook
    return out


def _generate(ev: UnitEvaluator, file: ConfigFile, body: dict[str, Any]) -> dict[str, Any] | None:
    if body["b"] or not set(body["a"]) <= _GENERATE_ATTRS:
        return None
    block = dict(_GENERATE_DEFAULTS)
    for name in body["a"]:
        block[name] = _render_value(ev.attr(file, body, name))
    return block


def declared(
    root: Path, unit_path: str, files: Sequence[str], env: Mapping[str, str], config_name: str
) -> dict[str, Any] | None:
    """What ``files`` (repository paths: the root file, then the allowlisted files, each
    included by a file ``config_name`` in the unit's folder) declare for the unit at
    ``unit_path``: ``{"generate": ..., "terraform": {hooks}}`` as rendered, or None when
    the model cannot be exact (the caller renders with Terragrunt then)."""
    try:
        return _declared(root, unit_path, files, env, config_name)
    except (ToolingError, RecursionError, ValueError, TypeError, KeyError, IndexError):
        return None


#: the declaring files parsed once per process for every unit (keyed by their bytes' SHA)
_PARSED = ParseCache(None)


def _declared(
    root: Path, unit_path: str, files: Sequence[str], env: Mapping[str, str], config_name: str
) -> dict[str, Any] | None:
    loader = Loader(WorkTree(root, ()), _PARSED)
    ev = _Env(loader, unit_path, env)
    scope = Scope(posixpath.join(unit_path, config_name))
    configs: list[ConfigFile] = []
    for i, rel in enumerate(files):
        config = loader.file(rel, scope)
        scope.includes["root" if i == 0 else f"allowed_{i - 1}"] = config
        configs.append(config)
    generate: dict[str, Any] = {}
    hooks: dict[str, Any] = {b: {} for b in _HOOK_BLOCKS}
    for config in configs:
        if config.body["a"] or any(b[0] not in _BLOCKS for b in config.body["b"]):
            return None
        for _kind, labels, body, _line in blocks_of(config.body, "generate"):
            block = _generate(ev, config, body)
            if block is None or len(labels) != 1:
                return None
            generate[labels[0]] = block  # a later include's block of that name wins
        for _kind, _labels, body, _line in blocks_of(config.body, "terraform"):
            if body["a"]:
                return None  # source, extra arguments...: rendered by Terragrunt
            found = _hooks(ev, config, body)
            if found is None:
                return None
            for kind in _HOOK_BLOCKS:
                hooks[kind].update(found[kind])
    out = {"generate": generate, "terraform": hooks}
    if ev.problems or set(ev.reads) - set(files) or not _known(out):
        return None
    return out
