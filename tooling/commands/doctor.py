"""``invoke doctor``: what a Terragrunt repository needs to adopt this tooling.

Read-only (a repository of stacks is generated in a scratch copy under the
tool's own ignored ``.iac/``, as every command reads it). Each finding names
the file and what to do; ``needs`` findings block adoption (exit 1), ``note``
findings say where the model is blind or what differs from Terragrunt's own
view (``invoke crosscheck`` measures that).
"""

from __future__ import annotations

import json
import os
import sys
import tomllib
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tooling.core.doctor.layout import (
    Suggestion,
    catalog_folders,
    common_state_prefix,
    left_out,
    live_folders,
    parent_file_names,
    root_dependencies,
    runner_labels,
    state_roots,
    suggest,
)
from tooling.errors import ToolingError, UsageError
from tooling.io import config, git
from tooling.io.workspace import mark_private
from tooling.model.excludes import EXCLUDES_FILE, excludes, parse_excludes_file
from tooling.model.layout import ROOT_FILE, Layout
from tooling.model.policy import POLICY_FILE, Policy, policy_from
from tooling.model.repo import load
from tooling.model.stacks import generated_unit, is_stack_file
from tooling.model.trees import SKIP_DIRS, WorkTree
from tooling.model.units import UNIT_FILE, UNRESOLVED_EXECUTOR, Model

STACK_FILE = "terragrunt.stack.hcl"


@dataclass(frozen=True)
class Finding:
    level: str  # needs | note
    where: str
    what: str

    def to_json(self) -> dict[str, Any]:
        return {"level": self.level, "where": self.where, "what": self.what}


def _gitignore_ignores_lock_files(root: Path) -> bool:
    path = root / ".gitignore"
    if not path.is_file():
        return False
    lines = {
        line.strip() for line in path.read_text(encoding="utf-8", errors="replace").splitlines()
    }
    return bool(
        lines
        & {".terraform.lock.hcl", "*.lock.hcl", "**/.terraform.lock.hcl", "/.terraform.lock.hcl"}
    )


def _stack_files(root: Path, layout: Layout) -> list[str]:
    found = []
    for folder in layout.live:
        for dirpath, dirnames, filenames in os.walk(root / folder):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
            if STACK_FILE in filenames:
                found.append(
                    os.path.relpath(os.path.join(dirpath, STACK_FILE), root).replace(os.sep, "/")
                )
    return sorted(found)


def shared_name(layout: Layout) -> str:
    """A name to suggest for a shared file: the root file's, unless that is terragrunt.hcl."""
    return layout.root_file if layout.root_file != UNIT_FILE else ROOT_FILE


