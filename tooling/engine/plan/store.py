"""Stored plans: where each unit's saved plan is kept, what binds it to the review, how
it is read back, refused or discarded.

Every module that writes, finds, digests, reads or removes a plan file asks here
(``tests/test_planstore.py`` scans the package for any other): a plan folder keeps a
unit's plan at ``units/<unit path>/plan.tfplan``, bound to the review by its SHA-256
(``plan_sha256`` in summary.json); an encrypted plan is read only with its key, and an
apply whose plans need a key that is not set stops before it starts
(:func:`require_key`). Only :mod:`tooling.io.terragrunt`, the thin wrapper, names the
file Terragrunt itself writes under ``--out-dir``, and it is renamed here
(:func:`keep_written`).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from tooling.core.apply import encryption
from tooling.core.plan.planjson import PlanSummary, from_stream, summarize
from tooling.core.plan.sensitive import values_in_plan
from tooling.core.plan.status import Status
from tooling.core.text import redact
from tooling.engine import secrets
from tooling.engine.plan import planfolder
from tooling.errors import ToolingError
from tooling.io import terragrunt
from tooling.model.policy import Declared

#: a unit's saved plan in a plan folder, beside its plan.txt and plan.log
PLAN_NAME = "plan.tfplan"
#: the ``-out`` plan file name Terragrunt uses under ``--out-dir`` (tf.TerraformPlanFile)
WRITTEN_NAME = "tfplan.tfplan"
_SUFFIX = ".tfplan"
#: OpenTofu's machine-readable UI of a unit's plan (``-json-into``) beside its saved
#: plan: read and removed once the plan is read (its diagnostics are not redacted)
STREAM_NAME = "plan.stream.jsonl"


def unit_dir(out_dir: Path, path: str) -> Path:
    """The folder of unit ``path`` in the plan folder ``out_dir``."""
    return out_dir / "units" / path


def plan_path(out_dir: Path, path: str) -> Path:
    """Where unit ``path``'s plan is saved in the plan folder ``out_dir``."""
    return unit_dir(out_dir, path) / PLAN_NAME


def private_plan(folder: Path, name: str) -> Path:
    """A plan kept outside any plan folder (``invoke adopt``'s, in its private folder)."""
    return folder / f"{name}{_SUFFIX}"


def stored(plans_dir: Path, plan_file: str | None) -> Path:
    """The plan file a summary.json unit names (``plan_file``, relative to its folder)."""
    return plans_dir / str(plan_file)


