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


def tofu_env(environ: Mapping[str, str]) -> dict[str, str]:
    """What OpenTofu needs in its environment to use the key ``environ`` holds:
    the passphrase as the generated file's variable; nothing when none is set."""
    passphrase = environ.get(PASSPHRASE_ENV, "")
    return {f"TF_VAR_{PASSPHRASE_VARIABLE}": passphrase} if passphrase else {}
