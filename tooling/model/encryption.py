"""The environment contract of root.hcl's ``generate "encryption"`` block.

root.hcl turns OpenTofu's encryption of state and plan files on when one of
:data:`PASSPHRASE_ENV` or :data:`KMS_KEY_ENV` is set. The KMS key id is written
into the generated ``encryption.tf``; the passphrase never is: the file reads it
from the ephemeral variable :data:`PASSPHRASE_VARIABLE`, which
:func:`tofu_env` fills from :data:`PASSPHRASE_ENV` for every terragrunt/tofu
child (``TF_VAR_…``), so no file on disk holds it (docs/runbooks.md,
"Encrypting plans and state").
"""

from __future__ import annotations

import re
from collections.abc import Mapping

#: the passphrase of the pbkdf2 key provider (at least 16 characters; a secret)
PASSPHRASE_ENV = "IAC_ENCRYPTION_PASSPHRASE"
#: the AWS KMS key (id, ARN or alias) of the aws_kms key provider (not a secret)
KMS_KEY_ENV = "IAC_ENCRYPTION_KMS_KEY_ID"
#: ``true`` while an existing repository moves from plain to encrypted state
FROM_PLAIN_ENV = "IAC_ENCRYPTION_FROM_PLAIN"
#: the variable the generated encryption.tf reads the passphrase from
PASSPHRASE_VARIABLE = "iac_encryption_passphrase"
#: the file root.hcl generates in every unit's working copy
GENERATED_FILE = "encryption.tf"
#: OpenTofu's pbkdf2 key provider refuses shorter passphrases
MIN_PASSPHRASE = 16
#: a KMS key id, ARN or alias: written into the generated HCL, so nothing else
KMS_KEY_ID = r"[A-Za-z0-9][A-Za-z0-9:/_+=.,@-]*"


def tofu_env(environ: Mapping[str, str]) -> dict[str, str]:
    """What OpenTofu needs in its environment to use the key ``environ`` holds:
    the passphrase as the generated file's variable; nothing when none is set."""
    passphrase = environ.get(PASSPHRASE_ENV, "")
    return {f"TF_VAR_{PASSPHRASE_VARIABLE}": passphrase} if passphrase else {}


def problem(environ: Mapping[str, str]) -> str | None:
    """Why the encryption variables in ``environ`` cannot work (one line, never the
    passphrase itself); None when they can (or none is set)."""
    passphrase = environ.get(PASSPHRASE_ENV, "")
    if passphrase and len(passphrase) < MIN_PASSPHRASE:
        return (
            f"{PASSPHRASE_ENV} has {len(passphrase)} characters: OpenTofu's pbkdf2 key provider "
            f"needs at least {MIN_PASSPHRASE}; set a longer passphrase (or unset it: plain state)"
        )
    key_id = environ.get(KMS_KEY_ENV, "")
    if key_id and not re.fullmatch(KMS_KEY_ID, key_id):
        return (
            f"{KMS_KEY_ENV}={key_id!r} is not a KMS key id, ARN or alias (letters, digits and "
            ":/_+=.,@- only); set it to the key's id, e.g. from `aws kms list-keys`"
        )
    from_plain = environ.get(FROM_PLAIN_ENV, "")
    if from_plain not in ("", "true", "false"):
        return f"{FROM_PLAIN_ENV}={from_plain!r}: use 'true' (during the switch to encryption) or unset it"
    if from_plain == "true" and not (passphrase or key_id):
        return (
            f"{FROM_PLAIN_ENV}=true without a key: set {PASSPHRASE_ENV} or {KMS_KEY_ENV} "
            "(the switch writes encrypted state), or unset it"
        )
    return None


def describe(environ: Mapping[str, str]) -> str:
    """What encrypts state and plans, for the line every task prints first; "" when plain."""
    passphrase, key_id = environ.get(PASSPHRASE_ENV, ""), environ.get(KMS_KEY_ENV, "")
    if not (passphrase or key_id):
        return ""
    how = "AWS KMS" if key_id else "passphrase"
    if key_id and passphrase:
        how += ", passphrase as fallback"
    if environ.get(FROM_PLAIN_ENV) == "true":
        how += ", plain still read"
    return f"state and plans encrypted ({how})"
