"""Settings: the environment variables every command shares, the cache root, and policy.toml.

Two things are configured separately (tests combine the sandbox catalog with
an S3 backend):

- **state**: local files under ``.iac/state/`` (default), or S3 when
  ``IAC_STATE_BUCKET`` is set (with ``IAC_STATE_REGION`` and, for an
  S3-compatible server, ``IAC_STATE_ENDPOINT``); root.hcl reads the same
  variables;
- **module sources**: ``IAC_MODULE_SOURCES=sandbox`` (default) redirects the
  module repositories the units pin to the sandbox catalog; ``remote`` uses the
  URLs as written, optionally rewritten with ``IAC_MODULE_REWRITE``
  (``FROM=TO[,FROM=TO...]``, applied by git's ``url.<TO>.insteadOf``).
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tooling.errors import ToolingError, UsageError
from tooling.model import encryption, policy
from tooling.model.policy import POLICY_FILE, Policy


@dataclass(frozen=True)
class Settings:
    """What every command runs against: module sources, state, caches, encryption (:func:`load`)."""

    module_sources: str  # sandbox | remote
    module_rewrites: tuple[tuple[str, str], ...]
    state_bucket: str | None
    state_region: str
    state_endpoint: str | None
    cache_dir: Path
    # OpenTofu's provider plugin cache: $TF_PLUGIN_CACHE_DIR, else cache_dir/providers
    plugin_cache: Path | None = None
    #: where `providers lock` looks for providers instead of their origin registries
    #: (IAC_PROVIDER_MIRROR: a filesystem mirror folder, or an https:// network mirror)
    provider_mirror: str | None = None
    #: what encrypts state and plans (root.hcl's encryption.tf); "" when plain
    encryption: str = ""
    #: the repository's root file when it declares its state itself rather than reading
    #: IAC_STATE_BUCKET (an adopted repository's S3 backend): the tooling's state settings
    #: do not apply (:meth:`tooling.io.workspace.Workspace.run_settings`)
    state_declared_by: str | None = None
    #: whether any unit pins a module the sandbox catalog has (else it redirects nothing)
    catalog_used: bool = True

    @property
    def state_backend(self) -> str:
        return "s3" if self.state_bucket else "local"

    @property
    def sandboxed(self) -> bool:
        """Module sources come from the sandbox catalog (for the units that pin its modules)."""
        return self.module_sources == "sandbox" and self.catalog_used

    @property
    def embedded_default(self) -> bool:
        """The sandbox module catalog with local state: what runs with nothing configured,
        on a repository whose root file reads the tooling's state settings."""
        return self.sandboxed and not self.state_bucket and self.state_declared_by is None

    def to_json(self) -> dict[str, Any]:
        """``settings`` in summary.json: what a run planned against."""
        return {
            "module_sources": self.module_sources,
            "state": self.state_backend,
            "embedded_default": self.embedded_default,
            "description": self.describe(),
        }

    def describe(self) -> str:
        """The one line every task prints first: what it runs against."""
        modules = (
            "sandbox module catalog"
            if self.sandboxed
            else "remote module repositories"
            if self.module_sources == "remote"
            else "module sources as written (none is in the sandbox catalog)"
        )
        if self.state_declared_by is not None:
            state = f"the state backend {self.state_declared_by} declares"
        elif self.state_bucket:
            where = f" at {self.state_endpoint}" if self.state_endpoint else ""
            state = f"S3 state in s3://{self.state_bucket}{where}"
        else:
            state = "local state under .iac/state/"
        default = " (embedded default)" if self.embedded_default else ""
        encrypted = f", {self.encryption}" if self.encryption else ""
        return f"using {modules}, {state}{default}{encrypted}"


