"""Loading the model: discover units in a tree, evaluate each, cache the result.

Everything here is pure over the tree's contents; the only I/O is reading
files through the :class:`~tooling.model.trees.Tree` and the parse cache.
"""

from __future__ import annotations

import dataclasses
import posixpath
from pathlib import Path
from typing import Any

from tooling.errors import ToolingError
from tooling.model import modelcache
from tooling.model.configfiles import ConfigFile, Loader, Scope
from tooling.model.evaluator import UnitEvaluator
from tooling.model.excludes import EXCLUDES_FILE, matching, parse_excludes_file
from tooling.model.exprs import UNKNOWN, blocks_of, locals_exprs, norm
from tooling.model.gitpaths import in_repository, top_level
from tooling.model.parsecache import ParseCache
from tooling.model.sources import local_source_dir, parse_source
from tooling.model.stacks import STACK_DIR, declared_units, stack_files
from tooling.model.trees import GitTree, Tree
from tooling.model.units import (
    META_KEYS,
    UNRESOLVED_EXECUTOR,
    UNRESOLVED_GATE,
    Model,
    Unit,
    dag_order,
)


def evaluate_unit(loader: Loader, unit_file: str) -> Unit:
    """The unit in ``unit_file``; one it cannot evaluate carries the error instead of raising
    (and the files outside the repository it was found to read before the error: the
    rules name them)."""
    unit_dir = posixpath.dirname(unit_file) or "."
    ev = UnitEvaluator(loader, unit_dir)
    try:
        return _unit(loader, unit_file, ev)
    except (ToolingError, RecursionError, ValueError, TypeError, KeyError, IndexError) as exc:
        # one unit the model cannot read must not blind the rest: it is kept, with the error
        prefix = loader.tree.git_prefix
        if isinstance(exc, RecursionError):
            exc = ToolingError(
                f"{unit_file}:1: cannot evaluate: its references or expressions go deeper than "
                "the model follows (RecursionError); the unit gets no gate or executor and is "
                "never applied. Shorten the chain of locals or flatten the expression"
            )
        elif not isinstance(exc, ToolingError):
            exc = ToolingError(f"{unit_file}: cannot evaluate ({type(exc).__name__}: {exc})")
        # what it was found to read outside the repository, or in JSON: the rules name it
        outside = (
            r
            for r in ev.reads
            if (r.startswith("../") and not in_repository(r, prefix)) or r.endswith(".json")
        )
        return unreadable_unit(
            unit_dir,
            tuple(sorted({unit_file, *outside})),
            str(exc),
            _default_tier(unit_dir, loader.tree.default_tiers),
        )


def unreadable_unit(path: str, reads: tuple[str, ...], error: str, tier: str | None = None) -> Unit:
    """A unit the model cannot evaluate: kept (so a change to it plans it), with the error.
    It fails closed: no gate and no executor are assumed for it (whatever it declares is
    unknown), so it waits for a human and no executor's preflight or matrix takes it."""
    return Unit(
        path=path,
        tier=tier or _default_tier(path),
        executor=UNRESOLVED_EXECUTOR,
        gate=UNRESOLVED_GATE,
        plan_on_pr=True,
        source=None,
        ref=None,
        dependencies=(),
        reads=reads,
        state_key=None,
        state_bucket=None,
        error=error,
    )


def _default_tier(unit_dir: str, by_root: tuple[tuple[str, str], ...] = ()) -> str:
    """The tier of a unit that declares none: its live root's ([layout.roots] tier, the
    longest matching root), else the folder below the live folder."""
    best = max(
        (
            (root, tier)
            for root, tier in by_root
            if root == "." or unit_dir == root or unit_dir.startswith(root + "/")
        ),
        key=lambda found: len(found[0]),
        default=None,
    )
    if best is not None:
        return best[1]
    parts = unit_dir.split("/")
    return parts[1] if len(parts) > 2 else parts[-1]


