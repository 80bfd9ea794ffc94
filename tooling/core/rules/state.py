"""The state rules: every unit's key is computed, under the foundation prefix and its own;
app workspaces keep theirs under ``apps/<name>/``, out of the foundation's keys and buckets. Pure.
"""

from __future__ import annotations

import posixpath

from tooling.core.rules.rule import Context, Rule, Stage
from tooling.core.rules.snapshot import (
    AppWorkspace,
    Snapshot,
    Violation,
    line_of_text,
    syntax_violation,
    unit_file,
)
from tooling.model import hcl
from tooling.model.units import Unit


def _unit_state_site(unit: Unit, snap: Snapshot) -> int:
    """The line where the unit itself sets its state (remote_state or a state_key local), else 1."""
    path = unit_file(unit)
    if path not in snap.paths:
        return 1
    text = snap.text(path)
    for needle in ("remote_state", "state_key"):
        if needle in text:
            return line_of_text(text, needle)
    return 1


def check_state_keys(ctx: Context) -> list[Violation]:
    """Every unit's state key is computed, under the foundation prefix, and unique per bucket."""
    model, policy, snap = ctx.model, ctx.policy, ctx.snap
    if model is None:
        return []
    out: list[Violation] = []
    by_key: dict[tuple[str | None, str], list[Unit]] = {}
    for path in model.order:
        unit = model.units[path]
        where = unit_file(unit)
        if unit.state_key is None:
            out.append(
                Violation(
                    where,
                    1,
                    "state-key-missing",
                    f"the state key of {unit.path} cannot be computed from its configuration "
                    "(no remote_state block naming its state object, no state_key local)",
                    "name the state object in the root file's remote_state config, derived from the unit's "
                    'path: key = "${path_relative_to_include()}/terraform.tfstate" (s3, azurerm...), '
                    'prefix = "${path_relative_to_include()}" (gcs), '
                    'path = "${get_repo_root()}/state/${path_relative_to_include()}/terraform.tfstate" (local); '
                    "or include a root file that does",
                )
            )
            continue
        line = _unit_state_site(unit, snap)
        prefixes = policy.state_prefix_of(unit.path)
        # a local backend's path holds the key below its state folder: a prefix is a run
        # of its segments (state/live/... for live/); every other backend's key starts with it
        inside = (
            any(f"/{p}" in f"/{unit.state_key}" for p in prefixes)
            if unit.state_backend == "local"
            else unit.state_key.startswith(prefixes)
        )
        if prefixes and not inside:
            prefix = " or ".join(repr(p) for p in prefixes)
            under = " or ".join(prefixes)
            out.append(
                Violation(
                    where,
                    line,
                    "state-key-prefix",
                    f"state key {unit.state_key!r} of {unit.path} is outside the foundation prefix {prefix}",
                    f"keep foundation state under {under} (remove the unit's own key and let root.hcl "
                    "derive it from the unit's path; a live root keeping its own prefix declares it: "
                    '[layout.roots."FOLDER"] state_prefix in policy.toml)',
                )
            )
        by_key.setdefault((unit.state_bucket, unit.state_key), []).append(unit)
    for (bucket, key), units in by_key.items():
        for unit in units:
            # a unit without a bucket of its own uses the one IAC_STATE_BUCKET names at run
            # time: it may be any bucket, so it collides with every other holder of the key
            others = [
                u.path
                for (b2, k2), us in by_key.items()
                if k2 == key
                for u in us
                if u is not unit and (b2 is None or bucket is None or b2 == bucket)
            ]
            if not others:
                continue
            where_bucket = f"s3://{bucket}/" if bucket else ""
            out.append(
                Violation(
                    unit_file(unit),
                    _unit_state_site(unit, snap),
                    "state-key-duplicate",
                    f"{unit.path} resolves to state {where_bucket}{key}, which {', '.join(sorted(others))} also uses: "
                    "two units would overwrite each other's state",
                    "give every unit its own key (drop the copied remote_state/key and let root.hcl key the state by the unit's path)",
                )
            )
    return out


_BACKEND_NAMES = ("backend.hcl",)
#: backend attributes that name a state object or a prefix of them
_KEY_ATTRIBUTES = ("key", "prefix", "workspace_key_prefix")


def app_backend_settings(app: AppWorkspace) -> list[tuple[str, int, str | None, str | None]]:
    """``(file, line, key, bucket)`` for each backend configuration of an app workspace.

    ``key``/``bucket`` are None when not a literal string. Raises
    :class:`tooling.model.hcl.HclSyntaxError` for a file that does not parse.
    """
    found: list[tuple[str, int, str | None, str | None]] = []

    def literal(body: hcl.Body, name: str) -> tuple[str | None, int]:
        entry = body["a"].get(name)
        if entry is None:
            return None, 0
        expr, line = entry
        return (expr[1] if expr[0] == "lit" and isinstance(expr[1], str) else None), line

    def settings(path: str, body: hcl.Body, block_line: int) -> None:
        bucket, _ = literal(body, "bucket")
        named = [name for name in _KEY_ATTRIBUTES if name in body["a"]]
        for name in named:
            key, line = literal(body, name)
            if key is not None and name != "key":
                key = key.rstrip("/") + "/"  # a prefix: compare it as a folder
            found.append((path, line or block_line, key, bucket))
        if not named and block_line:
            found.append((path, block_line, None, bucket))

    for path, text in sorted(app.files.items()):
        body = hcl.parse(text.encode(), path)
        name = posixpath.basename(path)
        if name in _BACKEND_NAMES or name.endswith(".tfbackend"):
            settings(path, body, 1 if body["a"] else 0)
            continue
        for btype, _labels, inner, _line in body["b"]:
            if btype != "terraform":
                continue
            for b2, labels, backend, bline in inner["b"]:
                # a local backend keeps state beside the code, not in a shared bucket
                if b2 == "backend" and labels[:1] != ["local"]:
                    settings(path, backend, bline)
    return found


