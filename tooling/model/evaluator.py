"""The Terragrunt evaluator: one unit's configuration, evaluated the way Terragrunt does.

Path functions are evaluated in the context of the *unit*, even inside an
included file; every file the configuration reads is recorded.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tooling.errors import ToolingError
from tooling.model.exprs import (
    PURE_FUNCTIONS,
    READ_FUNCTIONS,
    UNKNOWN,
    binary,
    locals_exprs,
    norm,
    to_str,
)
from tooling.model.hcl import Body, Expr
from tooling.model.units import UNIT_FILE

if TYPE_CHECKING:
    from tooling.model.loader import Loader


@dataclass
class ConfigFile:
    path: str  # repo-relative
    body: Body
    locals_cache: dict[str, Any] = field(default_factory=dict)


class UnitEvaluator:
    """Evaluates one unit's configuration, recording every file it reads."""

    def __init__(self, loader: Loader, unit_dir: str) -> None:
        self.loader = loader
        self.unit_dir = unit_dir  # repo-relative
        self.reads: dict[str, None] = {}
        self.includes: dict[str, ConfigFile] = {}
        self._evaluating: set[tuple[str, str]] = set()

    # -- paths
    def abs(self, rel: str) -> str:
        return f"{self.loader.root_posix}/{rel}" if rel not in ("", ".") else self.loader.root_posix

    def rel(self, path: str) -> str:
        """Repo-relative form of an absolute or unit-relative path."""
        if not path.startswith("/"):
            return norm(f"{self.unit_dir}/{path}")
        prefix = self.loader.root_prefix
        if path.startswith(prefix):
            return norm(path[len(prefix) :])
        return norm(posixpath.relpath(norm(path), self.loader.root_posix))

    def read(self, rel: str) -> None:
        self.reads[rel] = None

    # -- functions
    def call(self, name: str, args: list[Any], file: ConfigFile) -> Any:
        fn = getattr(self, f"fn_{name}", None)
        if fn is not None:
            return fn(args, file)
        if name in READ_FUNCTIONS and args and isinstance(args[0], str):
            self.read(self.rel(args[0]))
            return UNKNOWN
        pure = PURE_FUNCTIONS.get(name)
        if pure is not None and not any(a is UNKNOWN for a in args):
            try:
                return pure(*args)
            except Exception:
                return UNKNOWN
        return UNKNOWN

    def fn_find_in_parent_folders(self, args: list[Any], file: ConfigFile) -> Any:
        name = args[0] if args else "root.hcl"
        if not isinstance(name, str):
            return UNKNOWN
        found = self.loader.find_up(posixpath.dirname(self.unit_dir), name)
        if found is not None:
            self.read(found)
            return self.abs(found)
        if len(args) > 1:
            return args[1]
        raise ToolingError(
            f"{file.path}: find_in_parent_folders({name!r}) finds nothing above {self.unit_dir}. "
            "Create the file or fix the name."
        )

    def fn_get_terragrunt_dir(self, args: list[Any], file: ConfigFile) -> Any:
        return self.abs(self.unit_dir)

    def fn_get_original_terragrunt_dir(self, args: list[Any], file: ConfigFile) -> Any:
        return self.abs(self.unit_dir)

    def fn_get_parent_terragrunt_dir(self, args: list[Any], file: ConfigFile) -> Any:
        return self.abs(posixpath.dirname(file.path))

    def fn_path_relative_to_include(self, args: list[Any], file: ConfigFile) -> Any:
        target = self._include_dir(args, file)
        return posixpath.relpath(self.unit_dir, target) if target is not None else "."

    def fn_path_relative_from_include(self, args: list[Any], file: ConfigFile) -> Any:
        target = self._include_dir(args, file)
        return posixpath.relpath(target, self.unit_dir) if target is not None else "."

    def _include_dir(self, args: list[Any], file: ConfigFile) -> str | None:
        if args and isinstance(args[0], str) and args[0] in self.includes:
            return posixpath.dirname(self.includes[args[0]].path)
        if file.path != posixpath.join(self.unit_dir, UNIT_FILE):
            return posixpath.dirname(file.path)
        if len(self.includes) == 1:
            return posixpath.dirname(next(iter(self.includes.values())).path)
        return None

    def fn_get_repo_root(self, args: list[Any], file: ConfigFile) -> Any:
        return self.loader.root_posix

    def fn_get_path_from_repo_root(self, args: list[Any], file: ConfigFile) -> Any:
        return self.unit_dir

    def fn_get_path_to_repo_root(self, args: list[Any], file: ConfigFile) -> Any:
        return posixpath.relpath(".", self.unit_dir)

    def fn_get_env(self, args: list[Any], file: ConfigFile) -> Any:
        # The model must not depend on who runs it: use the documented default.
        return args[1] if len(args) > 1 else UNKNOWN

    def fn_read_terragrunt_config(self, args: list[Any], file: ConfigFile) -> Any:
        if not args or not isinstance(args[0], str):
            return UNKNOWN
        rel = self.rel(args[0])
        if not self.loader.tree.exists(rel):
            if len(args) > 1:
                return args[1]
            raise ToolingError(f"{file.path}: read_terragrunt_config: {rel} does not exist")
        self.read(rel)
        target = self.loader.file(rel)
        self.scan_reads(target)
        return {
            "locals": self.all_locals(target),
            "inputs": self.attr(target, target.body, "inputs"),
        }

    def fn_try(self, args: list[Any], file: ConfigFile) -> Any:
        return next((a for a in args if a is not UNKNOWN), UNKNOWN)

    # -- expressions
    def eval(self, expr: Expr, file: ConfigFile) -> Any:
        kind = expr[0]
        if kind == "lit":
            return expr[1]
        if kind == "tmpl":
            parts = [self.eval(p, file) for p in expr[1]]
            if any(p is UNKNOWN or isinstance(p, dict | list) for p in parts):
                return UNKNOWN
            return "".join(to_str(p) for p in parts)
        if kind == "var":
            root, keys = expr[1], expr[2]
            if root in ("local", "include") and keys:
                return self.traverse(self.variable(root, str(keys[0]), file), keys[1:], file)
            return UNKNOWN
        if kind == "post":
            keys = [k if isinstance(k, str | int) else self.eval(k, file) for k in expr[2]]
            return self.traverse(self.eval(expr[1], file), keys, file)
        if kind == "call":
            args = [self.eval(a, file) for a in expr[2]]
            return self.call(expr[1], args, file)
        if kind == "obj":
            out: dict[str, Any] = {}
            for key_expr, value_expr in expr[1]:
                key = self.eval(key_expr, file)
                out[str(key)] = self.eval(value_expr, file)
            return out
        if kind == "tup":
            return [self.eval(e, file) for e in expr[1]]
        if kind == "cond":
            cond = self.eval(expr[1], file)
            if cond is UNKNOWN:
                return UNKNOWN
            return self.eval(expr[2] if cond else expr[3], file)
        if kind == "bin":
            return binary(expr[1], self.eval(expr[2], file), self.eval(expr[3], file))
        return UNKNOWN

    def traverse(self, value: Any, keys: Sequence[Any], file: ConfigFile) -> Any:
        for key in keys:
            if value is UNKNOWN:
                return UNKNOWN
            if isinstance(key, tuple):
                key = self.eval(key, file)
            try:
                value = value[key]
            except (KeyError, IndexError, TypeError):
                return UNKNOWN
        return value

    def variable(self, root: str, name: str, file: ConfigFile) -> Any:
        if root == "local":
            return self.local(file, name)
        if root == "include":
            inc = self.includes.get(name)
            if inc is None:
                return UNKNOWN
            return {"locals": self.all_locals(inc), "inputs": UNKNOWN}
        return UNKNOWN

    def local(self, file: ConfigFile, name: str) -> Any:
        if name in file.locals_cache:
            return file.locals_cache[name]
        key = (file.path, name)
        if key in self._evaluating:
            raise ToolingError(f"{file.path}: local.{name} refers to itself (a cycle of locals)")
        exprs = locals_exprs(file.body)
        if name not in exprs:
            return UNKNOWN
        self._evaluating.add(key)
        try:
            value = self.eval(exprs[name][0], file)
        finally:
            self._evaluating.discard(key)
        file.locals_cache[name] = value
        return value

    def all_locals(self, file: ConfigFile) -> dict[str, Any]:
        return {name: self.local(file, name) for name in locals_exprs(file.body)}

    def attr(self, file: ConfigFile, body: Body, name: str) -> Any:
        entry = body["a"].get(name)
        return self.eval(entry[0], file) if entry else None

    def scan_reads(self, file: ConfigFile) -> None:
        """Evaluate every read function (and find_in_parent_folders) anywhere in ``file``."""
        for expr in self.loader.read_calls(file):
            if expr[1] == "read_terragrunt_config" or expr[1] == "find_in_parent_folders":
                self.eval(expr, file)
            elif expr[2]:
                arg = self.eval(expr[2][0], file)
                if isinstance(arg, str):
                    self.read(self.rel(arg))
