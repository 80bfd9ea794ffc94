"""``invoke check``: gather the repository's files, run the rules at their check stage, report.

The only I/O of the check: list the repository's files (caches and virtual
environments left out), read what the rules ask for, load the model, and find
the app workspaces, into the rules' one context; then every rule of the registry
(:data:`tooling.core.rules.registry.RULES`) that runs at ``Stage.CHECK``. It runs no tool (no tofu, no terragrunt; git only to learn where the project root
sits in its repository, as Terragrunt's get_repo_root() does), so it works in a pre-commit hook on any machine.

App workspaces are folders of per-application OpenTofu code. They are found in
the folders listed by ``[check] app_dirs`` in ``policy.toml`` and in the ones
given with ``--apps DIR``: each sub-folder ``DIR/<app>/`` is the workspace of
app ``<app>``, and its backend configuration is read from ``backend.hcl``,
``*.tfbackend`` and the ``backend`` blocks of its ``*.tf`` files, in the
folder itself or in its ``terraform/`` sub-folder (an app repository checked
out as ``DIR/<app>``).

Also runnable as ``python -m tooling.commands.check`` (the hook other repositories use
through ``.pre-commit-hooks.yaml``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from tooling.core.rules import registry
from tooling.core.rules.rule import Context, Rule, Stage
from tooling.core.rules.snapshot import AppWorkspace, Snapshot, Violation
from tooling.errors import ToolingError
from tooling.io import config, git, toolchain
from tooling.model import trees
from tooling.model.policy import Policy
from tooling.model.tools import TOOL_VERSIONS_FILE
from tooling.model.units import Model

#: folders never scanned: the model's (caches, VCS internals) and other tools' caches and environments
SKIP_DIRS = trees.SKIP_DIRS | {"venv", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".tox"}


def snapshot(root: Path) -> Snapshot:
    """Every file of the working tree under ``root`` (repository-relative), caches left out."""
    paths: list[str] = []
    executable: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        for name in filenames:
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            full = os.path.join(dirpath, name)
            if not os.path.isfile(full):
                continue
            paths.append(rel)
            if os.access(full, os.X_OK):
                executable.add(rel)

    # the tools' pins at git's top level serve a project root below it (asdf, mise)
    pins = toolchain.pin_file(root)
    if TOOL_VERSIONS_FILE not in paths and pins.is_file():
        paths.append(TOOL_VERSIONS_FILE)

    def read(rel: str) -> str:
        try:
            if rel == TOOL_VERSIONS_FILE:
                return pins.read_text(encoding="utf-8", errors="replace")
            return (root / rel).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise ToolingError(f"{rel}: cannot read: {exc.strerror}") from exc

    return Snapshot(tuple(sorted(paths)), read, frozenset(executable))


def _display(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _backend_files(folder: Path) -> list[Path]:
    found: list[Path] = []
    for where in (folder, folder / "terraform"):
        if not where.is_dir():
            continue
        for entry in sorted(where.iterdir()):
            if entry.is_file() and (
                entry.name == "backend.hcl" or entry.name.endswith((".tfbackend", ".tf", ".tofu"))
            ):
                found.append(entry)
    return found


def find_apps(root: Path, folders: Sequence[Path]) -> list[AppWorkspace]:
    """The app workspaces: one per sub-folder of each folder (missing folders hold none)."""
    apps: list[AppWorkspace] = []
    for folder in folders:
        base = folder if folder.is_absolute() else root / folder
        if not base.is_dir():
            continue
        for entry in sorted(base.iterdir()):
            if not entry.is_dir() or entry.name.startswith("."):
                continue
            files = {
                _display(f, root): f.read_text(encoding="utf-8", errors="replace")
                for f in _backend_files(entry)
            }
            apps.append(AppWorkspace(entry.name, _display(entry, root), files))
    return apps


def context(
    root: Path,
    *,
    apps: Sequence[Path] = (),
    cache_dir: Path | None = None,
    policy: Policy | None = None,
) -> Context:
    """What the rules read of the repository at ``root``: policy.toml (``policy``, the
    task's; None: read from ``root``), its files, its model (or why it could not be read)
    and its app workspaces."""
    from tooling.engine.rules.inplay import escapes_from
    from tooling.model.configfiles import Loader
    from tooling.model.parsecache import ParseCache
    from tooling.model.repo import load
    from tooling.model.stacks import StackSource, stack_closure, stack_files
    from tooling.model.trees import WorkTree

    if policy is None:  # no task's preamble read it (the pre-commit hook, a test)
        policy = config.read_policy(root)
    pol = policy.check
    snap = snapshot(root)
    model: Model | None = None
    error: ToolingError | None = None
    layout = policy.layout
    live = tuple(d for d in layout.live if (root / d).is_dir())
    prefix = git.prefix(root)
    sources: tuple[StackSource, ...] = ()
    generation_reads: tuple[str, ...] = ()
    if live:
        tree = WorkTree(root, live, prefix, layout.default_tiers)
        try:
            model = load(tree, cache_dir)
        except ToolingError as exc:
            error = exc
        stacks = stack_files(tree)
        if stacks:  # what `terragrunt stack generate` would fetch
            made = stack_closure(Loader(tree, ParseCache(None)), stacks)
            sources, generation_reads = made.sources, made.files
    workspaces = find_apps(root, [Path(p) for p in pol.app_dirs] + list(apps))
    top = root.parents[len(prefix.split("/")) - 1] if prefix else root
    return registry.check_context(
        pol,
        snap,
        model=model,
        model_error=error,
        apps=workspaces,
        root_file=layout.root_file,
        git_prefix=prefix,
        escapes=escapes_from(root, top),
        stack_sources=sources,
        stack_files=generation_reads,
    )


def run(
    root: Path,
    *,
    apps: Sequence[Path] = (),
    cache_dir: Path | None = None,
    rules: Sequence[Rule] = registry.RULES,
    policy: Policy | None = None,
) -> tuple[list[Violation], Model | None]:
    """Every violation in the repository at ``root`` (sorted by file and line) under
    ``policy`` (None: root's policy.toml), and the model (None when the configuration
    could not be read)."""
    ctx = context(root, apps=apps, cache_dir=cache_dir, policy=policy)
    return sorted(registry.run(Stage.CHECK, ctx, rules)), ctx.model


def report(violations: Sequence[Violation], *, as_json: bool, units: int | None = None) -> int:
    """Print the violations, the result: one line each on stdout, or with ``as_json`` the
    JSON document on stdout and the lines on stderr. The closing count goes to stderr."""
    if as_json:
        print(json.dumps({"violations": [v.to_json() for v in violations]}, indent=2))
    for violation in violations:
        print(violation, file=sys.stderr if as_json else sys.stdout)
    if violations:
        rules = sorted({v.rule for v in violations})
        print(
            f"check: {len(violations)} violation(s) of {len(rules)} rule(s) ({', '.join(rules)}); "
            "docs/rules.md explains each rule and its fix",
            file=sys.stderr,
        )
        return 1
    counted = f" ({units} units)" if units is not None else ""
    print(f"check: no violations{counted}", file=sys.stderr)
    return 0


def check(
    root: Path,
    *,
    apps: Sequence[Path] = (),
    as_json: bool = False,
    cache_dir: Path | None = None,
    policy: Policy | None = None,
) -> int:
    """``invoke check``: run every rule on the repository at ``root`` under ``policy`` (the
    task's; None: root's policy.toml); 1 if anything is violated."""
    violations, model = run(
        root, apps=[Path(a).resolve() for a in apps], cache_dir=cache_dir, policy=policy
    )
    return report(
        violations, as_json=as_json, units=len(model.units) if model is not None else None
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tooling.commands.check [--apps DIR]... [--json] [ROOT]`` (the published pre-commit hook)."""
    parser = argparse.ArgumentParser(
        prog="python -m tooling.commands.check", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--apps", action="append", default=[], help="a folder of app workspaces (repeatable)"
    )
    parser.add_argument(
        "--json", action="store_true", help="print the violations as JSON on stdout"
    )
    parser.add_argument(
        "root", nargs="?", default=".", help="the repository (default: the current folder)"
    )
    args = parser.parse_args(argv)
    try:
        return check(
            Path(args.root).resolve(), apps=[Path(a) for a in args.apps], as_json=args.json
        )
    except ToolingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.code


if __name__ == "__main__":
    sys.exit(main())