def _unit(loader: Loader, unit_file: str, ev: UnitEvaluator) -> Unit:
    unit_dir = ev.unit_dir
    unit = loader.file(unit_file, Scope(unit_file))
    ev.read(unit_file)
    # OpenTofu reads a file or folder linked into the unit's folder at the link's
    # target (Terragrunt copies what the link points at): a change there affects the unit
    for link in loader.tree.links_under(unit_dir):
        target = loader.tree.realpath(link)
        if target != link:
            ev.read(target.rstrip("/") + "/" if loader.tree.is_dir(target) else target)
    lines: dict[str, int] = {}

    # includes first: their locals are visible through include.NAME
    ev.include_all(unit)
    files = [unit, *unit.scope.includes.values()]
    for file in files:
        ev.scan_reads(file)

    # terraform.source: the unit's own block wins over an included one
    source: Any = None
    for file in files:
        for _b, _l, inner, line in blocks_of(file.body, "terraform"):
            if "source" in inner["a"] and source is None:
                source = ev.eval(inner["a"]["source"][0], file)
                lines["source"] = inner["a"]["source"][1] if file is unit else line
    source_str = source if isinstance(source, str) else None
    if source is not None and source_str is None:
        source_str = "<unresolved>"
        ev.unresolved(unit, "terraform.source")
    local_dir = local_source_dir(source) if isinstance(source, str) else None
    if local_dir is not None:
        ev.read(loader.tree.realpath(ev.rel(local_dir)).rstrip("/") + "/")

    deps: dict[str, None] = {}
    named: set[str] = set()
    for file in files:
        for _b, labels, inner, line in blocks_of(file.body, "dependency"):
            name = labels[0] if labels else ""
            if name in named:
                continue  # the unit's block of that name overrides an included one (include merge)
            named.add(name)
            if ev.attr(file, inner, "enabled") is False:
                continue  # Terragrunt ignores a disabled dependency
            entry = inner["a"].get("config_path")
            value = ev.eval(entry[0], file) if entry else None
            if not isinstance(value, str):
                raise ToolingError(
                    f"{file.path}:{line}: dependency {name!r}: cannot work out config_path"
                )
            dep = loader.tree.realpath(ev.rel(value))
            deps[dep] = None
            if file is unit:
                lines[f"dependency:{dep}"] = line
        for _b, _labels, inner, line in blocks_of(file.body, "dependencies"):
            entry = inner["a"].get("paths")
            value = ev.eval(entry[0], file) if entry else None
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ToolingError(
                    f"{file.path}:{line}: dependencies.paths: cannot work out the list of paths"
                )
            for v in value:
                deps[loader.tree.realpath(ev.rel(v))] = None

    meta: dict[str, Any] = {}
    unit_locals = locals_exprs(unit.body)
    for key in META_KEYS:
        if key in unit_locals:
            value = ev.local(unit, key)
            lines[key] = unit_locals[key][1]
            if value is not UNKNOWN or key == "gate":
                # an own gate the model cannot work out is not the tier's: it fails closed
                meta[key] = value
                continue
        for inc in reversed(list(unit.scope.includes.values())):
            if key in locals_exprs(inc.body):
                meta[key] = ev.local(inc, key)
                break

    state_key, state_bucket, state_backend = _state(ev, files)
    exclude = _exclude(ev, files)
    return Unit(
        path=unit_dir,
        tier=_str(meta.get("tier"), _default_tier(unit_dir, loader.tree.default_tiers)),
        executor=_str(meta.get("executor"), "hosted"),
        # fail closed: a gate that is not a string waits for a human (the gates take only
        # an exact "auto" as auto), a plan_on_pr that is not true does not plan on PRs
        gate=_str(meta.get("gate"), "auto")
        if "gate" not in meta or isinstance(meta["gate"], str)
        else UNRESOLVED_GATE,
        plan_on_pr=meta["plan_on_pr"] is True if "plan_on_pr" in meta else True,
        source=source_str,
        ref=_ref_of(source_str),
        dependencies=tuple(sorted(deps)),
        reads=tuple(sorted(ev.reads)),
        state_key=state_key,
        state_bucket=state_bucket,
        state_backend=state_backend,
        line_of=lines,
        error="; ".join(dict.fromkeys(ev.problems)) or None,
        exclude=exclude,
    )


def _exclude(ev: UnitEvaluator, files: list[ConfigFile]) -> dict[str, Any] | None:
    """The unit's ``exclude`` block when its ``if`` holds (the unit's own block wins over an included one)."""
    for file in files:
        for _b, _l, inner, line in blocks_of(file.body, "exclude"):
            where = f"{file.path}:{line}"
            condition = ev.attr(file, inner, "if")
            if condition is False:
                return None
            if condition is not True:
                ev.problems.append(f"{where}: cannot work out exclude.if")
                return None
            actions = ev.attr(file, inner, "actions")
            if not isinstance(actions, list) or not all(isinstance(a, str) for a in actions):
                ev.problems.append(f"{where}: cannot work out exclude.actions")
                return None
            return {
                "actions": actions,
                "exclude_dependencies": ev.attr(file, inner, "exclude_dependencies") is True,
                "where": where,
            }
    return None


def _str(value: Any, default: str) -> str:
    return value if isinstance(value, str) else default


def _ref_of(source: str | None) -> str | None:
    """The ``ref`` (git) or ``version`` (registry) a source fetches, read as go-getter reads
    it (:func:`tooling.model.sources.parse_source`); None when absent or ambiguous."""
    return parse_source(source).ref if source else None


#: the ``remote_state`` setting that names a unit's state object, by backend type (else ``key``)
STATE_KEY_SETTING = {"local": "path", "gcs": "prefix", "http": "address", "pg": "schema_name"}


