"""The bump commands: ``invoke bump-module``, ``invoke outdated``, ``invoke bump-all``.

The I/O around :mod:`tooling.core.bump` (pure): read the units, list tags
(:mod:`tooling.io.tags`), then per pull request converge (after all-repos'
``autofix_lib``): check, branch from the default branch, edit, commit, push,
open or update the pull request (:mod:`tooling.io.forge`).

Human output goes to stderr; stdout carries only what the command produces
(the ``--json`` document, or a pull request's title and body when there is no
token to open it).

Rules the flow keeps:

- the working tree must be clean (the message names the files);
- the units are read from the default branch (``origin/HEAD``), which the
  bump branch starts from, not from whatever is checked out;
- a branch is rebuilt from the default branch on every run (so it is rebased
  and the pull request retitled), and force-pushed with a lease, but only
  when every commit on it is the bot's (author email: ``IAC_BUMP_AUTHOR_EMAIL``,
  else git's own identity); a branch carrying anyone else's commit is
  reported and left alone;
- ``bump-all`` never reopens a pull request closed without merging for that
  version (``forge.find_pull`` on the branch name tells).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tooling.core.bump.locks import lock_command, lock_path
from tooling.core.bump.pins import (
    Inventory,
    inventory,
    match_units,
    select_module,
    select_pins,
    split_globs,
)
from tooling.core.bump.plans import BumpPlan, apply_changes, changed_lines, plan_all, plan_bump
from tooling.core.bump.texts import outdated_report, pr_body, pr_title
from tooling.engine.bump.pull_requests import (
    Context,
    Outcome,
    close_superseded,
    converge,
    discover,
    lock_platforms,
    open_context,
    read_changelog,
    recover,
    unit_texts,
)
from tooling.engine.rules.before_terragrunt import refuse_unparsable
from tooling.errors import ToolingError
from tooling.io import tags
from tooling.io.ui import say, show
from tooling.io.workspace import Workspace
from tooling.model.trees import GitTree

# --------------------------------------------------------------------------- commands


def _show_dry_run(
    ws: Workspace, plan: BumpPlan, texts: Mapping[str, str], title: str, body: str, base: str
) -> None:
    new = apply_changes(texts, plan.changes)
    show(f"dry run: would create {plan.branch} from {base} and change {len(plan.changes)} unit(s):")
    for file in sorted(new):
        old_lines = texts[file].splitlines()
        new_lines = new[file].splitlines()
        for n in changed_lines(texts[file], new[file]):
            show(f"  {file}:{n}")
            show(f"  - {old_lines[n - 1].strip()}")
            show(f"  + {new_lines[n - 1].strip()}")
    command = lock_command(lock_platforms(ws))
    for unit in sorted({c.pin.unit for c in plan.changes}):
        show(
            f"  would lock the providers of {unit}: `{command}` (commits {lock_path(unit)} if it changes)"
        )
    print(f"branch: {plan.branch}\ntitle: {title}\n\n{body}", end="")


def _default_branch_pins(ws: Workspace, ctx: Context) -> tuple[GitTree, Inventory]:
    """The default branch's tree and what its units pin; the context learns the module
    repositories. A unit that does not parse may pin a module too: refused first."""
    tree = ws.tree_at(ctx.default_sha)
    model = ws.model(tree)
    refuse_unparsable(model, list(model.units), doing="bump modules")
    inv = inventory(unit_texts(ws, tree))
    ctx.modules = tuple(sorted({p.url for p in inv.pins}))
    return tree, inv


def bump_module(
    ws: Workspace, module: str, version: str, *, units: str | None = None, dry_run: bool = False
) -> int:
    """``invoke bump-module``: one module to one tag, in every (selected) unit pinning it."""
    ctx = open_context(ws, fetch=not dry_run, need_clean=not dry_run)
    tree, inv = _default_branch_pins(ws, ctx)
    pins = select_module(inv.pins, module)
    globs = split_globs(units)
    pins = select_pins(pins, globs)
    if not pins:
        raise ToolingError(f"no unit matching --units {units} pins {module}")
    listed = tags.list_tags(pins[0].url, ctx.module_env, ctx.git_token)
    if not listed.ok:
        raise ToolingError(f"cannot list the tags of {pins[0].url}: {listed.error}")
    plan = plan_bump(pins, listed, version)
    if not plan.changes:
        say(f"every selected unit already pins {plan.module} {version}: nothing to do")
        return 0
    log = read_changelog(ctx, plan)
    title, body = pr_title(plan), pr_body(plan, log)
    if dry_run:
        texts = {f: tree.read(f).decode("utf-8", "surrogateescape") for f in plan.files}
        _show_dry_run(ws, plan, texts, title, body, ctx.default_ref)
        return 0
    try:
        outcome = converge(ctx, plan, log, reopen_closed=True)
    except BaseException:
        recover(ctx)
        raise
    if outcome.status == "skipped":
        raise ToolingError(f"{plan.branch}: {outcome.detail}")
    if outcome.status == "committed":
        say(
            f"{outcome.detail} ({len(plan.changes)} unit(s)); no GITHUB_TOKEN, so not pushed and no "
            f"pull request. The branch is checked out; push it and open the pull request with:"
        )
        say(f"  git push origin {plan.branch}")
        print(f"title: {outcome.title}\n\n{outcome.body}", end="")
        return 0
    ctx.restore()
    say(f"{plan.branch}: {outcome.detail} {outcome.pr_url or ''}".rstrip())
    return 0


def outdated(ws: Workspace, *, as_json: bool = False) -> int:
    """``invoke outdated``: every pinned module against its repository's tags.

    Reads the working tree as it is. Exit code 1 when a repository's tags could
    not be listed (the others are still reported).
    """
    inv = inventory(unit_texts(ws, ws.work_tree()))
    if not inv.pins and not inv.skipped:
        # nothing is skipped silently: an empty list says where no unit was found
        say(f"no unit found under {', '.join(ws.layout.live)} (policy.toml [layout] live)")
    repos = discover(ws.env_for(p.url for p in inv.pins), tags.token_from_env(), inv.pins)
    report = outdated_report(inv, repos)
    if as_json:
        print(json.dumps(report, indent=2))
    else:
        _print_outdated(report)
    return 1 if report["errors"] else 0


def _print_outdated(report: Mapping[str, Any]) -> None:
    rows = [
        (
            m["module"],
            m["current"],
            m["latest"] or "-",
            m["latest_major"] or "-",
            ", ".join(u["path"] for u in m["units"]),
        )
        for m in report["modules"]
    ]
    header = ("MODULE", "CURRENT", "LATEST", "MAJOR", "UNITS")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    for row in [header, *rows]:
        show(
            "  ".join(cell.ljust(w) for cell, w in zip(row[:4], widths, strict=True))
            + "  "
            + row[4]
        )
    if report["skipped"]:
        show("skipped:")
        for s in report["skipped"]:
            show(f"  {s['unit']}: {s['reason']}")
    if report["errors"]:
        say("could not list tags:")
        for e in report["errors"]:
            say(f"  {e['module']} ({e['url']}): {e['error']}")


def bump_all(ws: Workspace, *, units: str | None = None) -> int:
    """``invoke bump-all``: one pull request per module and target (majors apart).

    Exit code 1 when a module failed or a repository could not be queried
    (every other module is still handled).
    """
    ctx = open_context(ws, fetch=True, need_clean=True)
    _, inv = _default_branch_pins(ws, ctx)
    globs = split_globs(units)
    pins = select_pins(inv.pins, globs)
    repos = discover(ctx.module_env, ctx.git_token, pins)
    failed = 0
    for identity, repo in sorted(repos.items()):
        if not repo.ok:
            failed += 1
            say(f"cannot list the tags of {identity} ({repo.url}): {repo.error}")
    for skipped in inv.skipped:
        if match_units(skipped.unit, globs):
            say(f"skipped {skipped.unit}: {skipped.reason}")
    plans = plan_all(pins, repos)
    if not plans:
        say("every module is at its newest version")
    outcomes: list[Outcome] = []
    try:
        for plan in plans:
            try:
                outcome = converge(ctx, plan, read_changelog(ctx, plan), reopen_closed=False)
                if outcome.pr_number is not None:
                    for old in close_superseded(ctx, plan, outcome.pr_number):
                        say(f"closed #{old}: superseded by #{outcome.pr_number}")
            except ToolingError as exc:
                recover(ctx)
                outcome = Outcome(plan, "failed", str(exc))
            outcomes.append(outcome)
            kind = " (major)" if plan.major else ""
            say(f"{outcome.status:<9} {plan.branch}{kind}: {outcome.detail}")
    finally:
        ctx.restore()
    failed += sum(1 for o in outcomes if o.status == "failed")
    return 1 if failed else 0