def repository_files(root: Path) -> list[str]:
    """Every file under ``root`` (relative, with /), leaving out the folders tools write."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        rel = os.path.relpath(dirpath, root).replace(os.sep, "/")
        found += [name if rel == "." else f"{rel}/{name}" for name in filenames]
    return found


def project_root_below(root: Path) -> str | None:
    """The folder below ``root`` holding the root file its units include (a ``root.hcl``,
    else a ``terragrunt.hcl`` with units below it), the shallowest; None when ``root``
    holds one itself or none is found."""
    found = project_roots_below(root)
    return found[0] if found else None


def project_roots_below(root: Path) -> list[str]:
    """Every folder below ``root`` holding a root file its units include, shallowest
    first, none inside another; [] when ``root`` holds one itself."""
    files = repository_files(root)
    units = {p.rsplit("/", 1)[0] for p in files if p.endswith("/" + UNIT_FILE)}
    found = []
    for path in files:
        folder, _, name = path.rpartition("/")
        if not folder:
            if name == ROOT_FILE or (name == UNIT_FILE and units):
                return []
            continue
        legacy = name == UNIT_FILE and any(u.startswith(folder + "/") for u in units)
        if name == ROOT_FILE or legacy:
            found.append(folder)
    out: list[str] = []
    for folder in sorted(set(found), key=lambda f: (f.count("/"), f)):
        if not any(folder.startswith(f + "/") for f in out):
            out.append(folder)
    return out


def _stack_texts(root: Path, files: list[str]) -> dict[str, str]:
    """Each stack file among ``files`` with its text."""
    return {
        p: (root / p).read_text(encoding="utf-8", errors="replace")
        for p in files
        if is_stack_file(p)
    }


def _stack_units(root: Path, live: tuple[str, ...], files: list[str]) -> list[Any]:
    """The units the stacks under ``live`` generate (in a scratch copy under ``.iac/``, as
    every command reads them), for their tiers and executors; none when Terragrunt is not
    at hand or a stack does not generate (doctor needs no tool)."""
    if not any(is_stack_file(p) for p in files):
        return []
    from tooling.engine.rules import stackscreen
    from tooling.io import config, git, stacks, terragrunt
    from tooling.io.binpath import ensure_bin_dir_on_path

    ensure_bin_dir_on_path()
    mark_private(root)  # the scratch copy goes in .iac/, which git then ignores
    try:
        generated = stacks.generate(
            root,
            live,
            terragrunt.base_env({}),
            None,
            screen=stackscreen.screen,
            git_prefix=git.prefix(root),
            policy=config.read_policy(root),
        )
    except (ToolingError, OSError):
        return []
    if generated is None:
        return []
    return [u for u in generated.model.units.values() if generated_unit(u.path) and not u.error]


def suggest_layout(root: Path, policy: Policy, model: Model | None) -> Suggestion:
    """The ``[layout]`` the repository's files suggest (units read with it, for the tiers),
    and the executors its units name that ``policy`` does not declare."""
    layout = policy.layout
    files = repository_files(root)
    catalog = catalog_folders(_stack_texts(root, files))
    live = live_folders(files, catalog) or layout.live
    if model is None or live != layout.live:
        model = load(WorkTree(root, live), None) if live else None
    units = list(model.units.values()) if model else []
    units += _stack_units(root, live, files)
    included = {r for u in units for r in u.reads if "/" not in r}
    # a unit the model cannot evaluate still names the file it includes
    included |= parent_file_names(
        (root / p).read_text(encoding="utf-8", errors="replace")
        for p in files
        if p.endswith("/" + UNIT_FILE) and p.startswith(tuple(f + "/" for f in live))
    )
    found = suggest(files, included, catalog=catalog)
    if found.root_file is not None:
        # a folder whose units do not include the root file is not live (test fixtures...);
        # a folder of stacks is (its units exist once generated)
        units = [u for u in units if found.root_file in u.reads]
        keep = {u.path.split("/", 1)[0] for u in units}
        keep |= {p.split("/", 1)[0] for p in files if is_stack_file(p) and "/" in p}
        found = replace(found, live=tuple(d for d in found.live if d in keep) or found.live)
    roots = state_roots(
        found.live,
        ((u.path, u.state_key, u.executor) for u in units if u.executor != UNRESOLVED_EXECUTOR),
    )
    if roots:
        # the tiers as they will be once pasted: each root names its units' default tier
        tiers = tuple((folder, folder.rsplit("/", 1)[-1]) for folder, _, _ in roots)
        with_tiers = load(WorkTree(root, found.live, git.prefix(root), tiers), None)
        units = [u for u in with_tiers.units.values() if u.path in {x.path for x in units}]
        # each root with an executor is a layer: the roots its units reach already are
        # the repository's own terms (a new reach across roots is then for review)
        layers = [folder for folder, _, executor in roots if executor is not None]
        depends = root_dependencies(layers, ((u.path, (*u.dependencies, *u.reads)) for u in units))
        found = replace(found, roots=roots, depends=depends)
    else:
        tables = _policy_tables(root)
        check = tables.get("check", {})
        declared = isinstance(check, dict) and "foundation_state_prefix" in check
        app = policy.check.app_state_prefix
        prefix = None if declared else _common_state_prefix(found.live, units, app)
        found = replace(found, state_prefix=prefix, check_declared="check" in tables)
    return replace(
        found,
        tiers=tuple(sorted(Counter(u.tier for u in units).items())),
        left_out=left_out(files, found.live, catalog),
        executors=_executors(policy, units),
    )


def _policy_tables(root: Path) -> dict[str, Any]:
    """policy.toml's tables as written ({} when absent or unreadable: doctor says why):
    which keys the file sets, where the typed policy holds only their values."""
    try:
        data = tomllib.loads((root / POLICY_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _common_state_prefix(live: tuple[str, ...], units: list[Any], app: str) -> str | None:
    """The folder all the units' state keys start with, when it is not their live
    folder's (a local backend's path is left out: check matches its folders anywhere)."""
    keys = [
        (u.path, u.state_key)
        for u in units
        if u.state_key is not None and u.state_backend != "local" and not u.error
    ]
    return common_state_prefix(live, keys, app)


def _executors(policy: Policy, units: list[Any]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The executors ``units`` run on that ``policy`` does not declare, each with the
    runner labels suggested for it (``matrix`` refuses a unit whose executor is not
    declared): doctor's block declares them (and never one declared already)."""
    declared = policy.executors
    out = []
    for name in sorted({u.executor for u in units if u.executor != UNRESOLVED_EXECUTOR}):
        if name not in declared:
            out.append((name, tuple(runner_labels(name))))
    return tuple(out)


