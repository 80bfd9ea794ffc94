"""The Terragrunt evaluator: one unit's configuration, evaluated the way Terragrunt does.

Terragrunt evaluates every function against the configuration being parsed
(its ``TerragruntConfigPath``): the *unit* for the unit's own file and the
files it includes, the *read file* inside ``read_terragrunt_config()``. A
:class:`Scope` is that configuration; each :class:`ConfigFile` carries the
scope it is evaluated in. Every file the configuration reads is recorded.
"""

from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Sequence
from typing import Any

from tooling.errors import ToolingError
from tooling.model.configfiles import ConfigFile, Loader, Scope
from tooling.model.exprs import (
    PURE_FUNCTIONS,
    READ_FUNCTIONS,
    UNKNOWN,
    Partial,
    binary,
    blocks_of,
    locals_exprs,
    mentions_reads,
    norm,
    to_str,
)
from tooling.model.filefuncs import FileFunctions
from tooling.model.gitpaths import from_top, in_repository, top_level
from tooling.model.hcl import Body, Expr

#: what ``find_in_parent_folders()`` looks for without an argument (Terragrunt's rule)
DEFAULT_PARENT_FILE = "terragrunt.hcl"
#: the file ``terragrunt stack generate`` writes beside a generated unit: its ``values``
VALUES_FILE = "terragrunt.values.hcl"


#: the start of the error of a unit whose files read each other with read_terragrunt_config():
#: Terragrunt loops on such a unit without end, so it must never run there
READ_CYCLE = "read_terragrunt_config() cycle"


