"""Terragrunt Stacks on disk: the units a ``terragrunt.stack.hcl`` declares, generated in a scratch copy.

A stack's units exist only after ``terragrunt stack generate`` (they land in
``<stack folder>/.terragrunt-stack/``, a folder that is usually not
committed, and that goes stale as soon as the stack file, its ``values`` or a
catalog unit changes). To read and plan them as they are *now*, the working
tree is copied (without tool folders and without any ``.terragrunt-stack``
already generated in place), the pinned Terragrunt generates every stack of
the copy, and the model of the copy is the repository's model: same paths,
same reads, plus the generated units, each evaluated like any unit. Plans of
those units run in the copy. The working tree is never written.

A stack that does not generate does not blind the others: each stack folder
is generated on its own, and the units of one that fails keep the error, so
any change selects them and their plan fails visibly.
"""

from __future__ import annotations

import atexit
import dataclasses
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tooling.io import proc, terragrunt
from tooling.model.policy import Policy, policy_from
from tooling.model.repo import load
from tooling.model.stacks import STACK_DIR, generated_unit, stack_files
from tooling.model.trees import SKIP_DIRS, WorkTree
from tooling.model.units import Model

#: where scratch copies are made, under the repository's ignored tool folder
SCRATCH_DIR = Path(".iac") / "stacks"


@dataclass(frozen=True)
class Generated:
    """A scratch copy of the working tree with every stack generated."""

    root: Path
    model: Model
    #: stack file -> why ``terragrunt stack generate`` failed for its folder
    failures: dict[str, str] = field(default_factory=dict)


def copy_tree(src: Path, dest: Path) -> None:
    """Copy the files of ``src`` into ``dest``: no tool folders, no stack already generated in place."""
    skip = SKIP_DIRS | {STACK_DIR}
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames[:] = [d for d in dirnames if d not in skip]
        here = Path(dirpath)
        target = dest / here.relative_to(src)
        target.mkdir(parents=True, exist_ok=True)
        for name in filenames:
            source = here / name
            if source.is_symlink():
                (target / name).symlink_to(os.readlink(source))
            else:
                shutil.copy2(source, target / name)
        for name in list(dirnames):
            if (here / name).is_symlink():  # a linked folder: keep the link, do not walk into it
                (target / name).symlink_to(os.readlink(here / name))
                dirnames.remove(name)


#: decides, before ``terragrunt stack generate`` parses them, which stacks may be
#: generated: (root, live folders, git prefix, policy.toml, stack files) -> {stack file:
#: why it may not} (:func:`tooling.engine.rules.stackscreen.screen`)
StackScreen = Callable[[Path, tuple[str, ...], str, Policy, Sequence[str]], Mapping[str, str]]

#: how the reason a stack was not generated starts (its units' error)
NOT_GENERATED = "not generated: "
#: why a stack is not generated when no screen was given: nothing unscanned is parsed
UNSCREENED = NOT_GENERATED + "its files were not scanned before Terragrunt would parse them"


def generate(
    root: Path,
    live: tuple[str, ...],
    env: dict[str, str],
    cache_dir: Path | None,
    default_tiers: tuple[tuple[str, str], ...] = (),
    *,
    screen: StackScreen | None = None,
    git_prefix: str = "",
    policy: Policy | None = None,
) -> Generated | None:
    """Generate every stack of the working tree at ``root`` in a scratch copy; None if there is none.

    Each stack is first passed through ``screen`` (its files scanned, its sources
    checked): one it refuses, or every one when there is no screen, is not generated
    (its units keep the reason), so no Terragrunt process parses a file nothing
    scanned. The copy lives until the process ends (plans run in it).
    """
    stacks = stack_files(WorkTree(root, live))
    if not stacks:
        return None
    refused = (
        dict(screen(root, live, git_prefix, policy or policy_from({}), stacks))
        if screen is not None
        else dict.fromkeys(stacks, UNSCREENED)
    )
    parent = root / SCRATCH_DIR
    parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="tree-", dir=parent))
    atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    copy_tree(root, scratch)
    failures: dict[str, str] = dict(refused)
    for stack in stacks:
        if stack in refused:
            continue
        folder = scratch / (os.path.dirname(stack) or ".")
        ran = proc.run(
            ["terragrunt", "stack", "generate", "--no-color"],
            cwd=folder,
            env=env,
            ok_codes=range(256),
        )
        if ran.returncode != 0:
            # nothing half-generated is read or planned: the stack's units keep the error
            shutil.rmtree(folder / STACK_DIR, ignore_errors=True)
            failures[stack] = (
                f"`terragrunt stack generate` failed for {stack} (exit {ran.returncode}): "
                + terragrunt.error_summary(ran.stderr or ran.stdout)
            )
    model = load(WorkTree(scratch, live, default_tiers=default_tiers), cache_dir)
    if failures:
        units = dict(model.units)
        for path, unit in units.items():
            failed = [failures[s] for s in unit.reads if s in failures]
            if failed and generated_unit(path):
                units[path] = dataclasses.replace(unit, error="; ".join(failed))
        model = Model(units, model.order)
    return Generated(scratch, model, failures)
