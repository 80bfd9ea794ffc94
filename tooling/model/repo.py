"""The repository model: every unit under live/, what it reads, what it depends on.

Units are discovered from a :class:`Tree` (the working tree, or a git revision
read through ``git ls-tree``/``git cat-file``), their ``terragrunt.hcl`` and
every file they include or read are parsed (:mod:`tooling.model.hcl`), and the path
functions Terragrunt users write are evaluated the way Terragrunt evaluates
them: in the context of the *unit*, even inside an included file.

Everything here is pure over the tree's contents; the only I/O is reading
files through the :class:`Tree` and the parse cache.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from tooling.errors import ToolingError
from tooling.model.hcl import Body, Expr, ParseCache, blob_sha

UNIT_FILE = "terragrunt.hcl"
LIVE_DIR = "live"
MODEL_CACHE_VERSION = 5

#: the unit facts read from locals (unit first, then included files, last include first)
META_KEYS = ("tier", "executor", "gate", "plan_on_pr")

#: functions whose first argument is a file the unit reads
READ_FUNCTIONS = frozenset(
    {"file", "templatefile", "read_tfvars_file", "read_terragrunt_config", "sops_decrypt_file", "filebase64"}
)


class Tree(Protocol):
    """Read-only view of a repository's files at one revision (or the working tree)."""

    root: Path

    def exists(self, path: str) -> bool: ...

    def sha(self, path: str) -> str: ...

    def read(self, path: str) -> bytes: ...

    def unit_files(self) -> list[str]: ...

    def fingerprint(self) -> str: ...


@dataclass(frozen=True)
class Unit:
    """One Terragrunt unit, as plain data (``invoke units --json`` prints these)."""

    path: str
    tier: str
    executor: str
    gate: str
    plan_on_pr: bool
    source: str | None
    ref: str | None
    dependencies: tuple[str, ...]
    reads: tuple[str, ...]
    state_key: str | None
    state_bucket: str | None
    line_of: dict[str, int] = field(default_factory=dict, compare=False, hash=False)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("line_of")
        data["dependencies"] = list(self.dependencies)
        data["reads"] = list(self.reads)
        return data


@dataclass(frozen=True)
class Model:
    units: dict[str, Unit]
    order: tuple[str, ...]  # DAG order: dependencies first, ties by path

    def readers(self) -> dict[str, list[str]]:
        """File (or directory, ending in '/') -> units that read it."""
        index: dict[str, list[str]] = {}
        for unit in self.units.values():
            for read in unit.reads:
                index.setdefault(read, []).append(unit.path)
        return index

    def dependents(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {path: [] for path in self.units}
        for unit in self.units.values():
            for dep in unit.dependencies:
                out.setdefault(dep, []).append(unit.path)
        return out


# --------------------------------------------------------------------------- trees


_SKIP_DIRS = {".git", ".terragrunt-cache", ".terraform", ".iac", "__pycache__", ".venv", "node_modules"}


class WorkTree:
    """The files on disk under ``root`` (what ``--uncommitted`` and plans see)."""

    def __init__(self, root: Path, live: str = LIVE_DIR) -> None:
        self.root = root.resolve()
        self.live = live
        self._files: dict[str, Path] = {}
        self._shas: dict[str, str] = {}
        base = self.root / live
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS]
            rel = os.path.relpath(dirpath, self.root).replace(os.sep, "/")
            for name in filenames:
                self._files[f"{rel}/{name}"] = Path(dirpath, name)
        for entry in os.scandir(self.root):
            if entry.is_file():
                self._files[entry.name] = Path(entry.path)

    def exists(self, path: str) -> bool:
        if path in self._files:
            return True
        return not path.startswith(f"{self.live}/") and (self.root / path).exists()

    def read(self, path: str) -> bytes:
        try:
            return (self.root / path).read_bytes()
        except OSError as exc:
            raise ToolingError(f"{path}: cannot read: {exc.strerror}") from exc

    def sha(self, path: str) -> str:
        sha = self._shas.get(path)
        if sha is None:
            sha = self._shas[path] = blob_sha(self.read(path))
        return sha

    def unit_files(self) -> list[str]:
        return sorted(p for p in self._files if p.rsplit("/", 1)[-1] == UNIT_FILE)

    def fingerprint(self) -> str:
        digest = hashlib.sha1()
        for path in sorted(self._files):
            digest.update(path.encode())
            if path.endswith(".hcl"):
                digest.update(self.sha(path).encode())
        return digest.hexdigest()


