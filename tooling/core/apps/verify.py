"""The rule where an application's OpenTofu runs (the app tier: plain ``tofu``). Pure.

The foundation's verifier judges what Terragrunt resolves; an app runs plain
``tofu``, so the rule is checked on what ``tofu`` itself will use:

- **the environment** ``tofu`` inherits, by allowlist: a variable that configures
  OpenTofu, Terragrunt or the loader (``TF_*``, ``TOFU_*``, ``TG_*``, ``LD_*``) is the
  pipeline's own or a ``TF_VAR_`` of the app's own variables, as the guard allows a
  foundation unit's. ``TF_CLI_ARGS`` / ``TF_CLI_ARGS_<command>`` add arguments to
  every run (``-state=``, ``-backend-config=``, ``-chdir=``...), ``TF_WORKSPACE``
  moves the state to another workspace's key, ``TF_CLI_CONFIG_FILE`` installs other
  providers, ``LD_PRELOAD`` runs a library in every process: all refused;
- **the backend after init**: OpenTofu records the backend it initialised, after
  the generated override file, every ``*_override.tf`` of the folder, the
  ``-backend-config`` arguments and the environment, in its data folder
  (``terraform.tfstate`` there). That record must be the app's own: the backend
  type the pipeline set, the key (or local path), bucket and region it passed, and
  no other setting (another endpoint, role, workspace prefix or folder);
- **module sources**, read as go-getter reads them
  (:func:`tooling.model.sources.parse_source`): a remote module is a git
  repository pinned by a version tag (or a full commit SHA), unambiguous, from a
  repository ``[check] allowed_module_sources`` allows. Local modules
  (``./``, ``../``) are part of the app's folder and checked with it.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from typing import Any

from tooling.core.apps.tier import AppState, Found
from tooling.model.sources import is_commit_sha, parse_source
from tooling.model.versions import parse_version

#: the variables that configure OpenTofu, Terragrunt, its providers' plugin loading, or
#: the dynamic loader of every process tofu starts: by allowlist (:func:`env_problems`)
TOOL_ENV_PREFIXES = ("TF_", "TOFU_", "TG_", "TERRAGRUNT_", "LD_")
#: the S3 settings the pipeline passes with -backend-config (apps.backend_config_args)
_S3_SETTINGS = frozenset(
    {
        "bucket",
        "key",
        "region",
        "encrypt",
        "use_lockfile",
        "endpoints",
        "use_path_style",
        "skip_credentials_validation",
        "skip_requesting_account_id",
        "skip_metadata_api_check",
        "skip_region_validation",
    }
)


def env_problems(
    env: Mapping[str, str], own: Mapping[str, str], variables: frozenset[str] = frozenset()
) -> list[str]:
    """Variables of ``env`` (what tofu runs with) that configure OpenTofu or the loader
    (:data:`TOOL_ENV_PREFIXES`), by allowlist: the pipeline's own (``own``, with that
    value) and ``TF_VAR_`` of the app's own ``variables`` (never the pipeline's
    ``iac_*``), as the guard allows a foundation unit's (docs/rules.md, "The point of
    execution"). Values are never shown."""
    out: list[str] = []
    for key in sorted(env):
        if not key.upper().startswith(TOOL_ENV_PREFIXES) or own.get(key) == env[key]:
            continue
        name = key[len("TF_VAR_") :] if key.startswith("TF_VAR_") else None
        if name is not None and name in variables and not name.lower().startswith("iac_"):
            continue
        if key.upper().startswith(("TF_CLI_ARGS", "TF_WORKSPACE")):
            why = "it changes the arguments, backend, state or workspace of `tofu init/plan/apply`"
        elif name is not None:
            why = "it is not a variable of the app's root module (the pipeline's own never are)"
        else:
            why = "it changes how OpenTofu, its providers or the loader run"
        out.append(
            f"{key}=… is set in the environment tofu would run with: {why}, where no review "
            f"sees it; unset {key} (the pipeline sets the app's backend, key and OpenTofu's "
            "environment)"
        )
    return out


