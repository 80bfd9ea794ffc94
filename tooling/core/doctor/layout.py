"""The ``[layout]`` a repository's files suggest, for ``invoke doctor`` to print. Pure.

From the list of a repository's files (paths relative to its root): the live
folders are the top-level folders holding a ``terragrunt.hcl`` below them, the
root file is the first of ``root.hcl``, a root ``terragrunt.hcl`` (the legacy
root, which Terragrunt advises renaming) or another top-level ``.hcl`` file
units include by name. Several live folders whose units' state keys each start
with their own folder (the root file's ``key = "${path_relative_to_include()}/..."``)
are each suggested as a live root (``[layout.roots."FOLDER"]``) with that
``state_prefix``, the folder as the default ``tier`` of its units and, when its
units agree on one, their ``executor`` (which makes the root a layer of
``check``) and, when its units already depend on (or read files of) other roots,
``may_depend_on`` naming them, so ``check``'s state-key and layer rules pass
without moving state or a dependency; a new dependency across roots is then a
violation to review. Units that keep their state under one common folder that is
not their live folder's (``key = "terraform/${path_relative_to_include()}.tfstate"``)
get that folder as ``[check] foundation_state_prefix``. The tiers each unit gets
are a comment.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tooling.model.layout import ROOT_FILE
from tooling.model.stacks import STACK_DIR, STACK_FILE
from tooling.model.units import UNIT_FILE


@dataclass(frozen=True)
class Suggestion:
    live: tuple[str, ...]
    #: None: no candidate at the root (the file must be created)
    root_file: str | None
    #: tier -> number of units, as the model assigns them (``tier`` local, else the folder)
    tiers: tuple[tuple[str, int], ...] = ()
    #: (folder, state prefix, executor or None) of each live root whose units keep their
    #: state under it
    roots: tuple[tuple[str, str, str | None], ...] = ()
    #: the unit files (``terragrunt.hcl``) outside the suggested live folders, by top folder
    left_out: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: the executors the units run on that policy.toml does not declare, with the runner
    #: labels suggested for each (:func:`runner_labels`)
    executors: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: (root folder, the layers its units may depend on: itself and the roots they already
    #: depend on or read) for each root whose units reach into another
    depends: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: the folder every unit's state key starts with, when it is not their live folder's
    #: (``[check] foundation_state_prefix``); None: check's default holds
    state_prefix: str | None = None
    #: True: policy.toml has a ``[check]`` table already, so the prefix is a line to add
    #: to it (a second ``[check]`` table would not parse)
    check_declared: bool = False

    def toml(self) -> str:
        """The ``[layout]`` table, ready to paste into policy.toml."""
        lines = [
            "[layout]",
            f"live = {json.dumps(list(self.live))}",
            f"root_file = {json.dumps(self.root_file or ROOT_FILE)}",
        ]
        if self.root_file is None:
            lines[-1] += "  # create it at the root: units include it"
        if self.tiers:
            found = ", ".join(f"{tier} ({n})" for tier, n in self.tiers)
            lines.append(f"# tiers (units): {found}")
        for folder, prefix, executor in self.roots:
            lines += [
                "",
                f"[layout.roots.{json.dumps(folder)}]",
                f"state_prefix = {json.dumps(prefix)}",
                f"tier = {json.dumps(folder.rsplit('/', 1)[-1])}",
            ]
            if executor is not None:
                lines.append(f"executor = {json.dumps(executor)}")
            may = dict(self.depends).get(folder)
            if may:
                lines.append(
                    f"may_depend_on = {json.dumps(list(may))}  # itself and the roots its units reach"
                )
        if self.state_prefix is not None:
            line = (
                f"foundation_state_prefix = {json.dumps(self.state_prefix)}"
                "  # where every unit's state key starts"
            )
            if self.check_declared:
                lines += ["", f"# add to policy.toml's [check] table: {line}"]
            else:
                lines += ["", "[check]", line]
        for name, labels in self.executors:
            lines += [
                "",
                f"[executors.{json.dumps(name) if not _BARE.fullmatch(name) else name}]",
                f"runs_on = {json.dumps(list(labels))}  # the runner labels of its CI jobs",
            ]
        return "\n".join(lines)

    def to_json(self) -> dict[str, object]:
        depends = dict(self.depends)
        return {
            "live": list(self.live),
            "root_file": self.root_file or ROOT_FILE,
            "tiers": dict(self.tiers),
            "roots": {
                folder: {
                    "state_prefix": prefix,
                    "tier": folder.rsplit("/", 1)[-1],
                    "executor": executor,
                    # as in the table: only for a root whose units reach another
                    **({"may_depend_on": list(may)} if (may := depends.get(folder)) else {}),
                }
                for folder, prefix, executor in self.roots
            },
            "foundation_state_prefix": self.state_prefix,
            "executors": {name: {"runs_on": list(labels)} for name, labels in self.executors},
            "toml": self.toml(),
        }


#: a TOML key that needs no quotes
_BARE = re.compile(r"[A-Za-z0-9_-]+")


def runner_labels(executor: str) -> list[str]:
    """The runner labels suggested for an executor: GitHub's hosted runners for
    ``hosted`` (the tooling's default executor), a self-hosted runner labelled with
    its name otherwise."""
    return ["ubuntu-latest"] if executor == "hosted" else ["self-hosted", executor]


def live_folders(files: Iterable[str], catalog: Iterable[str] = ()) -> tuple[str, ...]:
    """The top-level folders holding a unit (a ``terragrunt.hcl`` below them) or a stack
    (a ``terragrunt.stack.hcl``), sorted; a unit of the ``catalog`` (the folders stacks
    take their units from) is not one: the stacks using it are."""
    templates = tuple(c.rstrip("/") + "/" for c in catalog)
    found = set()
    for path in files:
        parts = path.split("/")
        if len(parts) < 2 or STACK_DIR in parts:
            continue
        if parts[-1] == STACK_FILE or (parts[-1] == UNIT_FILE and not path.startswith(templates)):
            found.add(parts[0])
    return tuple(sorted(found))


def left_out(
    files: Iterable[str], live: Iterable[str], catalog: Iterable[str] = ()
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(top-level folder, its unit files) for the unit files outside ``live``: not of the
    ``catalog``, not a stack's generated ones, not at the root (the legacy root file)."""
    inside = tuple(f.rstrip("/") + "/" for f in (*live, *catalog) if f != ".")
    if "." in live:
        return ()
    found: dict[str, list[str]] = {}
    for path in files:
        parts = path.split("/")
        if len(parts) < 2 or parts[-1] != UNIT_FILE or STACK_DIR in parts:
            continue
        if not path.startswith(inside):
            found.setdefault(parts[0], []).append(path)
    return tuple((top, tuple(sorted(paths))) for top, paths in sorted(found.items()))


def catalog_folders(stacks: Mapping[str, str]) -> tuple[str, ...]:
    """The folders (relative to the root) the ``unit`` blocks of ``stacks`` (stack file ->
    its text) take as a local ``source``: the catalog."""
    found = set()
    for stack, text in stacks.items():
        folder = posixpath.dirname(stack)
        for source in _LOCAL_SOURCE.findall(text):
            path = source.split("//", 1)[0] if "//" in source[3:] else source
            found.add(posixpath.normpath(posixpath.join(folder, path)))
    return tuple(sorted(f for f in found if not f.startswith("..")))


#: a unit block's literal local source: ``source = "../../units/app"``
_LOCAL_SOURCE = re.compile(r'^\s*source\s*=\s*"(\.\.?/[^"$]*)"', re.M)


def root_file(files: Iterable[str], included: Iterable[str] = ()) -> str | None:
    """The root file: ``root.hcl``, else a root ``terragrunt.hcl``, else the top-level
    ``.hcl`` file the units include by name (``included``: names passed to
    ``find_in_parent_folders``), else None."""
    top = {p for p in files if "/" not in p}
    if ROOT_FILE in top:
        return ROOT_FILE
    if UNIT_FILE in top:
        return UNIT_FILE
    for name in sorted(set(included)):
        if name in top and name.endswith(".hcl"):
            return name
    return None


#: an include's path found above the unit by literal name:
#: ``path = find_in_parent_folders("main.hcl")`` (or inside "${...}")
_PARENT_FILE = re.compile(r'\bpath\s*=\s*(?:"\$\{\s*)?find_in_parent_folders\(\s*"([^"/$]+)"')


def parent_file_names(texts: Iterable[str]) -> set[str]:
    """The file names unit files (``texts``) include through ``find_in_parent_folders``,
    read from the text alone: what a unit includes even when the model cannot evaluate
    it (a file its root reads is missing until a setup step, say)."""
    return {name for text in texts for name in _PARENT_FILE.findall(text)}


def state_roots(
    live: Iterable[str], units: Iterable[tuple[str, str | None, str]]
) -> tuple[tuple[str, str, str | None], ...]:
    """(folder, ``folder/``, executor) for each of several live folders whose units'
    state keys (``units``: unit path, state key, executor) all start with their own
    folder; () unless each does. The executor is the one its units share (None: several,
    or one the model could not work out)."""
    folders = tuple(live)
    keys: dict[str, list[str | None]] = {f: [] for f in folders}
    executors: dict[str, set[str]] = {f: set() for f in folders}
    for path, key, executor in units:
        top = path.split("/", 1)[0]
        if top in keys:
            keys[top].append(key)
            executors[top].add(executor)
    if len(folders) < 2:
        return ()
    for folder, found in keys.items():
        if not found or not all(k is not None and k.startswith(folder + "/") for k in found):
            return ()
    return tuple(
        (f, f + "/", next(iter(executors[f])) if len(executors[f]) == 1 else None) for f in folders
    )


def root_dependencies(
    roots: Iterable[str], units: Iterable[tuple[str, Iterable[str]]]
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(root, (root, *other roots)) for each of ``roots`` whose units (``units``: unit
    path, the paths it depends on and the files it reads) reach into another root."""
    folders = tuple(roots)

    def root_of(path: str) -> str | None:
        inside = [f for f in folders if path == f or path.startswith(f + "/")]
        return max(inside, key=len, default=None)

    reached: dict[str, set[str]] = {}
    for path, targets in units:
        own = root_of(path)
        if own is None:
            continue
        for target in targets:
            other = root_of(target.rstrip("/"))
            if other is not None and other != own:
                reached.setdefault(own, set()).add(other)
    return tuple((f, (f, *sorted(reached[f]))) for f in folders if f in reached)


def common_state_prefix(
    live: Iterable[str], keys: Iterable[tuple[str, str]], app_prefix: str = "apps/"
) -> str | None:
    """The folder every state key starts with (``keys``: unit path, key; local backends
    left out), when some key is outside its live folder's prefix (check's default) and
    they all share a first folder that is not the app tier's; else None."""
    folders = tuple(f for f in live if f != ".")
    listed = list(keys)
    if not listed or not folders:
        return None

    def under_own(path: str, key: str) -> bool:
        own = [f for f in folders if path == f or path.startswith(f + "/")]
        return any(key.startswith(f + "/") for f in own)

    if all(under_own(path, key) for path, key in listed):
        return None
    first = {key.split("/", 1)[0] if "/" in key else "" for _, key in listed}
    if len(first) != 1:
        return None
    (prefix,) = first
    if not prefix or prefix + "/" == app_prefix:
        return None
    return prefix + "/"


def suggest(
    files: Iterable[str],
    included: Iterable[str] = (),
    tiers: Mapping[str, int] | None = None,
    catalog: Iterable[str] = (),
) -> Suggestion:
    listed = list(files)
    return Suggestion(
        live_folders(listed, catalog),
        root_file(listed, included),
        tuple(sorted((tiers or {}).items())),
    )