class GitTree:
    """The files of one git revision: listed with ``ls-tree`` (only when needed), read in batches.

    The tree SHA is the fingerprint, so a cached model is found without listing
    a single file.
    """

    def __init__(
        self,
        root: Path,
        tree_sha: str,
        lister: Callable[[], Mapping[str, str]],
        reader: Callable[[list[str]], dict[str, bytes]],
    ) -> None:
        self.root = root.resolve()
        self._tree_sha = tree_sha
        self._lister = lister
        self._listed: dict[str, str] | None = None
        self._reader = reader
        self._blobs: dict[str, bytes] = {}

    @property
    def _entries(self) -> dict[str, str]:
        if self._listed is None:
            self._listed = dict(self._lister())  # path -> blob sha
        return self._listed

    def exists(self, path: str) -> bool:
        return path in self._entries

    def sha(self, path: str) -> str:
        try:
            return self._entries[path]
        except KeyError:
            raise ToolingError(f"{path}: not in the revision being read") from None

    def prefetch(self, paths: Iterable[str]) -> None:
        wanted = [self._entries[p] for p in paths if p in self._entries and self._entries[p] not in self._blobs]
        if wanted:
            self._blobs.update(self._reader(wanted))

    def read(self, path: str) -> bytes:
        sha = self.sha(path)
        if sha not in self._blobs:
            self._blobs.update(self._reader([sha]))
        return self._blobs[sha]

    def unit_files(self) -> list[str]:
        return sorted(p for p in self._entries if p.startswith(f"{LIVE_DIR}/") and p.rsplit("/", 1)[-1] == UNIT_FILE)

    def fingerprint(self) -> str:
        return self._tree_sha


# --------------------------------------------------------------------------- evaluation


class _Unknown:
    """A value the static evaluator cannot know (dependency outputs, env without default...)."""

    def __repr__(self) -> str:
        return "<unknown>"


UNKNOWN: Any = _Unknown()


def _norm(path: str) -> str:
    return posixpath.normpath(path)


@dataclass
class _File:
    path: str  # repo-relative
    body: Body
    locals_cache: dict[str, Any] = field(default_factory=dict)