def diagnose(root: Path, policy: Policy, model: Model | None) -> list[Finding]:
    """The findings for the repository at ``root`` under its ``policy`` (``model`` None when
    there are no units)."""
    layout = policy.layout
    out: list[Finding] = []
    if not (root / "policy.toml").is_file():
        out.append(
            Finding(
                "note",
                "policy.toml",
                "absent: today's layout is assumed (live/ and root.hcl); "
                "add a [layout] table to name other folders (docs/commands.md, `invoke doctor`)",
            )
        )
    for folder in layout.live:
        if not (root / folder).is_dir():
            out.append(
                Finding(
                    "needs",
                    folder,
                    "the live folder does not exist: create it or set "
                    "[layout] live in policy.toml to the folder(s) holding your units",
                )
            )
    if not (root / layout.root_file).is_file():
        legacy = root / UNIT_FILE
        hint = (
            (
                f"a root {UNIT_FILE} exists: rename it to {layout.root_file} and include it with "
                f'find_in_parent_folders("{layout.root_file}") (Terragrunt\'s own migration advice), '
                "or set [layout] root_file"
            )
            if legacy.is_file()
            else "create it or set [layout] root_file"
        )
        out.append(Finding("needs", layout.root_file, f"the root file is missing: {hint}"))
    from tooling.io import toolchain

    if toolchain.pin_file(root).is_file():
        try:
            toolchain.read_pins(root)
        except ToolingError as exc:
            out.append(Finding("needs", ".tool-versions", str(exc)))
    else:
        out.append(
            Finding(
                "needs",
                ".tool-versions",
                "missing: pin opentofu and terragrunt "
                "(e.g. `opentofu 1.12.6` and `terragrunt 1.1.3`) so every executor runs the same tools",
            )
        )
    if _gitignore_ignores_lock_files(root):
        out.append(
            Finding(
                "needs",
                ".gitignore",
                "ignores .terraform.lock.hcl: commit lock files so both "
                "executors use the same provider versions (remove the line)",
            )
        )
    for stack in _stack_files(root, layout):
        out.append(
            Finding(
                "note",
                stack,
                "a Terragrunt stack: its units exist only after "
                "`terragrunt stack generate`; the model reads the generated units",
            )
        )
    excludes_file = root / EXCLUDES_FILE
    if excludes_file.is_file():
        text = excludes_file.read_text(encoding="utf-8", errors="replace")
        for pattern in parse_excludes_file(text, root.as_posix()):
            if pattern.regex is None:
                out.append(
                    Finding(
                        "note",
                        f"{EXCLUDES_FILE}:{pattern.line}",
                        f"{pattern.text!r} is a filter query the model does not read: the units it "
                        "excludes are still selected, and their plans fail (Terragrunt leaves them out); "
                        "write unit paths or globs (e.g. live/old/**)",
                    )
                )
    if model is not None:
        if not model.units:
            out.append(
                Finding("needs", ", ".join(layout.live), f"no {UNIT_FILE} found: no unit to plan")
            )
        for path in model.order:
            unit = model.units[path]
            if unit.exclude and excludes(unit.exclude, "plan"):
                out.append(
                    Finding(
                        "note",
                        path,
                        f"excluded by {unit.exclude['where']}: reported `excluded`, never planned "
                        "(Terragrunt leaves it out of `run --all plan`)",
                    )
                )
            if unit.error and "HCL syntax error" in unit.error:
                out.append(Finding("needs", path, f"does not parse: {unit.error}"))
            elif unit.error:
                out.append(
                    Finding(
                        "note",
                        path,
                        f"the model cannot evaluate it, so any change plans it: {unit.error}",
                    )
                )
            own = f"{path}/{UNIT_FILE}" if path != "." else UNIT_FILE
            for read in unit.reads:
                if read != own and read.rsplit("/", 1)[-1] == UNIT_FILE:
                    out.append(
                        Finding(
                            "note",
                            path,
                            f"includes or reads {read}: a file named {UNIT_FILE} "
                            f"is a unit of its own to Terragrunt; name shared files otherwise "
                            f"(e.g. {shared_name(layout)})",
                        )
                    )
        out += _plan_refusals(root, policy, model)
    return out


