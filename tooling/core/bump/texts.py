"""The texts of a bump: pull request title and body, commit message, the outdated report. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tooling.core.bump.changelog import Changelog, render_changelog
from tooling.core.bump.locks import LockChange, lock_body, lock_commit_lines
from tooling.core.bump.pins import Inventory, Pin, Skipped
from tooling.core.bump.plans import BumpPlan, tag_version
from tooling.core.bump.upgrades import Skip, pick_upgrades
from tooling.model.sources import RepoTags
from tooling.model.versions import Version, format_like

#: hidden marker at the top of every bump pull request body
MARKER = "<!-- iac-tooling:bump -->"


# --------------------------------------------------------------------------- texts


def pr_title(plan: BumpPlan) -> str:
    """A conventional-commit title; a major bump carries ``!`` and says so."""
    if plan.major:
        return f"chore(deps)!: bump {plan.module} to {plan.target.name} (major)"
    return f"chore(deps): bump {plan.module} to {plan.target.name}"


def commit_message(plan: BumpPlan, locks: Sequence[LockChange] = ()) -> str:
    lines = [pr_title(plan), ""]
    lines.extend(f"{c.pin.unit}: {c.old} -> {c.new_version}" for c in plan.changes)
    lines.extend(lock_commit_lines(locks))
    if plan.major:
        lines += ["", f"BREAKING CHANGE: {plan.module} {plan.target.name} is a new major version."]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def pr_body(
    plan: BumpPlan,
    log: Changelog,
    locks: Sequence[LockChange] = (),
    platforms: Sequence[str] = (),
) -> str:
    """The pull request body: units table, major warning, lock files, changelog.

    ``locks``: what the bump changed in the units' lock files (refreshed for
    ``platforms``); none: the section is left out.
    """
    current = sorted({c.old for c in plan.changes}, key=lambda t: tag_version(t).precedence())
    lines = [
        MARKER,
        f"Bumps **{plan.module}** (`{plan.identity}`) from {', '.join(current)} "
        f"to **{plan.target.name}**.",
        "",
    ]
    if plan.major:
        majors = sorted({c.pin.current.major for c in plan.changes if c.is_major})
        lines += [
            "> [!WARNING]",
            f"> **Major version bump** (v{', v'.join(map(str, majors))} -> "
            f"v{tag_version(plan.target.name).major}): expect breaking changes. "
            "Read the changelog and each unit's plan (replacements and deletions need "
            "a manual approval before apply).",
            "",
        ]
    lines += ["| Unit | Tier | Version |", "|---|---|---|"]
    for change in plan.changes:
        extra = " (downgrade)" if change.is_downgrade else ""
        if change.pin.sha_pinned:
            extra += f" (commit {change.pin.ref[:12]} -> {change.new_commit[:12]})"
        lines.append(
            f"| `{_cell(change.pin.unit)}` | {_cell(change.pin.tier)} | "
            f"{_cell(change.old)} -> {_cell(change.new_version)}{extra} |"
        )
    shared = sorted(
        {c.pin.file for c in plan.changes if not c.pin.file.startswith(c.pin.unit + "/")}
    )
    if shared:
        lines += [
            "",
            "The ref lives in a shared file: " + ", ".join(f"`{f}`" for f in shared) + ".",
        ]
    lines += lock_body(locks, platforms)
    lines += [
        "",
        f"### Changelog ({plan.oldest.text} -> {plan.target.name})",
        "",
        render_changelog(log),
        "",
        "---",
        "Opened by `invoke bump-module` / `invoke bump-all`: one line per unit changed "
        "(and its lock file when the providers changed); "
        "the plan workflow plans exactly these units. A new run updates this pull request "
        "(rebased onto the default branch); a pull request closed unmerged is not reopened "
        "for this version.",
    ]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- outdated


def _unit_json(pin: Pin, upgrade: Any, existing: set[str]) -> dict[str, Any]:
    def fmt(v: Version | None) -> str | None:
        return format_like(v, pin.current, existing=existing) if v is not None else None

    return {
        "path": pin.unit,
        "tier": pin.tier,
        "file": pin.file,
        "line": pin.line,
        "ref": pin.ref,
        "current": pin.current.text,
        "latest": fmt(upgrade.latest_in_major),
        "latest_major": fmt(upgrade.latest_major),
    }


def outdated_report(inv: Inventory, repos: Mapping[str, RepoTags]) -> dict[str, Any]:
    """The ``invoke outdated --json`` document (see docs/bumps.md).

    ``modules`` has one entry per release stream (repository, tag prefix, pinned
    major): ``current`` is its oldest pinned version, ``latest`` the newest
    release in that major, ``latest_major`` the newest of a higher major (None
    when there is none). ``skipped`` lists units whose source cannot be
    bumped, ``errors`` repositories whose tags could not be listed.
    """
    streams: dict[tuple[str, str, int], list[tuple[Pin, Any]]] = {}
    skipped = [s.to_json() for s in inv.skipped]
    errors: dict[str, dict[str, Any]] = {}
    for pin in inv.pins:
        repo = repos.get(pin.identity)
        if repo is None or not repo.ok:
            entry = errors.setdefault(
                pin.identity,
                {
                    "module": pin.module,
                    "identity": pin.identity,
                    "url": pin.url,
                    "error": repo.error if repo else "not queried",
                    "units": [],
                },
            )
            entry["units"].append(pin.unit)
            continue
        upgrade = pick_upgrades(pin.current.text, repo.tags)
        if isinstance(upgrade, Skip):
            skipped.append(
                Skipped(
                    pin.unit,
                    upgrade.reason,
                    pin.file,
                    pin.line,
                    pin.source.text,
                    pin.ref,
                    pin.module,
                ).to_json()
            )
            continue
        streams.setdefault((pin.identity, pin.prefix, pin.current.major), []).append((pin, upgrade))
    modules = []
    for (identity, prefix, _major), members in sorted(streams.items()):
        repo = repos[identity]
        existing = set(repo.tags)
        oldest_pin, oldest_up = min(members, key=lambda m: m[0].current.precedence())
        units = [_unit_json(p, u, existing) for p, u in sorted(members, key=lambda m: m[0].unit)]
        first = _unit_json(oldest_pin, oldest_up, existing)
        newest = max(
            (u.latest_in_major for _, u in members if u.latest_in_major is not None),
            key=lambda v: v.precedence(),
            default=None,
        )
        modules.append(
            {
                "module": oldest_pin.module,
                "identity": identity,
                "url": oldest_pin.url,
                "tag_prefix": prefix,
                "current": oldest_pin.current.text,
                "latest": format_like(newest, oldest_pin.current, existing=existing)
                if newest is not None
                else None,
                "latest_major": first["latest_major"],
                "outdated": any(u["latest"] or u["latest_major"] for u in units),
                "units": units,
            }
        )
    return {
        "modules": modules,
        "skipped": sorted(skipped, key=lambda s: s["unit"]),
        "errors": sorted(errors.values(), key=lambda e: e["identity"]),
    }