def check_app_workspaces(ctx: Context) -> list[Violation]:
    """App keys stay under ``apps/<name>/``, never name a foundation key, prefix or bucket, and are unique."""
    model, policy, apps = ctx.model, ctx.policy, ctx.apps
    out: list[Violation] = []
    foundation: dict[str, list[Unit]] = {}
    if model is not None:
        for unit in model.units.values():
            if unit.state_key:
                foundation.setdefault(unit.state_key, []).append(unit)
    claims: list[tuple[str | None, str, str, str, int]] = []  # bucket, key, app, file, line
    for app in apps:
        try:
            settings = app_backend_settings(app)
        except hcl.HclSyntaxError as exc:
            out.append(syntax_violation(exc))
            continue
        expected = f"{policy.app_state_prefix}{app.name}/"
        if not settings:
            out.append(
                Violation(
                    app.folder,
                    1,
                    "app-backend-missing",
                    f"app workspace {app.name!r} declares no backend key",
                    f'add {app.folder}/backend.hcl with key = "{expected}terraform.tfstate" (and its bucket)',
                )
            )
            continue
        for file, line, key, bucket in settings:
            if key is None:
                out.append(
                    Violation(
                        file,
                        line,
                        "app-backend-missing",
                        f"the backend key of app {app.name!r} is not a literal string, so it cannot be checked",
                        f'write the key literally: key = "{expected}terraform.tfstate"',
                    )
                )
                continue
            if bucket is not None and bucket in policy.foundation_state_buckets:
                out.append(
                    Violation(
                        file,
                        line,
                        "tier-overlap",
                        f"app {app.name!r} keeps its state in the foundation's bucket {bucket!r}",
                        "use the app-tier bucket (IAC_APP_STATE_BUCKET); the two tiers never share a bucket",
                    )
                )
            if (
                any(key.startswith(prefix) for prefix in policy.foundation_prefix)
                or any(key.startswith(prefix) for _, prefix in policy.root_prefixes)
                or key in foundation
            ):
                owners = ", ".join(u.path for u in foundation.get(key, []))
                what = (
                    f"the foundation key of {owners}"
                    if owners
                    else f"a key under the foundation prefix {' or '.join(policy.foundation_prefix)}"
                )
                out.append(
                    Violation(
                        file,
                        line,
                        "tier-overlap",
                        f"app {app.name!r} points its backend at {key!r}, {what}: applying it would overwrite foundation state",
                        f"use a key under {expected} (e.g. {expected}terraform.tfstate)",
                    )
                )
            elif not key.startswith(expected):
                out.append(
                    Violation(
                        file,
                        line,
                        "app-state-prefix",
                        f"app {app.name!r} keeps its state at {key!r}, outside its prefix {expected!r}",
                        f"use a key under {expected} (e.g. {expected}terraform.tfstate)",
                    )
                )
            for unit in foundation.get(key, []):
                if (
                    bucket is None
                    or not policy.foundation_state_buckets
                    or bucket in policy.foundation_state_buckets
                ):
                    out.append(
                        Violation(
                            file,
                            line,
                            "state-key-duplicate",
                            f"app {app.name!r} and unit {unit.path} resolve to the same state key {key!r}",
                            f"use a key under {expected}",
                        )
                    )
                    out.append(
                        Violation(
                            unit_file(unit),
                            1,
                            "state-key-duplicate",
                            f"unit {unit.path} and app {app.name!r} ({file}) resolve to the same state key {key!r}",
                            f"change the app's backend key to one under {expected}",
                        )
                    )
            claims.append((bucket, key, app.name, file, line))
    for bucket, key, name, file, line in claims:
        clash = sorted(
            {
                other
                for b2, k2, other, _f, _l in claims
                if k2 == key and other != name and (b2 is None or bucket is None or b2 == bucket)
            }
        )
        if clash:
            out.append(
                Violation(
                    file,
                    line,
                    "state-key-duplicate",
                    f"apps {name!r} and {', '.join(map(repr, clash))} resolve to the same state key {key!r}",
                    f"use a key under {policy.app_state_prefix}{name}/",
                )
            )
    return out


STATE_KEYS = Rule(
    name="state-keys",
    ids=("state-key-missing", "state-key-prefix", "state-key-duplicate"),
    summary="every unit's state key is computed, under its prefix, one per unit",
    stages=Stage.CHECK,
    check=check_state_keys,
)
APP_WORKSPACES = Rule(
    name="app-workspaces",
    ids=(
        "tier-overlap",
        "app-state-prefix",
        "app-backend-missing",
        "state-key-duplicate",
        "hcl-syntax",
        "config-invalid",
    ),
    summary="app workspaces keep their state under their own prefix, off the foundation's",
    stages=Stage.CHECK,
    check=check_app_workspaces,
)
