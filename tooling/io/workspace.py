"""The repository a task runs in: its root, settings, model and tool environment."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from tooling.errors import ToolingError
from tooling.io import config
from tooling.model.repo import Model, Tree, WorkTree, load


def find_root(start: Path | None = None) -> Path:
    """The repository root: the nearest folder above ``start`` holding root.hcl and live/."""
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "root.hcl").is_file() and (candidate / "live").is_dir():
            return candidate
    raise ToolingError(f"{here}: not inside an infrastructure repository (no root.hcl with a live/ folder above it)")


@dataclass
class Workspace:
    root: Path
    settings: config.Settings = field(default_factory=config.load)

    def __post_init__(self) -> None:
        # Absolute, always: the state path and the plans' locations derive from it.
        self.root = self.root.resolve()

    @classmethod
    def here(cls, start: Path | None = None) -> Workspace:
        return cls(find_root(start))

    @property
    def cache_dir(self) -> Path:
        """Per-repository cache (parse cache, models), inside the ignored .iac/ folder."""
        return self.root / ".iac" / "cache"

    def model(self, tree: Tree | None = None) -> Model:
        """The model of ``tree`` (default: the working tree, read now)."""
        return load(tree or WorkTree(self.root), self.cache_dir)

    @cached_property
    def current_model(self) -> Model:
        """The working tree's model, loaded once per run and shared (plan, tool environment)."""
        return self.model()

    @cached_property
    def policy(self) -> dict[str, Any]:
        """policy.toml, read once per run (see :func:`tooling.io.config.read_policy`)."""
        return config.read_policy(self.root)

    @cached_property
    def tool_env(self) -> dict[str, str]:
        """Environment for terragrunt/tofu/git children: module sources mapped, tools pinned."""
        from tooling.io import sandbox, terragrunt

        rewrites = list(self.settings.module_rewrites)
        if self.settings.module_sources == "sandbox":
            built = sandbox.build(self.settings.cache_dir)
            sources = [u.source for u in self.current_model.units.values() if u.source]
            rewrites.extend(sandbox.rewrites(sources, built))
        env = terragrunt.base_env(config.git_rewrite_env(tuple(rewrites)) if rewrites else {})
        if not self.settings.state_bucket:
            env.setdefault("IAC_STATE_DIR", str(self.root / ".iac" / "state"))
        return env

    def check_tools(self) -> None:
        """Refuse to run with tool versions other than the pinned ones."""
        from tooling.io import toolchain

        toolchain.check_versions(self.root)