class _UnitEvaluator:
    """Evaluates one unit's configuration, recording every file it reads."""

    def __init__(self, loader: _Loader, unit_dir: str) -> None:
        self.loader = loader
        self.unit_dir = unit_dir  # repo-relative
        self.reads: dict[str, None] = {}
        self.includes: dict[str, _File] = {}
        self._evaluating: set[tuple[str, str]] = set()

    # -- paths
    def abs(self, rel: str) -> str:
        return f"{self.loader.root_posix}/{rel}" if rel not in ("", ".") else self.loader.root_posix

    def rel(self, path: str) -> str:
        """Repo-relative form of an absolute or unit-relative path."""
        if not path.startswith("/"):
            return _norm(f"{self.unit_dir}/{path}")
        prefix = self.loader.root_prefix
        if path.startswith(prefix):
            return _norm(path[len(prefix) :])
        return _norm(posixpath.relpath(_norm(path), self.loader.root_posix))

    def read(self, rel: str) -> None:
        self.reads[rel] = None

    # -- functions
    def call(self, name: str, args: list[Any], file: _File) -> Any:
        fn = getattr(self, f"fn_{name}", None)
        if fn is not None:
            return fn(args, file)
        if name in READ_FUNCTIONS and args and isinstance(args[0], str):
            self.read(self.rel(args[0]))
            return UNKNOWN
        pure = _PURE_FUNCTIONS.get(name)
        if pure is not None and not any(a is UNKNOWN for a in args):
            try:
                return pure(*args)
            except Exception:
                return UNKNOWN
        return UNKNOWN

    def fn_find_in_parent_folders(self, args: list[Any], file: _File) -> Any:
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

    def fn_get_terragrunt_dir(self, args: list[Any], file: _File) -> Any:
        return self.abs(self.unit_dir)

    def fn_get_original_terragrunt_dir(self, args: list[Any], file: _File) -> Any:
        return self.abs(self.unit_dir)

    def fn_get_parent_terragrunt_dir(self, args: list[Any], file: _File) -> Any:
        return self.abs(posixpath.dirname(file.path))

    def fn_path_relative_to_include(self, args: list[Any], file: _File) -> Any:
        target = self._include_dir(args, file)
        return posixpath.relpath(self.unit_dir, target) if target is not None else "."

    def fn_path_relative_from_include(self, args: list[Any], file: _File) -> Any:
        target = self._include_dir(args, file)
        return posixpath.relpath(target, self.unit_dir) if target is not None else "."

    def _include_dir(self, args: list[Any], file: _File) -> str | None:
        if args and isinstance(args[0], str) and args[0] in self.includes:
            return posixpath.dirname(self.includes[args[0]].path)
        if file.path != posixpath.join(self.unit_dir, UNIT_FILE):
            return posixpath.dirname(file.path)
        if len(self.includes) == 1:
            return posixpath.dirname(next(iter(self.includes.values())).path)
        return None

    def fn_get_repo_root(self, args: list[Any], file: _File) -> Any:
        return self.loader.root_posix

    def fn_get_path_from_repo_root(self, args: list[Any], file: _File) -> Any:
        return self.unit_dir

    def fn_get_path_to_repo_root(self, args: list[Any], file: _File) -> Any:
        return posixpath.relpath(".", self.unit_dir)

    def fn_get_env(self, args: list[Any], file: _File) -> Any:
        # The model must not depend on who runs it: use the documented default.
        return args[1] if len(args) > 1 else UNKNOWN

    def fn_read_terragrunt_config(self, args: list[Any], file: _File) -> Any:
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
        return {"locals": self.all_locals(target), "inputs": self.attr(target, target.body, "inputs")}

    def fn_try(self, args: list[Any], file: _File) -> Any:
        return next((a for a in args if a is not UNKNOWN), UNKNOWN)

    # -- expressions
    def eval(self, expr: Expr, file: _File) -> Any:
        kind = expr[0]
        if kind == "lit":
            return expr[1]
        if kind == "tmpl":
            parts = [self.eval(p, file) for p in expr[1]]
            if any(p is UNKNOWN or isinstance(p, dict | list) for p in parts):
                return UNKNOWN
            return "".join(_to_str(p) for p in parts)
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
            return _binary(expr[1], self.eval(expr[2], file), self.eval(expr[3], file))
        return UNKNOWN

    def traverse(self, value: Any, keys: Sequence[Any], file: _File) -> Any:
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

    def variable(self, root: str, name: str, file: _File) -> Any:
        if root == "local":
            return self.local(file, name)
        if root == "include":
            inc = self.includes.get(name)
            if inc is None:
                return UNKNOWN
            return {"locals": self.all_locals(inc), "inputs": UNKNOWN}
        return UNKNOWN

    def local(self, file: _File, name: str) -> Any:
        if name in file.locals_cache:
            return file.locals_cache[name]
        key = (file.path, name)
        if key in self._evaluating:
            raise ToolingError(f"{file.path}: local.{name} refers to itself (a cycle of locals)")
        exprs = _locals_exprs(file.body)
        if name not in exprs:
            return UNKNOWN
        self._evaluating.add(key)
        try:
            value = self.eval(exprs[name][0], file)
        finally:
            self._evaluating.discard(key)
        file.locals_cache[name] = value
        return value

    def all_locals(self, file: _File) -> dict[str, Any]:
        return {name: self.local(file, name) for name in _locals_exprs(file.body)}

    def attr(self, file: _File, body: Body, name: str) -> Any:
        entry = body["a"].get(name)
        return self.eval(entry[0], file) if entry else None

    def scan_reads(self, file: _File) -> None:
        """Evaluate every read function (and find_in_parent_folders) anywhere in ``file``."""
        for expr in self.loader.read_calls(file):
            if expr[1] == "read_terragrunt_config" or expr[1] == "find_in_parent_folders":
                self.eval(expr, file)
            elif expr[2]:
                arg = self.eval(expr[2][0], file)
                if isinstance(arg, str):
                    self.read(self.rel(arg))


