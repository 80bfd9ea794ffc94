"""Terragrunt Stacks: the units a ``terragrunt.stack.hcl`` declares.

``terragrunt stack generate`` writes each ``unit "NAME" { source, path, values }``
to ``<stack folder>/.terragrunt-stack/<path>`` (its ``terragrunt.hcl`` from the
catalog ``source``, the ``values`` beside it in ``terragrunt.values.hcl``).
Generated folders are usually not committed, so the model ties each generated
unit to what it is made of: the stack file (which holds the values) and, for a
local catalog, the catalog unit's folder. A unit generated on disk is read
like any other, plus those reads; one that is not generated (a git revision)
is kept with an error, so any change plans it, through generation.
"""

from __future__ import annotations

import contextlib
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tooling.errors import ToolingError

if TYPE_CHECKING:
    from tooling.model.configfiles import Loader
    from tooling.model.trees import Tree

STACK_FILE = "terragrunt.stack.hcl"
STACK_DIR = ".terragrunt-stack"


def is_stack_file(path: str) -> bool:
    # endswith first: asked of every file every unit reads, before a cached model is used
    return (
        path.endswith(STACK_FILE)
        and posixpath.basename(path) == STACK_FILE
        and f"/{STACK_DIR}/" not in f"/{path}"
    )


def generated_unit(path: str) -> bool:
    """Whether the unit at ``path`` is one a stack generates (it lies in a ``.terragrunt-stack``)."""
    return STACK_DIR in path.split("/")


def stack_files(tree: Tree) -> list[str]:
    """Every stack file under the tree's live folders (not those a stack generated)."""
    return sorted(
        {
            p
            for folder in getattr(tree, "live", (".",))
            for p in tree.files_under(folder)
            if is_stack_file(p)
        }
    )


def declared_units(loader: Loader, stack_file: str) -> list[tuple[str, tuple[str, ...]]]:
    """(generated unit folder, the files and folders it is made of) for each ``unit`` block."""
    # here, not at the top: the workspace and detection import this module for its names
    # alone, and a warm run (a cached model) evaluates nothing
    from tooling.model.configfiles import Scope
    from tooling.model.evaluator import UnitEvaluator
    from tooling.model.exprs import blocks_of, norm

    folder = posixpath.dirname(stack_file) or "."
    ev = UnitEvaluator(loader, folder)
    config = loader.file(stack_file, Scope(stack_file))
    out: list[tuple[str, tuple[str, ...]]] = []
    for _b, labels, inner, line in blocks_of(config.body, "unit"):
        name = labels[0] if labels else ""
        path = ev.attr(config, inner, "path")
        if not isinstance(path, str):
            raise ToolingError(f"{stack_file}:{line}: unit {name!r}: cannot work out its path")
        made_of = [stack_file]
        source = ev.attr(config, inner, "source")
        if isinstance(source, str) and source.startswith(("./", "../", "/")):
            made_of.append(
                ev.rel(source.split("//")[0] if "//" in source[3:] else source).rstrip("/") + "/"
            )
        out.append((norm(f"{folder}/{STACK_DIR}/{path}"), tuple(made_of)))
    return out


@dataclass(frozen=True)
class StackSource:
    """The ``source`` of one ``unit`` or ``stack`` block of a stack file: what
    ``terragrunt stack generate`` fetches (None: the model cannot work it out), and for a
    local source the folder it copies (a repository path; ``../`` when above the project
    root, outside the repository when above git's top level)."""

    stack_file: str
    line: int
    block: str  # "unit" | "stack"
    name: str
    source: str | None
    local: str | None
    #: a local source outside the git repository
    outside: bool = False


@dataclass(frozen=True)
class StackClosure:
    """The files ``terragrunt stack generate`` parses for some stacks (the stack files,
    nested ones included, and what they read), and every source they fetch."""

    files: tuple[str, ...]
    sources: tuple[StackSource, ...]


def stack_closure(loader: Loader, stacks: Iterable[str]) -> StackClosure:
    """What ``terragrunt stack generate`` parses for ``stacks`` (stack file paths): each
    file, the files it reads, and the stack files of its local ``stack`` blocks, in
    turn (a nested stack is generated, and parsed, as its parent is)."""
    from tooling.model.configfiles import Scope
    from tooling.model.evaluator import UnitEvaluator
    from tooling.model.exprs import blocks_of, norm
    from tooling.model.gitpaths import in_repository
    from tooling.model.sources import local_source_dir

    files: dict[str, None] = {}
    sources: list[StackSource] = []
    todo = list(stacks)
    while todo:
        stack_file = todo.pop(0)
        if stack_file in files:
            continue
        files[stack_file] = None
        folder = posixpath.dirname(stack_file) or "."
        ev = UnitEvaluator(loader, folder)
        try:
            config = loader.file(stack_file, Scope(stack_file))
        except ToolingError:
            continue  # the stack's own error (hcl-syntax) says why
        # what it read before an error is recorded (one outside the repository among it)
        with contextlib.suppress(ToolingError):
            ev.scan_reads(config)
        files.update(dict.fromkeys(r for r in ev.reads if not r.endswith("/")))
        for block in ("unit", "stack"):
            for _b, labels, inner, line in blocks_of(config.body, block):
                try:
                    source = ev.attr(config, inner, "source")
                except ToolingError:
                    source = None
                text = source if isinstance(source, str) else None
                local_dir = local_source_dir(text) if text is not None else None
                local = norm(ev.rel(local_dir)) if local_dir is not None else None
                inside = local is not None and (
                    not local.startswith("../") or in_repository(local, loader.tree.git_prefix)
                )
                name = labels[0] if labels else ""
                outside = local is not None and not inside
                sources.append(StackSource(stack_file, line, block, name, text, local, outside))
                nested = f"{local}/{STACK_FILE}" if local not in (None, ".") else STACK_FILE
                if block == "stack" and inside and loader.tree.exists(nested):
                    todo.append(nested)
    return StackClosure(tuple(files), tuple(sources))