def _given(value: Any) -> Any:
    """``value`` without the attributes OpenTofu records as null (not set)."""
    if isinstance(value, Mapping):
        return {k: _given(v) for k, v in value.items() if v is not None}
    return value


def _same(value: Any, wanted: Any) -> bool:
    if isinstance(value, bool) or isinstance(wanted, bool):
        return str(value).lower() == str(wanted).lower()
    return bool(value == wanted)


def backend_problems(record: Mapping[str, Any] | None, state: AppState, where: str) -> list[str]:
    """What is wrong with the backend OpenTofu initialised (``record``: the JSON of
    ``TF_DATA_DIR/terraform.tfstate``; ``where`` names that file) for the app's ``state``."""
    backend = record.get("backend") if isinstance(record, Mapping) else None
    if not isinstance(backend, Mapping):
        return [
            f"{where}: OpenTofu recorded no backend after init, so the state it will use "
            "is not known; remove the folder's backend overrides and plan again"
        ]
    kind = backend.get("type")
    raw = backend.get("config")
    config: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    fix = (
        "remove the setting (an override file, a backend block or a TF_CLI_ARGS variable); "
        f"the pipeline sets the app's {state.describe()}"
    )
    if kind != state.backend:
        return [
            f"{where}: OpenTofu initialised backend {kind!r}, not the app's {state.backend!r}: "
            f"a file of the folder replaced the pipeline's backend; {fix}"
        ]
    wanted: dict[str, Any]
    if state.backend == "local":
        wanted = {"path": state.path}
    else:
        wanted = {"bucket": state.bucket, "key": state.key, "region": state.region}
        if state.endpoint:
            wanted["endpoints"] = {"s3": state.endpoint}
    out: list[str] = []
    for name, value in sorted(_given(config).items()):
        if value in ({}, [], ""):
            continue
        if name in wanted:
            if not _same(value, wanted[name]):
                out.append(
                    f"{where}: the backend's {name} is {value!r}, not the app's "
                    f"{wanted[name]!r}: OpenTofu would use another state; {fix}"
                )
        elif state.backend == "local" or name not in _S3_SETTINGS:
            out.append(
                f"{where}: the backend sets {name} = {value!r}, which the pipeline does not: "
                f"it changes where or as whom OpenTofu reads and writes the state; {fix}"
            )
    for name, value in wanted.items():
        if config.get(name) is None and value is not None:
            out.append(f"{where}: the backend has no {name}; {fix}")
    return out


def module_problems(found: Sequence[Found], allowed: Sequence[str]) -> list[str]:
    """Remote module sources (``Found`` of kind ``module``; the label is the source, or
    empty when it is not a literal) that are not pinned by tag from an allowed repository."""
    out: list[str] = []
    pin = 'pin a release tag from an allowed repository: source = "git::https://…/MODULE.git//PATH?ref=vX.Y.Z"'
    for item in found:
        if item.kind != "module":
            continue
        if not item.label:
            out.append(f"{item.where}: the module source is not a literal string; {pin}")
            continue
        source = parse_source(item.label)
        if source.ambiguous:
            out.append(
                f"{item.where}: module source {item.label!r} can fetch something else than it "
                f"shows ({source.note}); write each query key once, without percent-escapes, "
                "and the path without '..'"
            )
            continue
        if source.kind != "git" or source.identity is None:
            out.append(
                f"{item.where}: module source {item.label!r} is not a git repository "
                f"pinned by tag ({source.note or source.kind}); {pin}"
            )
            continue
        ref = source.ref
        if ref is None or not (is_commit_sha(ref) or parse_version(ref) is not None):
            what = "no ?ref=" if ref is None else f"?ref={ref}, not a version tag"
            out.append(
                f"{item.where}: module source {item.label!r} has {what}: it moves, so the "
                f"same commit can plan differently tomorrow; {pin}"
            )
        if allowed and not any(fnmatch.fnmatchcase(source.identity, p) for p in allowed):
            out.append(
                f"{item.where}: module repository {source.identity} is not in [check] "
                f"allowed_module_sources ({', '.join(allowed)}); use an allowed repository, "
                "or add it to policy.toml (reviewed)"
            )
    return out