def _to_str(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _binary(op: str, left: Any, right: Any) -> Any:
    if left is UNKNOWN or right is UNKNOWN:
        return UNKNOWN
    try:
        if op == "==":
            return left == right
        if op == "!=":
            return left != right
        if op == "&&":
            return bool(left) and bool(right)
        if op == "||":
            return bool(left) or bool(right)
        if op == "+":
            return left + right
        if op == "-":
            return left - right
    except TypeError:
        return UNKNOWN
    return UNKNOWN


_PURE_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "basename": posixpath.basename,
    "dirname": posixpath.dirname,
    "abspath": posixpath.normpath,
    "lower": str.lower,
    "upper": str.upper,
    "trimspace": str.strip,
    "replace": lambda s, a, b: s.replace(a, b),
    "trimprefix": lambda s, p: s.removeprefix(p),
    "trimsuffix": lambda s, p: s.removesuffix(p),
    "join": lambda sep, items: sep.join(_to_str(i) for i in items),
    "split": lambda sep, s: s.split(sep),
    "merge": lambda *maps: {k: v for m in maps for k, v in m.items()},
    "lookup": lambda m, k, *d: m.get(k, d[0]) if d else m[k],
    "concat": lambda *lists: [x for lst in lists for x in lst],
    "coalesce": lambda *xs: next(x for x in xs if x not in (None, "")),
    "tostring": _to_str,
    "format": lambda fmt, *a: fmt.replace("%%", "\0").replace("%s", "{}").replace("%d", "{}").format(*a).replace("\0", "%"),
}


def _locals_exprs(body: Body) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for btype, _labels, inner, _line in body["b"]:
        if btype == "locals":
            out.update(inner["a"])
    return out


_SCANNED = READ_FUNCTIONS | {"find_in_parent_folders"}


def _outer_calls(body: Body) -> Iterable[Expr]:
    """Calls of read functions, not descending into them (their arguments are evaluated with them)."""
    stack: list[Expr] = [e for e, _line in body["a"].values()]
    blocks = list(body["b"])
    while blocks:
        _btype, _labels, inner, _line = blocks.pop()
        stack.extend(e for e, _l in inner["a"].values())
        blocks.extend(inner["b"])
    while stack:
        expr = stack.pop()
        if expr[0] == "call" and expr[1] in _SCANNED:
            yield expr
            continue
        kind = expr[0]
        if kind in ("tmpl", "tup"):
            stack.extend(expr[1])
        elif kind == "call":
            stack.extend(expr[2])
        elif kind == "obj":
            for key, value in expr[1]:
                stack.extend((key, value))
        elif kind == "cond":
            stack.extend(expr[1:])
        elif kind == "bin":
            stack.extend(expr[2:])
        elif kind == "post":
            stack.append(expr[1])
            stack.extend(k for k in expr[2] if isinstance(k, tuple))
        elif kind == "opaque":
            stack.extend(expr[2])


def _blocks(body: Body, btype: str) -> list[list[Any]]:
    return [b for b in body["b"] if b[0] == btype]


# --------------------------------------------------------------------------- loading


class _Loader:
    def __init__(self, tree: Tree, cache: ParseCache) -> None:
        self.tree = tree
        self.cache = cache
        self.root_posix = tree.root.as_posix()
        self.root_prefix = self.root_posix.rstrip("/") + "/"
        self._bodies: dict[str, Body] = {}
        self._read_calls: dict[str, list[Expr]] = {}
        self._found: dict[tuple[str, str], str | None] = {}

    def find_up(self, directory: str, name: str) -> str | None:
        """``name`` in ``directory`` or the nearest folder above it (memoised: units share parents)."""
        key = (directory, name)
        if key not in self._found:
            candidate = _norm(f"{directory}/{name}") if directory not in ("", ".") else _norm(name)
            if self.tree.exists(candidate):
                self._found[key] = candidate
            elif directory in ("", "."):
                self._found[key] = None
            else:
                self._found[key] = self.find_up(posixpath.dirname(directory), name)
        return self._found[key]

    def read_calls(self, file: _File) -> list[Expr]:
        """The outermost read-function calls of a file (static, computed once per file)."""
        calls = self._read_calls.get(file.path)
        if calls is None:
            calls = self._read_calls[file.path] = list(_outer_calls(file.body))
        return calls

    def file(self, rel: str) -> _File:
        body = self._bodies.get(rel)
        if body is None:
            body = self._bodies[rel] = self.cache.get(self.tree.sha(rel), lambda: self.tree.read(rel), rel)
        return _File(rel, body)