def text(plans_dir: Path, text_file: str | None) -> str | None:
    """A plan's text as its run wrote it (redacted), or None when there is none."""
    if not text_file:
        return None
    try:
        return stored(plans_dir, text_file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def keep_written(udir: Path) -> Path:
    """The plan Terragrunt wrote for a unit of ``run --all plan`` under ``--out-dir``
    (``udir``), renamed to the unit's saved plan. Raises :class:`ToolingError` when
    there is none."""
    written = udir / WRITTEN_NAME
    if not written.is_file():
        raise ToolingError("terragrunt reported success but wrote no plan file")
    kept = udir / PLAN_NAME
    os.replace(written, kept)
    return kept


def stream_beside(plan: Path) -> Path:
    """Where a unit planned alone has OpenTofu write the plan's machine-readable UI."""
    return plan.with_name(STREAM_NAME)


def batch_stream(env: Mapping[str, str], token: str) -> str | None:
    """The path, relative to each unit's working copy, where every unit of one
    ``run --all plan`` writes its machine-readable UI: in its data folder; None when
    ``TF_DATA_DIR`` moves that folder (one path for every unit: each is shown instead)."""
    return None if "TF_DATA_DIR" in env else f"{terragrunt.STREAM_DIR}/iac-plan-{token}.jsonl"


def summary_of(
    stream: str | None, show_json: Callable[[], dict[str, Any]], declared: Declared
) -> PlanSummary:
    """A saved plan's summary: from its machine-readable UI (``stream``) when that shows
    no change at all (:func:`tooling.core.plan.planjson.from_stream`), else from ``show -json``
    (``show_json``), whose values are registered for redaction first."""
    quiet = from_stream(stream or "")
    if quiet is not None:
        return quiet
    shown = show_json()
    secrets.register(redact.sensitive_in_plan(shown))
    secrets.register(values_in_plan(shown, declared))  # policy.toml's own list
    return summarize(shown)


def sha256_file(path: Path) -> str:
    """The plan file's SHA-256 (what binds it to the reviewed plan)."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def digest(path: Path) -> str | None:
    """The plan file's SHA-256, or None when it is missing (the apply then refuses it)."""
    return sha256_file(path) if path.is_file() else None


def discard(path: Path) -> None:
    """Remove a saved plan that must not be applied (a drift plan, a refused app plan)."""
    path.unlink(missing_ok=True)


def show(run_dir: Path, plan_file: Path, env: Mapping[str, str]) -> dict[str, Any]:
    """A stored plan as ``show -json``, read in the working copy of the unit in ``run_dir``
    (kept in memory only: it holds values in clear)."""
    return terragrunt.saved_plan_json(run_dir, plan_file, env)


#: OpenTofu's error when a file of the working copy went away while ``show`` read the
#: configuration: in a ``run --all``, Terragrunt rewrites an upstream's working copy
#: (its generated files) to read its outputs for a dependent, and that can overlap the
#: upstream's own ``show``. Asked again, OpenTofu reads the rewritten copy.
REWRITTEN_WHILE_READ = "Failed to read file"
#: ``show`` runs at most this many times when the working copy was rewritten under it
SHOW_ATTEMPTS = 3


def show_in(
    work: Path, plan_file: Path, env: Mapping[str, str], *, chdir: Path | None = None
) -> dict[str, Any]:
    """A plan as ``tofu show -json``, run in the working directory ``work`` (``chdir``:
    OpenTofu's ``-chdir``), kept in memory only. A read of a working copy Terragrunt was
    rewriting meanwhile (:data:`REWRITTEN_WHILE_READ`) is tried again, up to
    :data:`SHOW_ATTEMPTS` times in all; any other failure is raised at once."""
    args = terragrunt.tofu_show_args(plan_file, chdir=chdir)
    for attempt in range(1, SHOW_ATTEMPTS + 1):
        try:
            return terragrunt.plan_json(args, work, env)
        except ToolingError as exc:
            if REWRITTEN_WHILE_READ not in str(exc) or attempt == SHOW_ATTEMPTS:
                raise
            time.sleep(0.3 * attempt)
    raise AssertionError("unreachable")  # pragma: no cover


def _plan_files(plans_dir: Path) -> Iterator[tuple[str, bytes]]:
    """(name, bytes) of each plan file summary.json lists; a summary or a file that cannot
    be read yields nothing here (the apply refuses it by name later)."""
    try:
        summary = planfolder.read_summary(plans_dir / planfolder.SUMMARY)
    except ToolingError:
        return
    for unit in summary.units:
        if unit.plan_file is None or unit.status != Status.CHANGES:
            continue
        path = stored(plans_dir, unit.plan_file)
        try:
            yield str(path), path.read_bytes()
        except OSError:
            continue


def require_key(plans_dir: Path, shown: str) -> None:
    """Refuse (one line) when a plan to apply in ``plans_dir`` is encrypted and its key
    is not in the environment; ``shown``: the folder as the user named it.

    OpenTofu cannot read an encrypted plan without the key it was made with; without
    it every unit would fail one by one. This stops the apply first, naming the
    variable to set, before anything is written or applied (the rule:
    :func:`tooling.core.apply.encryption.missing_key`)."""
    missing = encryption.missing_key(_plan_files(plans_dir), os.environ)
    if missing:
        raise ToolingError(encryption.refusal(missing[0], missing[1], shown))
