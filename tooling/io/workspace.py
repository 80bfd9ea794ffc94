"""The repository a task runs in: its root, settings, model and tool environment."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from tooling.errors import ToolingError
from tooling.io import config
from tooling.model.layout import Layout, route_blind
from tooling.model.policy import POLICY_FILE, Policy
from tooling.model.repo import load
from tooling.model.stacks import generated_unit, stack_files
from tooling.model.trees import GitTree, Tree, WorkTree
from tooling.model.units import Model

if TYPE_CHECKING:
    from tooling.io.stacks import Generated, StackScreen
    from tooling.io.toolchain import InstalledTool


#: what a root file reads when it takes its state from the tooling's settings (the example's)
STATE_SETTING = "IAC_STATE_BUCKET"

#: the tool's own folder in a repository: local state, plan reports, caches, scratch copies
PRIVATE_DIR = ".iac"


def pins_any(sources: Iterable[str], repos: Iterable[str]) -> bool:
    """Whether a module source among ``sources`` pins one of the repositories ``repos``
    (by its short name, :attr:`~tooling.model.sources.ModuleSource.short_name`).

    A source's short name is a segment of its text, percent-decoded: a source whose
    text holds no percent-escape and none of the names (compared in lower case) pins
    none of them, and only the others are parsed (so a repository whose modules are
    all its own, a task's first line imports no source parser)."""
    names = {repo.lower() for repo in repos}
    maybe = [s for s in sources if "%" in s or any(name in s.lower() for name in names)]
    if not maybe:
        return False
    from tooling.model.sources import parse_source

    wanted = set(repos)
    return any(parse_source(source).short_name in wanted for source in maybe)


def mark_private(root: Path) -> Path:
    """``root/.iac``, created with a ``.gitignore`` of its own (``*``) as virtual environments
    do, so what the tooling writes there never shows up in ``git status`` of a repository
    whose own .gitignore does not mention it (a bump refuses a dirty tree)."""
    folder = root / PRIVATE_DIR
    ignore = folder / ".gitignore"
    # best effort: a folder that cannot be written is named by the write that needs it
    with contextlib.suppress(OSError):
        folder.mkdir(exist_ok=True)
        if not ignore.is_file():
            ignore.write_text(
                "# written by the iac tooling: nothing in this folder is committed\n*\n"
            )
    return folder


@dataclass(frozen=True)
class Project:
    """A project root and its policy.toml, read once where the root was found."""

    root: Path
    policy: Policy


def project_at(candidate: Path) -> Project | None:
    """``candidate`` as a project root, when it holds the root file and the live folder(s)
    its policy.toml names (none: today's layout); else None."""
    policy = config.read_policy(candidate)
    layout = policy.layout
    if (candidate / layout.root_file).is_file() and all(
        (candidate / d).is_dir() for d in layout.live
    ):
        return Project(candidate, policy)
    return None


def nearest_project(start: Path | None = None) -> Project | None:
    """The nearest folder above ``start`` holding the root file and live folder(s), with
    its policy; at git's top level, else the one project root below it whose policy.toml
    says so (:func:`project_below`); else None."""
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        found = project_at(candidate)
        if found is not None:
            return found
    if (here / ".git").exists():
        return project_below(here)
    return None


def nearest_root(start: Path | None = None) -> Path | None:
    """The root of :func:`nearest_project` (None: not inside a project)."""
    found = nearest_project(start)
    return found.root if found is not None else None


#: how deep below git's top level a project root's policy.toml is looked for
_ROOT_DEPTH = 4


def project_below(top: Path) -> Project | None:
    """The one project root below ``top`` (a folder whose policy.toml, root file and live
    folders make it one, at most :data:`_ROOT_DEPTH` folders down); None if none or several."""
    from tooling.model.trees import SKIP_DIRS

    found: list[Project] = []
    for dirpath, dirnames, filenames in os.walk(top):
        depth = len(Path(dirpath).relative_to(top).parts)
        dirnames[:] = [
            d
            for d in dirnames
            if d not in SKIP_DIRS and not d.startswith(".") and depth < _ROOT_DEPTH
        ]
        if POLICY_FILE in filenames and dirpath != str(top):
            project = project_at(Path(dirpath))
            if project is not None:
                found.append(project)
    return found[0] if len(found) == 1 else None


def find_project(start: Path | None = None) -> Project:
    """The project around ``start``: the nearest folder above it holding the root file and
    live folder(s), with its policy.toml read.

    By default ``root.hcl`` and ``live/``; policy.toml ``[layout]`` names others.
    """
    found = nearest_project(start)
    if found is not None:
        return found
    here = (start or Path.cwd()).resolve()
    raise ToolingError(
        f"{here}: not inside an infrastructure repository (no root.hcl with a live/ folder above it, "
        "nor the root_file and live folders a policy.toml [layout] names). Run `invoke doctor` there."
    )


def find_root(start: Path | None = None) -> Path:
    """The repository root: the root of :func:`find_project`."""
    return find_project(start).root


class Workspace:
    """The repository a task runs in: its root, settings, policy, layout and models, read
    once per run."""

    def __init__(
        self,
        root: Path,
        settings: config.Settings | None = None,
        policy: Policy | None = None,
        stack_screen: StackScreen | None = None,
    ) -> None:
        # Absolute, always: the state path and the plans' locations derive from it.
        self.root = root.resolve()
        self.settings = settings if settings is not None else config.load()
        #: policy.toml, parsed and checked: the task preamble's (:func:`tooling.cli.workspace`),
        #: else read from ``root`` now (:func:`tooling.io.config.read_policy`)
        self.policy = policy if policy is not None else config.read_policy(self.root)
        #: the models of git revisions read in this run, by the tree's fingerprint
        self._revision_models: dict[str, Model] = {}
        #: what scans the stacks before ``terragrunt stack generate`` parses them
        #: (:func:`tooling.engine.rules.stackscreen.screen`, which the command line gives); None:
        #: no stack is generated (its units stay unread, with the reason)
        self.stack_screen = stack_screen

    @classmethod
    def here(
        cls, start: Path | None = None, *, stack_screen: StackScreen | None = None
    ) -> Workspace:
        project = find_project(start)
        return cls(project.root, policy=project.policy, stack_screen=stack_screen)

    @property
    def cache_dir(self) -> Path:
        """Per-repository cache (parse cache, models), inside the ignored .iac/ folder."""
        return self.root / ".iac" / "cache"

    @cached_property
    def run_settings(self) -> config.Settings:
        """:attr:`settings` as they apply to this repository: what the first line of a task
        and summary.json say it runs against. A root file that does not read
        ``IAC_STATE_BUCKET`` declares its state itself (the local-state default is not
        used), and the sandbox catalog redirects only modules it has."""
        from dataclasses import replace

        from tooling.io import sandbox

        root_file = self.root / self.layout.root_file
        try:
            text = root_file.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        declared = None if STATE_SETTING in text else self.layout.root_file
        catalog = set(sandbox.catalog_repos())
        pinned = {u.source for u in self._banner_model().units.values() if u.source}
        used = pins_any(pinned, catalog)
        return replace(self.settings, state_declared_by=declared, catalog_used=used)

    def _banner_model(self) -> Model:
        """The model the first line reads (which modules the units pin): the working tree's
        when this run loaded it already, else HEAD's, cached by its tree SHA, so a task
        that needs no model of the disk (``affected`` on a clean tree) never walks it for
        its first line; the working tree's when there is no commit yet."""
        if "current_model" in self.__dict__:
            return self.current_model
        try:
            return self.model(self.tree_at("HEAD"))
        except ToolingError:
            return self.current_model

    def describe(self) -> str:
        """The one line every task that reads the units prints first (:attr:`run_settings`)."""
        return self.run_settings.describe()

    @property
    def layout(self) -> Layout:
        """policy.toml's ``[layout]``."""
        return self.policy.layout

    @cached_property
    def git_prefix(self) -> str:
        """The project root below git's top level (``"infra"``; ``""`` at the top)."""
        from tooling.io import git

        return git.prefix(self.root)

    def work_tree(self) -> WorkTree:
        return WorkTree(self.root, self.layout.live, self.git_prefix, self.layout.default_tiers)

    def tree_at(self, rev: str, tree_sha: str | None = None) -> GitTree:
        from tooling.io import git

        if tree_sha is None and "git_prefix" not in self.__dict__:
            # the first git question of a run (the first line's HEAD): the prefix with it
            found = git.prefix_and_tree(self.root, rev)
            if found is not None:
                self.__dict__["git_prefix"], tree_sha = found
        return git.tree_at(
            self.root,
            rev,
            tree_sha,
            live=self.layout.live,
            git_prefix=self.git_prefix,
            default_tiers=self.layout.default_tiers,
        )

    def model(self, tree: Tree | None = None) -> Model:
        """The model of ``tree`` (default: the working tree, read now); a git revision's
        once per run (the first line and the task may both read HEAD's)."""
        if not isinstance(tree, GitTree):
            return self._routed(load(tree or self.work_tree(), self.cache_dir))
        key = tree.fingerprint()
        if key not in self._revision_models:
            self._revision_models[key] = self._routed(load(tree, self.cache_dir))
        return self._revision_models[key]

    def _routed(self, model: Model) -> Model:
        """A unit the model cannot evaluate, routed by its folder (:func:`route_blind`)."""
        return route_blind(model, self.layout, tuple(self.policy.executors))

    @cached_property
    def current_model(self) -> Model:
        """The working tree's model, loaded once per run and shared (plan, tool environment).

        When the live folders hold Terragrunt stacks, it is the model of a scratch
        copy in which every stack was generated (:mod:`tooling.io.stacks`): the
        generated units are read like any other, and plans of them run there.
        """
        tree = self.work_tree()
        if stack_files(tree):
            generated = self.generated_stacks
            if generated is not None:
                return self._routed(generated.model)
        return self._routed(load(tree, self.cache_dir))

    @cached_property
    def generated_stacks(self) -> Generated | None:
        """The working tree's stacks generated in a scratch copy (None: no stack, or no Terragrunt)."""
        from tooling.io import stacks, terragrunt
        from tooling.io.ui import say

        rewrites = tuple(self.settings.module_rewrites)
        env = terragrunt.base_env(config.git_rewrite_env(rewrites) if rewrites else {})
        try:
            return stacks.generate(
                self.root,
                self.layout.live,
                env,
                self.cache_dir,
                self.layout.default_tiers,
                screen=self.stack_screen,
                git_prefix=self.git_prefix,
                policy=self.policy,
            )
        except ToolingError as exc:
            # the stack units keep their error: any change selects them, their plan fails visibly
            say(f"warning: the stacks were not generated, their units stay unread: {exc}")
            return None

    def run_dir(self, path: str) -> Path:
        """Where Terragrunt runs for the unit at ``path`` (a generated stack unit: in the scratch copy)."""
        if not generated_unit(path):
            return self.root / path
        generated = self.generated_stacks
        if generated is None:
            # never a folder generated earlier in place (it may be stale): a path that does not
            # exist, so the plan of this unit fails visibly
            return self.root / ".iac" / "stacks" / "not-generated" / path
        return generated.root / path

    @cached_property
    def tool_env(self) -> dict[str, str]:
        """Environment for terragrunt/tofu/git children: module sources mapped, tools pinned."""
        return self.env_for(())

    def env_for(self, sources: Iterable[str]) -> dict[str, str]:
        """:attr:`tool_env`, with the module repositories of ``sources`` mapped as well
        (a deleted unit's destroy plan fetches a module the working tree may no longer pin)."""
        from tooling.io import sandbox, terragrunt

        rewrites = list(self.settings.module_rewrites)
        if self.settings.module_sources == "sandbox":
            built = sandbox.build(self.settings.cache_dir)
            pinned = [u.source for u in self.current_model.units.values() if u.source]
            rewrites.extend(sandbox.rewrites([*pinned, *sources], built))
        env = terragrunt.base_env(config.git_rewrite_env(tuple(rewrites)) if rewrites else {})
        if not self.settings.state_bucket:
            env.setdefault("IAC_STATE_DIR", str(self.root / ".iac" / "state"))
        if self.settings.plugin_cache is not None:
            # one download per provider version across units and runs: OpenTofu
            # (>= 1.10) locks the cache for concurrent inits and checks what it
            # holds against the committed lock files' checksums
            self.settings.plugin_cache.mkdir(parents=True, exist_ok=True)
            env["TF_PLUGIN_CACHE_DIR"] = str(self.settings.plugin_cache)
        return env

    @cached_property
    def checked_tools(self) -> list[InstalledTool]:
        """The pinned tools as found on PATH, checked once per workspace (a task's
        preamble checks them first, :func:`tooling.cli.check_tools`); a version
        other than the pinned one is refused (:class:`ToolingError`)."""
        from tooling.io import toolchain

        return toolchain.check_versions(self.root)

    def check_tools(self) -> None:
        """Refuse to run with tool versions other than the pinned ones (once per workspace)."""
        self.checked_tools  # noqa: B018  (the check is the property's)
