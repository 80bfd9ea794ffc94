"""Module bumps as data: which units pin what, what to bump them to, and the texts.

Pure functions only (no subprocess, no file or network access); the commands
in :mod:`tooling.commands.bump` read the files and the tags, call these, and act.
One module per responsibility, each imported from where it lives: :mod:`.pins` (the
inventory), :mod:`.plans` (plans and edits), :mod:`.changelog`, :mod:`.locks` (provider
lock files), :mod:`.texts` (what people read) and :mod:`.upgrades` (which tag to move to).

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
