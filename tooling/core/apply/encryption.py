"""Encrypted plan files: recognise them, and refuse an apply that lacks their key. Pure.

OpenTofu writes a plain plan file as a zip archive; an encrypted one (state
too) is a JSON envelope whose ``meta`` names the key provider that made the
key, e.g. ``{"meta": {"key_provider.pbkdf2.passphrase": "…"}, "encrypted_data":
"…", "encryption_version": "v0"}``. Which provider it names says which
environment variable must hold the key (:mod:`tooling.model.encryption`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from tooling.model.encryption import KMS_KEY_ENV, PASSPHRASE_ENV

#: the first bytes of a zip archive: a plain plan file
ZIP_MAGIC = b"PK\x03\x04"
#: key provider type (as OpenTofu names it in ``meta``) -> the variable its key comes from
PROVIDER_ENV = {"pbkdf2": PASSPHRASE_ENV, "aws_kms": KMS_KEY_ENV}


def key_providers(data: bytes) -> frozenset[str] | None:
    """The key provider types (``pbkdf2``, ``aws_kms``) an encrypted plan or state file
    names; None when ``data`` is not encrypted (a zip plan, plain state JSON)."""
    if data.startswith(ZIP_MAGIC):
        return None
    try:
        doc = json.loads(data)
    except ValueError:
        return None
    if not isinstance(doc, dict) or "encrypted_data" not in doc:
        return None
    meta = doc.get("meta")
    names = meta if isinstance(meta, dict) else {}
    return frozenset(
        str(key).split(".")[1] for key in names if str(key).startswith("key_provider.")
    )


def is_encrypted(data: bytes) -> bool:
    """Whether ``data`` (a plan file, a state object) is OpenTofu-encrypted."""
    return key_providers(data) is not None


def missing_key(
    plans: Iterable[tuple[str, bytes]], environ: Mapping[str, str]
) -> tuple[str, str] | None:
    """(the plan file, the variable to set) for the first encrypted plan whose key is
    not in ``environ``; None when every plan can be read. ``plans``: (name, bytes)."""
    for name, data in plans:
        providers = key_providers(data)
        if providers is None:
            continue
        wanted = [PROVIDER_ENV[p] for p in sorted(providers) if p in PROVIDER_ENV]
        if not wanted:
            wanted = [PASSPHRASE_ENV]
        if not any(environ.get(var) for var in wanted):
            return name, wanted[0]
    return None


def refusal(plan_file: str, variable: str, plans_dir: str) -> str:
    """The one line an apply without the key stops with."""
    return (
        f"{plan_file}: this plan is encrypted and {variable} is not set: set it to the key "
        f'the plans were made with (docs/runbooks.md, "Encrypting plans and state"), then '
        f"run `invoke apply --plans {plans_dir}` again; nothing was applied"
    )


def unreadable_plan(error: str) -> str:
    """Why an apply could not read a saved plan (``error``: OpenTofu's message): one line
    when the key in the environment is not the one the plan was made with."""
    if "decryption failed" in error:
        return (
            "cannot read the saved plan: it does not decrypt with the key in the environment "
            f"({PASSPHRASE_ENV} or {KMS_KEY_ENV}); set the key the plans were made with; "
            "nothing was applied"
        )
    return f"cannot read the saved plan to decide its gate: {error}"