def _unit(loader: _Loader, unit_file: str) -> Unit:
    unit_dir = posixpath.dirname(unit_file)
    ev = _UnitEvaluator(loader, unit_dir)
    unit = loader.file(unit_file)
    ev.read(unit_file)
    lines: dict[str, int] = {}

    # includes first: their locals are visible through include.NAME
    files = [unit]
    for _btype, labels, inner, line in _blocks(unit.body, "include"):
        name = labels[0] if labels else ""
        path_entry = inner["a"].get("path")
        if path_entry is None:
            raise ToolingError(f"{unit_file}:{line}: include {name!r} has no path")
        target = ev.eval(path_entry[0], unit)
        if not isinstance(target, str):
            raise ToolingError(f"{unit_file}:{line}: cannot work out the path of include {name!r}")
        rel = ev.rel(target)
        if not loader.tree.exists(rel):
            raise ToolingError(f"{unit_file}:{line}: include {name!r} points at {rel}, which does not exist")
        ev.read(rel)
        ev.includes[name] = loader.file(rel)
        files.append(ev.includes[name])

    for file in files:
        ev.scan_reads(file)

    # terraform.source: the unit's own block wins over an included one
    source: Any = None
    for file in files:
        for _b, _l, inner, line in _blocks(file.body, "terraform"):
            if "source" in inner["a"] and source is None:
                source = ev.eval(inner["a"]["source"][0], file)
                lines["source"] = inner["a"]["source"][1] if file is unit else line
    source_str = source if isinstance(source, str) else None
    if source is not None and source_str is None:
        source_str = "<unresolved>"
    if source_str and (source_str.startswith(("./", "../")) or posixpath.isabs(source_str)):
        local_dir = ev.rel(source_str.split("//")[0] if "//" in source_str[3:] else source_str)
        ev.read(local_dir.rstrip("/") + "/")

    deps: dict[str, None] = {}
    for file in files:
        for _b, labels, inner, line in _blocks(file.body, "dependency"):
            entry = inner["a"].get("config_path")
            value = ev.eval(entry[0], file) if entry else None
            if not isinstance(value, str):
                raise ToolingError(f"{file.path}:{line}: dependency {labels[0] if labels else ''!r}: cannot work out config_path")
            deps[ev.rel(value)] = None
            if file is unit:
                lines[f"dependency:{ev.rel(value)}"] = line
        for _b, _labels, inner, line in _blocks(file.body, "dependencies"):
            entry = inner["a"].get("paths")
            value = ev.eval(entry[0], file) if entry else None
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ToolingError(f"{file.path}:{line}: dependencies.paths: cannot work out the list of paths")
            for v in value:
                deps[ev.rel(v)] = None

    meta: dict[str, Any] = {}
    unit_locals = _locals_exprs(unit.body)
    for key in META_KEYS:
        if key in unit_locals:
            value = ev.local(unit, key)
            lines[key] = unit_locals[key][1]
            if value is not UNKNOWN:
                meta[key] = value
                continue
        for inc in reversed(list(ev.includes.values())):
            if key in _locals_exprs(inc.body):
                meta[key] = ev.local(inc, key)
                break

    state_key, state_bucket = _state(ev, files)
    parts = unit_dir.split("/")
    default_tier = parts[1] if len(parts) > 2 else parts[-1]
    return Unit(
        path=unit_dir,
        tier=_str(meta.get("tier"), default_tier),
        executor=_str(meta.get("executor"), "hosted"),
        gate=_str(meta.get("gate"), "auto"),
        plan_on_pr=meta.get("plan_on_pr") is not False,
        source=source_str,
        ref=_ref_of(source_str),
        dependencies=tuple(sorted(deps)),
        reads=tuple(sorted(ev.reads)),
        state_key=state_key,
        state_bucket=state_bucket,
        line_of=lines,
    )


def _str(value: Any, default: str) -> str:
    return value if isinstance(value, str) else default