def cache_root() -> Path:
    """The user-wide cache (pinned tools, sandbox catalog, module repositories).

    ``$IAC_CACHE_DIR``, else ``${XDG_CACHE_HOME:-~/.cache}/iac-tooling``.
    """
    explicit = os.environ.get("IAC_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "iac-tooling"


def read_policy(root: Path) -> Policy:
    """``root/policy.toml`` as one :class:`~tooling.model.policy.Policy` (every table's
    defaults when there is none): the one reader of that file.

    A task's preamble reads it once (:func:`tooling.cli.run`) and hands the value
    down; code that runs without one (a test calling the engine, ``doctor --path``)
    reads it here. Each call reads the file anew: nothing is kept.
    """
    path = root / POLICY_FILE
    text = _policy_text(path)
    return parse_policy_text(text or "", str(path))


def _policy_text(path: Path) -> str | None:
    """policy.toml's text (None: there is none)."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        raise ToolingError(
            f"{POLICY_FILE}: not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8"
        ) from None
    except OSError as exc:
        raise ToolingError(
            f"{POLICY_FILE}: cannot read it ({exc.strerror}); fix its permissions or remove it"
        ) from None


def parse_policy_text(text: str, where: str = POLICY_FILE) -> Policy:
    """policy.toml's text as a :class:`~tooling.model.policy.Policy`: TOML read, then every
    table checked (:func:`~tooling.model.policy.policy_from`; ``where`` names the file in
    the errors of ``[layout]``, each given the line of its table)."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ToolingError(toml_error(POLICY_FILE, exc)) from None
    try:
        return policy.policy_from(document, where)
    except ToolingError as exc:
        if "[layout" not in str(exc):
            raise
        # name the line of the [layout] table the error is about (policy.toml:LINE: ...)
        raise ToolingError(policy.located(str(exc), text), code=exc.code) from None


#: tomllib's message with its position (a pattern: compiled by ``re`` on the first error)
_TOML_AT = r"(?s)^(?P<msg>.*?) \(at line (?P<line>\d+), column (?P<col>\d+)\)$"


def toml_error(name: str, exc: tomllib.TOMLDecodeError) -> str:
    """``name:line:col: message. Fix the TOML.`` from tomllib's error (which puts the
    position at the end of its message)."""
    text = str(exc)
    found = re.match(_TOML_AT, text)
    if found is None:
        return f"{name}: {text}. Fix the TOML."
    return f"{name}:{found['line']}:{found['col']}: {found['msg']}. Fix the TOML."


def parse_rewrites(text: str) -> tuple[tuple[str, str], ...]:
    out = []
    for item in filter(None, (p.strip() for p in text.split(","))):
        src, sep, dst = item.partition("=")
        if not sep or not src or not dst:
            raise UsageError(f"IAC_MODULE_REWRITE: {item!r} is not FROM=TO")
        out.append((src, dst))
    return tuple(out)


def load() -> Settings:
    sources = os.environ.get("IAC_MODULE_SOURCES", "sandbox")
    if sources not in ("sandbox", "remote"):
        raise UsageError(f"IAC_MODULE_SOURCES={sources!r}: use 'sandbox' or 'remote'")
    wrong = encryption.problem(os.environ)
    if wrong:
        raise UsageError(wrong)
    return Settings(
        module_sources=sources,
        module_rewrites=parse_rewrites(os.environ.get("IAC_MODULE_REWRITE", "")),
        state_bucket=os.environ.get("IAC_STATE_BUCKET") or None,
        state_region=os.environ.get("IAC_STATE_REGION", "us-east-1"),
        state_endpoint=os.environ.get("IAC_STATE_ENDPOINT") or None,
        cache_dir=cache_root(),
        plugin_cache=Path(os.environ.get("TF_PLUGIN_CACHE_DIR") or cache_root() / "providers"),
        provider_mirror=os.environ.get("IAC_PROVIDER_MIRROR") or None,
        encryption=encryption.describe(os.environ),
    )


def git_rewrite_env(rewrites: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """Environment that makes every git child rewrite URLs (``url.TO.insteadOf FROM``)."""
    env = {"GIT_CONFIG_COUNT": str(len(rewrites))}
    for i, (src, dst) in enumerate(rewrites):
        env[f"GIT_CONFIG_KEY_{i}"] = f"url.{dst}.insteadOf"
        env[f"GIT_CONFIG_VALUE_{i}"] = src
    return env