def _plan_refusals(root: Path, policy: Policy, model: Model) -> list[Finding]:
    """What ``plan`` refuses before Terragrunt parses anything (``run_cmd``, the command
    functions, dependency outputs outside ``inputs``), one finding each, where it is."""
    from tooling.engine.rules.before_terragrunt import refused_lines

    pol = policy.check
    out = []
    for line in refused_lines(root, model, list(model.units), pol):
        where, _, what = line.partition(": ")
        out.append(Finding("needs", where, f"plan refuses it: {what}"))
    return out


def run(root: Path, *, as_json: bool, policy: Policy | None = None) -> int:
    """``invoke doctor``: examine the repository at ``root``, whose policy.toml is
    ``policy`` when the task's preamble read it (None: read here, and a policy.toml
    that cannot be read is a finding, the defaults read in its place)."""
    if not root.is_dir():
        raise UsageError(f"--path {root}: not a folder")
    root = root.resolve()
    top = root
    roots = [] if (root / POLICY_FILE).is_file() else project_roots_below(root)
    below = roots[0] if roots else None
    if below is not None:
        root = root / below  # the project root: the folder of the root file units include
    findings: list[Finding] = []
    if policy is None or below is not None:
        try:
            policy = config.read_policy(root)
        except ToolingError as exc:
            findings.append(Finding("needs", POLICY_FILE, str(exc)))
            policy = policy_from({})  # what a repository without policy.toml reads
    layout = policy.layout
    existing = tuple(d for d in layout.live if (root / d).is_dir())
    model = load(WorkTree(root, existing, git.prefix(root)), None) if existing else None
    if below is not None and not (root / POLICY_FILE).is_file():
        findings.append(
            Finding(
                "needs",
                below,
                f"the project root, below {top.name}/: the units include its root file; "
                f"paste the layout below into {below}/{POLICY_FILE} (every command then finds "
                f"it from here too)",
            )
        )
    for other in roots[1:]:
        findings.append(
            Finding(
                "note",
                other,
                f"another project root (its units include its root file), left out of "
                f"{below}'s layout: run doctor in {other}/ to adopt it on its own (once both "
                "have a policy.toml, commands run in each one's folder, not at git's top level)",
            )
        )
    findings += diagnose(root, policy, model)
    suggestion = suggest_layout(root, policy, model)
    for folder, paths in suggestion.left_out:
        findings.append(
            Finding(
                "note",
                folder,
                f"{len(paths)} {UNIT_FILE} file(s) outside the suggested live folders "
                f"(e.g. {paths[0]}): no command reads them; if they are units, add their "
                "folder to [layout] live",
            )
        )
    needs = [f for f in findings if f.level == "needs"]
    if as_json:
        print(
            json.dumps(
                {
                    "root": str(root),
                    "live": list(layout.live),
                    "root_file": layout.root_file,
                    "units": len(model.units) if model else 0,
                    "findings": [f.to_json() for f in findings],
                    "suggested_layout": suggestion.to_json(),
                },
                indent=2,
            )
        )
    else:
        units = len(model.units) if model else 0
        print(f"{units} units under {', '.join(layout.live)}; root file {layout.root_file}")
        for finding in findings:
            print(f"  {finding.level:<5} {finding.where}: {finding.what}")
        into = f"{below}/{POLICY_FILE}" if below else POLICY_FILE
        print(f"\nthe layout found here, for {into} (paste it as it is):\n")
        print(suggestion.toml())
        print(
            "ready to adopt" if not needs else f"{len(needs)} thing(s) to do before adopting",
            file=sys.stderr,
        )
    return 1 if needs else 0