class UnitEvaluator(FileFunctions):
    """Evaluates one unit's configuration, recording every file it reads."""

    def __init__(self, loader: Loader, unit_dir: str) -> None:
        self.loader = loader
        self.unit_dir = unit_dir  # repo-relative
        self.reads: dict[str, None] = {}
        #: what the model could not work out: the unit is then affected by any change
        self.problems: list[str] = []
        self._evaluating: set[tuple[str, str]] = set()
        #: the files read_terragrunt_config() is reading, outermost first (a cycle is an error)
        self._reading: list[str] = []
        self._loop: list[dict[str, Any]] = []
        self._values: Any = None
        #: inside try()/can(): a missing attribute of a known object is an error they catch
        self._guards = 0

    # -- paths
    def abs(self, rel: str) -> str:
        return f"{self.loader.root_posix}/{rel}" if rel not in ("", ".") else self.loader.root_posix

    def rel(self, path: str, base: str | None = None) -> str:
        """Repo-relative form of an absolute path, or of one relative to ``base`` (the unit)."""
        if not path.startswith("/"):
            return norm(f"{self.unit_dir if base is None else base}/{path}")
        prefix = self.loader.root_prefix
        if path.startswith(prefix):
            return norm(path[len(prefix) :])
        return norm(posixpath.relpath(norm(path), self.loader.root_posix))

    def read(self, rel: str) -> None:
        """Record that the unit reads ``rel`` (a folder ends in ``/``), and where a symbolic
        link on its way points: a change to the link's target is a change to what is read."""
        self.reads[rel] = None
        bare = rel.rstrip("/")
        real = self.loader.tree.realpath(bare) if bare else bare
        if real != bare:
            self.reads[real + rel[len(bare) :]] = None

    def unresolved(self, file: ConfigFile, what: str) -> None:
        self.problems.append(f"{file.path}: cannot work out {what}")

    def refuse_outside(self, rel: str, file: ConfigFile, what: str, line: int = 0) -> None:
        """Refuse (recorded as read first: the rules name it) a configuration ``rel`` that
        ``what`` in ``file`` parses outside the git repository (Terragrunt would parse a
        file no review of the repository sees), or one written in JSON (the model reads
        HCL; the rules read its templates: :func:`tooling.model.hclscan.json_templates`)."""
        where = f"{file.path}:{line}" if line else file.path
        if rel.startswith("../") and not in_repository(rel, self.loader.tree.git_prefix):
            self.reads[rel] = None
            raise ToolingError(
                f"{where}: {what} parses {rel}, outside the repository: no review or scan "
                "of the repository sees it. Move it into the repository"
            )
        if rel.endswith(".json"):
            self.reads[rel] = None
            raise ToolingError(
                f"{where}: {what} parses {rel}, a configuration in JSON, which the model does "
                "not evaluate: write it in HCL"
            )

    # -- functions
    def call(self, name: str, args: list[Any], file: ConfigFile) -> Any:
        fn = getattr(self, f"fn_{name}", None)
        if fn is not None:
            return fn(args, file)
        if name in READ_FUNCTIONS:
            if args and isinstance(args[0], str):
                self.read(self.rel(args[0], self.base_of(name, file)))
            else:
                self.unresolved(file, f"the file {name}() reads")
            return UNKNOWN
        pure = PURE_FUNCTIONS.get(name)
        if pure is not None and not any(a is UNKNOWN for a in args):
            try:
                return pure(*args)
            except Exception:
                return UNKNOWN
        return UNKNOWN

    def fn_find_in_parent_folders(self, args: list[Any], file: ConfigFile) -> Any:
        name = args[0] if args else DEFAULT_PARENT_FILE
        if not isinstance(name, str):
            self.unresolved(file, "the name find_in_parent_folders() looks for")
            return UNKNOWN
        # Terragrunt starts in the folder above the configuration being parsed
        found = self.loader.find_up(posixpath.dirname(file.scope.dir), name)
        if found is not None:
            if not self.loader.tree.is_dir(found):
                self.read(found)
            return self.abs(found)
        above = self.loader.find_above_repository(name)
        if above is not None:
            # Terragrunt looks on above git's top level: what it would find there is outside
            self.refuse_outside(above, file, f"find_in_parent_folders({name!r})")
        if len(args) > 1:
            return args[1]
        raise ToolingError(
            f"{file.path}: find_in_parent_folders({name!r}) finds nothing above {file.scope.dir}. "
            "Create the file or fix the name."
        )

    def fn_get_terragrunt_dir(self, args: list[Any], file: ConfigFile) -> Any:
        return self.abs(file.scope.dir)

    def fn_get_original_terragrunt_dir(self, args: list[Any], file: ConfigFile) -> Any:
        return self.abs(self.unit_dir)

    def fn_get_parent_terragrunt_dir(self, args: list[Any], file: ConfigFile) -> Any:
        target = self._include_dir(args, file)
        return self.abs(target if target is not None else posixpath.dirname(file.path))

    def fn_path_relative_to_include(self, args: list[Any], file: ConfigFile) -> Any:
        target = self._include_dir(args, file)
        return posixpath.relpath(file.scope.dir, target) if target is not None else "."

    def fn_path_relative_from_include(self, args: list[Any], file: ConfigFile) -> Any:
        target = self._include_dir(args, file)
        return posixpath.relpath(target, file.scope.dir) if target is not None else "."

    def _include_dir(self, args: list[Any], file: ConfigFile) -> str | None:
        includes = file.scope.includes
        if args and isinstance(args[0], str) and args[0] in includes:
            return posixpath.dirname(includes[args[0]].path)
        if file.path != file.scope.config:
            return posixpath.dirname(file.path)
        if len(includes) == 1:
            return posixpath.dirname(next(iter(includes.values())).path)
        return None

    # Terragrunt's repository root is git's top level, which may be above the project root
    # (policy.toml in a sub-folder such as infra/): tooling.model.gitpaths translates
    def fn_get_repo_root(self, args: list[Any], file: ConfigFile) -> Any:
        return top_level(self.loader.root_posix, self.loader.tree.git_prefix)

    def fn_get_path_from_repo_root(self, args: list[Any], file: ConfigFile) -> Any:
        return from_top(file.scope.dir, self.loader.tree.git_prefix)

    def fn_get_path_to_repo_root(self, args: list[Any], file: ConfigFile) -> Any:
        return posixpath.relpath(".", from_top(file.scope.dir, self.loader.tree.git_prefix))

    def fn_get_env(self, args: list[Any], file: ConfigFile) -> Any:
        # The model must not depend on who runs it: use the documented default.
        return args[1] if len(args) > 1 else UNKNOWN

    def fn_mark_as_read(self, args: list[Any], file: ConfigFile) -> Any:
        if not args or not isinstance(args[0], str):
            self.unresolved(file, "the file mark_as_read() marks")
            return UNKNOWN
        self.read(self.rel(args[0], file.scope.dir))
        return args[0]

    def fn_mark_glob_as_read(self, args: list[Any], file: ConfigFile) -> Any:
        if not args or not isinstance(args[0], str):
            self.unresolved(file, "the pattern mark_glob_as_read() marks")
            return UNKNOWN
        pattern = self.rel(args[0], file.scope.dir)
        fixed = pattern.split("*", 1)[0].split("?", 1)[0].split("[", 1)[0]
        base = fixed.rsplit("/", 1)[0] if "/" in fixed else ""
        matched = [p for p in self.loader.tree.files_under(base) if _glob_match(p, pattern)]
        for path in matched:
            self.read(path)
        return [self.abs(p) for p in matched]

    def fn_read_terragrunt_config(self, args: list[Any], file: ConfigFile) -> Any:
        if not args or not isinstance(args[0], str):
            self.unresolved(file, "the file read_terragrunt_config() reads")
            return UNKNOWN
        rel = self.rel(args[0], file.scope.dir)
        self.refuse_outside(rel, file, f"read_terragrunt_config({args[0]!r})")
        if not self.loader.tree.exists(rel) or self.loader.tree.is_dir(rel):
            if len(args) > 1:
                return args[1]
            raise ToolingError(f"{file.path}: read_terragrunt_config: {rel} does not exist")
        self.read(rel)
        if rel in self._reading or rel == file.path:
            chain = (
                " -> ".join([*self._reading[self._reading.index(rel) :], rel])
                if rel in self._reading
                else f"{rel} -> {rel}"
            )
            raise ToolingError(
                f"{file.path}: {READ_CYCLE}: {chain}. "
                "Remove one of the reads (Terragrunt cannot evaluate it either)"
            )
        self._reading.append(rel)
        try:
            # the read file is parsed as a configuration of its own: its paths, its includes
            target = self.loader.file(rel, Scope(rel))
            self.include_all(target)
            for each in (target, *target.scope.includes.values()):
                self.scan_reads(each)
            return Partial(
                locals=self.all_locals(target),
                inputs=UNKNOWN,
                dependency=self.dependency_paths(target),
            )
        finally:
            self._reading.pop()

    def include_all(self, config: ConfigFile) -> None:
        """Resolve the include blocks of ``config`` into its scope (their reads recorded)."""
        for _btype, labels, inner, line in blocks_of(config.body, "include"):
            name = labels[0] if labels else ""
            path_entry = inner["a"].get("path")
            if path_entry is None:
                raise ToolingError(f"{config.path}:{line}: include {name!r} has no path")
            target = self.eval(path_entry[0], config)
            if not isinstance(target, str):
                raise ToolingError(
                    f"{config.path}:{line}: cannot work out the path of include {name!r}"
                )
            rel = self.rel(target, config.scope.dir)
            self.refuse_outside(rel, config, f"include {name!r} ({target})", line)
            if not self.loader.tree.exists(rel):
                raise ToolingError(
                    f"{config.path}:{line}: include {name!r} points at {rel}, which does not exist"
                )
            self.read(rel)
            config.scope.includes[name] = self.loader.file(rel, config.scope)

    def dependency_paths(self, config: ConfigFile) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for _b, labels, inner, _line in blocks_of(config.body, "dependency"):
            entry = inner["a"].get("config_path")
            try:
                value = self.eval(entry[0], config) if entry else UNKNOWN
            except ToolingError:
                value = UNKNOWN
            out[labels[0] if labels else ""] = Partial(config_path=value, outputs=UNKNOWN)
        return out

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
            return self.traverse(self.variable(root, keys, file), keys[1:], file)
        if kind == "post":
            keys = [k if isinstance(k, str | int) else self.eval(k, file) for k in expr[2]]
            inner = expr[1]
            if inner[0] == "var":
                # ``local.m["k"]``: the variable's own keys and the ones after it are one path
                whole = [*inner[2], *keys]
                if whole:
                    value = self.variable(inner[1], whole, file)
                    return self.traverse(value, whole[1:], file)
            return self.traverse(self.eval(inner, file), keys, file)
        if kind == "call":
            if expr[1] in ("try", "can"):
                return self.guarded(expr[1], expr[2], file)
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
                # either branch may be taken: see the reads of both
                self.eval(expr[2], file)
                self.eval(expr[3], file)
                return UNKNOWN
            return self.eval(expr[2] if cond else expr[3], file)
        if kind == "bin":
            return binary(expr[1], self.eval(expr[2], file), self.eval(expr[3], file))
        if kind == "for":
            return self.for_expr(expr, file)
        return UNKNOWN

    def guarded(self, name: str, args: list[Expr], file: ConfigFile) -> Any:
        """``try()``/``can()``: an argument that fails is skipped, as Terragrunt does."""
        for arg in args:
            self._guards += 1
            try:
                value = self.eval(arg, file)
            except ToolingError:
                if name == "can":
                    return False
                continue
            finally:
                self._guards -= 1
            if name == "can":
                return True if value is not UNKNOWN else UNKNOWN
            return value
        return False if name == "can" else UNKNOWN

    def for_expr(self, expr: Expr, file: ConfigFile) -> Any:
        _kind, names, coll_expr, key_expr, value_expr, cond_expr = expr
        coll = self.eval(coll_expr, file)
        if isinstance(coll, dict):
            items: list[tuple[Any, Any]] = list(coll.items())
        elif isinstance(coll, list):
            items = list(enumerate(coll))
        else:
            if mentions_reads(expr):
                self.unresolved(file, "the collection of a for expression that reads files")
            return UNKNOWN
        tuple_out: list[Any] = []
        obj_out: dict[str, Any] = {}
        for key, value in items:
            frame = dict(zip(names, (key, value) if len(names) == 2 else (value,), strict=False))
            self._loop.append(frame)
            try:
                if cond_expr is not None:
                    cond = self.eval(cond_expr, file)
                    if cond is False:
                        continue
                result = self.eval(value_expr, file)
                if key_expr is None:
                    tuple_out.append(result)
                else:
                    obj_out[to_str(self.eval(key_expr, file))] = result
            finally:
                self._loop.pop()
        return tuple_out if key_expr is None else obj_out

    def traverse(self, value: Any, keys: Sequence[Any], file: ConfigFile) -> Any:
        for key in keys:
            if value is UNKNOWN:
                return UNKNOWN
            if isinstance(key, tuple):
                key = self.eval(key, file)
            try:
                value = value[key]
            except (KeyError, IndexError, TypeError):
                if self._guards and not isinstance(value, Partial):
                    raise ToolingError(f"{file.path}: no attribute or index {key!r}") from None
                return UNKNOWN
        return value

    def variable(self, root: str, keys: Sequence[Any], file: ConfigFile) -> Any:
        """The value of ``root.keys[0]`` (the rest of ``keys`` is traversed by the caller)."""
        for frame in reversed(self._loop):
            if root in frame:
                return self.traverse(frame[root], keys[:1], file)
        if not keys:
            return UNKNOWN
        name = str(keys[0])
        if root == "local":
            return self.local(file, name)
        if root == "include":
            inc = file.scope.includes.get(name)
            if inc is None:
                return UNKNOWN
            return Partial(
                locals=self.all_locals(inc),
                inputs=UNKNOWN,
                dependency=self.dependency_paths(inc),
            )
        if root == "feature":
            return self.feature(file, name)
        if root == "values":
            return self.traverse(self.values(), [name], file)
        return UNKNOWN

    def feature(self, file: ConfigFile, name: str) -> Any:
        """``feature.NAME``: its ``default`` (a flag set on the command line is not the model's)."""
        scope = file.scope
        for config in (self.loader.file(scope.config, scope), *scope.includes.values()):
            for _b, labels, inner, _line in blocks_of(config.body, "feature"):
                if labels and labels[0] == name and "default" in inner["a"]:
                    return {"value": self.eval(inner["a"]["default"][0], config)}
        return UNKNOWN

    def values(self) -> Any:
        """``values.*``: what a stack passed to the unit, from the generated values file."""
        if self._values is None:
            path = norm(f"{self.unit_dir}/{VALUES_FILE}")
            self._values = UNKNOWN
            if self.loader.tree.exists(path):
                # in the unit's own folder: the folder rule covers it (Terragrunt does not list it)
                values_file = self.loader.file(path, Scope(path))
                self._values = {
                    name: self.eval(entry[0], values_file)
                    for name, entry in values_file.body["a"].items()
                }
        return self._values

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
        saved, self._loop = self._loop, []
        try:
            value = self.eval(exprs[name][0], file)
        finally:
            self._evaluating.discard(key)
            self._loop = saved
        file.locals_cache[name] = value
        return value

    def all_locals(self, file: ConfigFile) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in locals_exprs(file.body):
            try:
                out[name] = self.local(file, name)
            except ToolingError:
                out[name] = UNKNOWN  # only an error if used, as in Terragrunt's try()
        return out

    def attr(self, file: ConfigFile, body: Body, name: str) -> Any:
        entry = body["a"].get(name)
        return self.eval(entry[0], file) if entry else None

    def scan_reads(self, file: ConfigFile) -> None:
        """Evaluate every read function (and find_in_parent_folders) anywhere in ``file``."""
        for expr, guarded in self.loader.read_calls(file):
            try:
                self.eval(expr, file)
            except ToolingError:
                if not guarded:
                    raise


def _glob_match(path: str, pattern: str) -> bool:
    """Go's ``filepath.Glob`` semantics: ``*`` stays within one folder."""
    parts, pattern_parts = path.split("/"), pattern.split("/")
    return len(parts) == len(pattern_parts) and all(
        fnmatch.fnmatchcase(p, q) for p, q in zip(parts, pattern_parts, strict=True)
    )


__all__ = ["DEFAULT_PARENT_FILE", "VALUES_FILE", "UnitEvaluator"]
