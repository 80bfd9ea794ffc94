"""Module pins: every unit's source is remote, pinned to a release tag (or a commit
SHA with a ``# vX.Y.Z`` comment), and from an allowed repository. Pure.
"""

from __future__ import annotations

import fnmatch

from tooling.core.bump.upgrades import is_branch_name
from tooling.core.refs import find_source_lines
from tooling.core.rules.rule import Context, Rule, Stage
from tooling.core.rules.snapshot import Snapshot, Violation, unit_file
from tooling.errors import ToolingError
from tooling.model.sources import is_commit_sha, parse_source
from tooling.model.units import Unit
from tooling.model.versions import parse_version


def _source_site(unit: Unit, snap: Snapshot) -> tuple[str, int, str | None]:
    """(file, line, version in a trailing comment) of the ``source`` the unit uses."""
    included = (r for r in unit.reads if r.endswith(".hcl") and r != unit_file(unit))
    candidates = [unit_file(unit), *sorted(included, key=lambda p: -p.count("/"))]
    for path in candidates:
        if path not in snap.paths:
            continue
        try:
            lines = find_source_lines(snap.text(path))
        except ToolingError:
            continue
        if lines:
            return path, lines[0].line, lines[0].comment_version
    return unit_file(unit), unit.line_of.get("source", 1), None


def check_pins(ctx: Context) -> list[Violation]:
    """Module sources are remote, pinned to a tag (or a SHA with a ``# vX.Y.Z`` comment), and allowed."""
    model, policy, snap = ctx.model, ctx.policy, ctx.snap
    if model is None:
        return []
    out: list[Violation] = []
    for path in model.order:
        unit = model.units[path]
        if unit.source is None:
            out.append(
                Violation(
                    unit_file(unit),
                    1,
                    "pin-no-source",
                    f"{unit.path} pins no module (no terraform {{ source = ... }})",
                    'add terraform { source = "git::https://…/MODULE.git//PATH?ref=vX.Y.Z" }',
                )
            )
            continue
        file, line, comment_version = _source_site(unit, snap)
        source = parse_source(unit.source)
        if source.ambiguous:
            out.append(
                Violation(
                    file,
                    line,
                    "pin-ambiguous-source",
                    f"the module source of {unit.path} can fetch something else than it shows: {source.note}",
                    "write each query key once, without percent-escapes, and the path without '..' "
                    '(source = "git::https://…/MODULE.git//PATH?ref=vX.Y.Z")',
                )
            )
            continue
        if unit.source == "<unresolved>" or source.kind == "unknown":
            out.append(
                Violation(
                    file,
                    line,
                    "pin-missing-ref",
                    f"the module source of {unit.path} cannot be read statically ({source.note or unit.source})",
                    'write the source as a literal (or a local holding one): "git::https://…?ref=vX.Y.Z"',
                )
            )
            continue
        if source.kind == "local":
            out.append(
                Violation(
                    file,
                    line,
                    "pin-local-source",
                    f"{unit.path} uses a local module path {unit.source!r}: its version is whatever the checkout holds",
                    "publish the module in its own repository, tag it, and pin the tag (…//PATH?ref=vX.Y.Z)",
                )
            )
            continue
        ref = source.ref
        if ref is None:
            out.append(
                Violation(
                    file,
                    line,
                    "pin-missing-ref",
                    f"{unit.path} does not pin its module: {unit.source!r} has no ?ref= (it follows the default branch)",
                    "append ?ref=vX.Y.Z (a release tag) to the source",
                )
            )
        elif is_commit_sha(ref):
            if comment_version is None:
                out.append(
                    Violation(
                        file,
                        line,
                        "pin-sha-comment",
                        f"{unit.path} pins commit {ref[:12]}… without saying which version it is",
                        f'add the version as a comment on the same line: source = "…?ref={ref}" # vX.Y.Z',
                    )
                )
        elif parse_version(ref) is None:
            what = "a branch" if is_branch_name(ref) else "not a version tag"
            out.append(
                Violation(
                    file,
                    line,
                    "pin-branch",
                    f"{unit.path} pins ?ref={ref}, {what}: it moves, so the same commit can plan differently tomorrow",
                    "pin a release tag (?ref=vX.Y.Z) or a full commit SHA with a # vX.Y.Z comment",
                )
            )
        identity = source.identity
        if (
            identity is not None
            and policy.allowed_module_sources
            and not any(fnmatch.fnmatchcase(identity, p) for p in policy.allowed_module_sources)
        ):
            out.append(
                Violation(
                    file,
                    line,
                    "module-allowlist",
                    f"{unit.path} uses module repository {identity}, which is not in allowed_module_sources "
                    f"({', '.join(policy.allowed_module_sources)})",
                    "use a module from an allowed repository, or add the repository to [check] allowed_module_sources in policy.toml (reviewed)",
                )
            )
    return out


PINS = Rule(
    name="pins",
    ids=(
        "pin-no-source",
        "pin-local-source",
        "pin-missing-ref",
        "pin-branch",
        "pin-sha-comment",
        "pin-ambiguous-source",
        "module-allowlist",
    ),
    summary="every unit pins a module by tag, from an allowed repository, as written",
    stages=Stage.CHECK,
    check=check_pins,
    also=(
        "`plan` marks a unit whose source reads otherwise than it is written "
        "(`model_error`), and `apply` refuses it"
    ),
)
