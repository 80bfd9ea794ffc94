"""Module bumps as data: which units pin what, what to bump them to, and the texts.

Pure functions only (no subprocess, no file or network access); the commands
in :mod:`tooling.commands.bump` read the files and the tags, call these, and act.
One module per responsibility: :mod:`.pins` (the inventory), :mod:`.plans`
(plans and edits), :mod:`.changelog`, :mod:`.locks` (provider lock files),
:mod:`.texts` (what people read).

- :func:`inventory` reads every unit's ``terraform { source }`` (in the unit
  file, else in the one included file that sets it) into :class:`Pin` (a
  module pinned at a version, with the file and line of the ref) or
  :class:`Skipped` (with the reason: a branch, an unresolvable or registry
  source, a local path...). Nothing is skipped silently.
- :func:`plan_bump` (one module, one tag: ``invoke bump-module``) and
  :func:`plan_all` (every module, newest minor/patch and newest major apart:
  ``invoke bump-all``) turn pins and tags into :class:`BumpPlan`.
- :func:`apply_changes` edits the texts with :func:`tooling.core.refs.bump_text`
  (every other byte kept) and checks that exactly one line per pin changed.
- :func:`pr_title`, :func:`pr_body`, :func:`commit_message` and
  :func:`outdated_report` render them; :func:`changelog_sections` and
  :func:`render_changelog` build the changelog from what the module
  repository offers.
"""

from __future__ import annotations

from tooling.core.bump.changelog import (
    MAX_CHANGELOG,
    Changelog,
    changelog_sections,
    render_changelog,
)
from tooling.core.bump.locks import (
    LOCK_FILE,
    LockChange,
    LockedProvider,
    lock_changes,
    lock_command,
    lock_hint,
    lock_path,
    parse_lock,
)
from tooling.core.bump.pins import (
    REGISTRY_UNSUPPORTED,
    Inventory,
    Pin,
    Skipped,
    UnitText,
    inventory,
    match_units,
    nearest_tags,
    select_module,
    select_pins,
    split_globs,
)
from tooling.core.bump.plans import (
    BumpPlan,
    Change,
    apply_changes,
    branch_name,
    changed_lines,
    plan_all,
    plan_bump,
)
from tooling.core.bump.texts import MARKER, commit_message, outdated_report, pr_body, pr_title

__all__ = [
    "LOCK_FILE",
    "MARKER",
    "MAX_CHANGELOG",
    "REGISTRY_UNSUPPORTED",
    "BumpPlan",
    "Change",
    "Changelog",
    "Inventory",
    "LockChange",
    "LockedProvider",
    "Pin",
    "Skipped",
    "UnitText",
    "apply_changes",
    "branch_name",
    "changed_lines",
    "changelog_sections",
    "commit_message",
    "inventory",
    "lock_changes",
    "lock_command",
    "lock_hint",
    "lock_path",
    "match_units",
    "nearest_tags",
    "outdated_report",
    "parse_lock",
    "plan_all",
    "plan_bump",
    "pr_body",
    "pr_title",
    "render_changelog",
    "select_module",
    "select_pins",
    "split_globs",
]