def _state(ev: UnitEvaluator, files: list[ConfigFile]) -> tuple[str | None, str | None, str | None]:
    """The unit's state key, bucket and declared backend type, computed from its configuration.

    A local backend's key is its ``path``, relative to git's top level when under it (the
    same on every machine); a GCS backend's is its ``prefix``, an http one's its ``address``."""
    for file in files:
        for _b, _l, inner, _line in blocks_of(file.body, "remote_state"):
            config = ev.attr(file, inner, "config")
            backend = ev.attr(file, inner, "backend")
            kind = backend if isinstance(backend, str) else None
            name = STATE_KEY_SETTING.get(kind or "", "key")
            if not isinstance(config, dict):
                continue
            if not isinstance(config.get(name), str):  # the block Terragrunt uses names none
                return None, None, kind
            key: str = config[name]
            bucket = config.get("bucket")
            if kind == "azurerm":
                bucket = f"{config.get('storage_account_name')}/{config.get('container_name')}"
            if kind == "local":
                top = top_level(ev.loader.root_posix, ev.loader.tree.git_prefix).rstrip("/") + "/"
                key = key[len(top) :] if key.startswith(top) else key
            return key, bucket if isinstance(bucket, str) else None, kind
    for file in reversed(files):
        exprs = locals_exprs(file.body)
        if "state_key" in exprs:
            value = ev.local(file, "state_key")
            bucket = ev.local(file, "state_bucket") if "state_bucket" in exprs else None
            return (
                (value if isinstance(value, str) else None),
                (bucket if isinstance(bucket, str) and bucket else None),
                None,
            )
    return None, None, None


def load(tree: Tree, cache_dir: Path | None = None) -> Model:
    """Build the model of every unit in ``tree``; parse errors name file:line."""
    model_cache = modelcache.path_of(tree, cache_dir)
    if model_cache is not None:
        cached = modelcache.read(model_cache, tree)
        if cached is not None:
            return cached
    cache = ParseCache(cache_dir / "parse.marshal" if cache_dir else None)
    unit_files = tree.unit_files()
    if isinstance(tree, GitTree):
        tree.prefetch(p for p in unit_files if tree.sha(p) not in cache.entries)
    loader = Loader(tree, cache)
    units = {}
    for unit_file in unit_files:
        unit = evaluate_unit(loader, unit_file)
        units[unit.path] = unit
    _add_stack_units(loader, units)
    _apply_excludes_file(tree, units)
    order, stuck = dag_order(units)
    for path in stuck:  # a cycle blinds only the units on it (and behind it)
        cycle = f"dependency cycle between units: {', '.join(stuck)}. Remove one of the dependency blocks."
        units[path] = dataclasses.replace(units[path], error=units[path].error or cycle)
    model = Model(units, order + stuck)
    cache.save()
    if model_cache is not None:
        modelcache.save(model_cache, model, _data_files(model, tree), loader.looked_above)
    return model


def _data_files(model: Model, tree: Tree) -> dict[str, str]:
    """The files other than HCL that units read (file(), fileexists()): their content is part
    of what the model computed, and the tree's fingerprint hashes HCL files only."""
    out = {}
    for unit in model.units.values():
        for path in unit.reads:
            if path.endswith((".hcl", "/")) or path in out:
                continue
            out[path] = tree.sha(path) if tree.exists(path) and not tree.is_dir(path) else ""
    return out


def _apply_excludes_file(tree: Tree, units: dict[str, Unit]) -> None:
    """Units the repository's ``.terragrunt-excludes`` leaves out of every ``run --all``."""
    if not tree.exists(EXCLUDES_FILE) or tree.is_dir(EXCLUDES_FILE):
        return
    patterns = parse_excludes_file(
        tree.read(EXCLUDES_FILE).decode(errors="replace"), tree.root.as_posix()
    )
    for path, unit in units.items():
        found = matching(patterns, path)
        if found is not None:
            units[path] = dataclasses.replace(
                unit,
                exclude={
                    "actions": ["all"],
                    "exclude_dependencies": False,
                    "where": f"{EXCLUDES_FILE}:{found.line}",
                },
            )


def _add_stack_units(loader: Loader, units: dict[str, Unit]) -> None:
    """Tie the units a stack file declares to it (see :mod:`tooling.model.stacks`)."""
    tree = loader.tree
    for stack_file in stack_files(tree):
        try:
            declared = declared_units(loader, stack_file)
        except ToolingError as exc:
            folder = posixpath.dirname(stack_file) or "."
            declared = [(norm(f"{folder}/{STACK_DIR}"), (stack_file,))]
            error: str | None = str(exc)
        else:
            error = None
        for path, made_of in declared:
            unit = units.get(path)
            if unit is None:
                units[path] = unreadable_unit(
                    path,
                    made_of,
                    error or f"generated by {stack_file}: `terragrunt stack generate` writes it",
                    _default_tier(path, tree.default_tiers),
                )
            else:
                units[path] = dataclasses.replace(
                    unit, reads=tuple(sorted({*unit.reads, *made_of}))
                )