def _ref_of(source: str | None) -> str | None:
    """The ``ref`` (git) or ``version`` (registry) query value of a source, as written."""
    if not source or "?" not in source:
        return None
    for chunk in source.split("?", 1)[1].split("&"):
        key, _, value = chunk.partition("=")
        if key in ("ref", "version"):
            return value
    return None


def _state(ev: _UnitEvaluator, files: list[_File]) -> tuple[str | None, str | None]:
    """The unit's state key and bucket, computed from its configuration."""
    for file in files:
        for _b, _l, inner, _line in _blocks(file.body, "remote_state"):
            config = ev.attr(file, inner, "config")
            if isinstance(config, dict) and isinstance(config.get("key"), str):
                bucket = config.get("bucket")
                return config["key"], bucket if isinstance(bucket, str) else None
    for file in reversed(files):
        exprs = _locals_exprs(file.body)
        if "state_key" in exprs:
            key = ev.local(file, "state_key")
            bucket = ev.local(file, "state_bucket") if "state_bucket" in exprs else None
            return (key if isinstance(key, str) else None), (bucket if isinstance(bucket, str) and bucket else None)
    return None, None


def toposort(units: Mapping[str, Unit]) -> tuple[str, ...]:
    """Dependencies first; ties broken by path so the order is stable. Cycles are errors."""
    indegree = {path: 0 for path in units}
    children: dict[str, list[str]] = {path: [] for path in units}
    for unit in units.values():
        for dep in unit.dependencies:
            if dep in units:
                indegree[unit.path] += 1
                children[dep].append(unit.path)
    import heapq

    ready = [p for p, d in indegree.items() if d == 0]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        path = heapq.heappop(ready)
        order.append(path)
        for child in children[path]:
            indegree[child] -= 1
            if indegree[child] == 0:
                heapq.heappush(ready, child)
    if len(order) != len(units):
        stuck = sorted(p for p, d in indegree.items() if d > 0)
        raise ToolingError(
            "dependency cycle between units: " + ", ".join(stuck) + ". Remove one of the dependency blocks."
        )
    return tuple(order)


def load(tree: Tree, cache_dir: Path | None = None) -> Model:
    """Build the model of every unit in ``tree``; parse errors name file:line."""
    model_cache = cache_dir / f"model-{tree.fingerprint()}.marshal" if cache_dir else None
    if model_cache is not None and model_cache.exists():
        cached = _load_model(model_cache, tree.root)
        if cached is not None:
            return cached
    cache = ParseCache(cache_dir / "parse.marshal" if cache_dir else None)
    unit_files = tree.unit_files()
    if isinstance(tree, GitTree):
        tree.prefetch(
            p for p in unit_files if tree.sha(p) not in cache.entries
        )
    loader = _Loader(tree, cache)
    units = {}
    for unit_file in unit_files:
        unit = _unit(loader, unit_file)
        units[unit.path] = unit
    model = Model(units, toposort(units))
    cache.save()
    if model_cache is not None:
        _save_model(model_cache, model)
    return model


def _save_model(path: Path, model: Model) -> None:
    data = {
        "v": MODEL_CACHE_VERSION,
        "units": [(asdict(u)) for u in model.units.values()],
        "order": list(model.order),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    with tmp.open("wb") as fh:
        marshal.dump(data, fh)
    os.replace(tmp, path)
    # keep the cache folder small: old models are useless once the tree moved on
    models = sorted(path.parent.glob("model-*.marshal"), key=lambda p: p.stat().st_mtime)
    for old in models[:-16]:
        old.unlink(missing_ok=True)


def _load_model(path: Path, root: Path) -> Model | None:
    try:
        with path.open("rb") as fh:
            data = marshal.load(fh)
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if not isinstance(data, dict) or data.get("v") != MODEL_CACHE_VERSION:
        return None
    units = {}
    for raw in data["units"]:
        raw["dependencies"] = tuple(raw["dependencies"])
        raw["reads"] = tuple(raw["reads"])
        units[raw["path"]] = Unit(**raw)
    return Model(units, tuple(data["order"]))


def units_json(model: Model) -> str:
    return json.dumps({"units": [model.units[p].to_json() for p in model.order]}, indent=2)


@dataclass(frozen=True)
class Change:
    """One changed path between two revisions: status A/M/D/R (renames carry ``old``)."""

    status: str
    path: str
    old: str | None = None
