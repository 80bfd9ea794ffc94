"""Where the audit records live: the state bucket (S3) or the local state folder.

Only this module reads or writes them; :mod:`tooling.core.apply.audit` says what a
record holds and how keys are named. With ``IAC_STATE_BUCKET`` the records are
objects ``audit/…`` in that bucket (next to the units' state, which the same
identity can already write); with local state they are files under
``.iac/state/audit/…``. A record is written once and never changed (each key carries a random
suffix, so two applies in the same second never meet; a local file is created exclusively).
A record is read back as bytes, at most :data:`tooling.io.artifacts.AUDIT_RECORD`'s
limit plus one (an object's size is checked before its body is read), and decoded by
:func:`tooling.io.artifacts.parse` only.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from tooling.errors import ToolingError
from tooling.io import config, s3
from tooling.io.artifacts import AUDIT_RECORD, MiB


class AuditLog:
    """The records under ``audit/`` in the state store of ``settings``."""

    def __init__(self, root: Path, settings: config.Settings, *, client: Any = None) -> None:
        self.bucket = settings.state_bucket
        self.local = root / ".iac" / "state"
        self._client = client if client is not None or not self.bucket else s3.client(settings)

    def describe(self, key: str = "audit/") -> str:
        return f"s3://{self.bucket}/{key}" if self.bucket else str(self.local / key)

    def put(self, key: str, data: bytes, *, done: str) -> str:
        """Write one record (its bytes); returns where it went. ``done``: what the apply
        has done when this write fails (said in the message)."""
        if len(data) > AUDIT_RECORD.limit:
            raise ToolingError(
                f"{self.describe(key)}: the audit record would be larger than "
                f"{AUDIT_RECORD.limit // MiB} MiB, more than `invoke audit` reads; {done}: "
                "apply fewer units per plan folder"
            )
        try:
            if self.bucket:
                self._client.put_object(
                    Bucket=self.bucket,
                    Key=key,
                    Body=data,
                    ContentType="application/json",
                )
            else:
                path = self.local / key
                path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
        except Exception as exc:  # boto3 and OS errors alike: one line, what to do
            raise ToolingError(
                f"{self.describe(key)}: the audit record could not be written ({_reason(exc)}); "
                f"{done}: give the apply identity s3:PutObject on audit/* in the state bucket"
            ) from None
        return self.describe(key)

    def keys(self) -> list[str]:
        """Every key under ``audit/``."""
        try:
            if self.bucket:
                out: list[str] = []
                pages = self._client.get_paginator("list_objects_v2").paginate(
                    Bucket=self.bucket, Prefix="audit/"
                )
                for page in pages:
                    out += [str(o["Key"]) for o in page.get("Contents", [])]
                return out
            base = self.local / "audit"
            if not base.is_dir():
                return []
            return [p.relative_to(self.local).as_posix() for p in base.rglob("*.json")]
        except Exception as exc:
            raise ToolingError(
                f"{self.describe()}: cannot list the audit records ({_reason(exc)}); "
                "check the credentials (s3:ListBucket on the state bucket) and IAC_STATE_BUCKET"
            ) from None

    def read(self, key: str) -> bytes:
        """The bytes of one record: at most the limit plus one byte are read, so a record
        over the limit is refused by :func:`tooling.io.artifacts.parse`, never loaded whole."""
        limit = AUDIT_RECORD.limit
        try:
            if self.bucket:
                size = self._client.head_object(Bucket=self.bucket, Key=key)["ContentLength"]
                if int(size) > limit:
                    raise ToolingError(self._too_large(key))
                body = self._client.get_object(Bucket=self.bucket, Key=key)["Body"]
                try:
                    data: bytes = body.read(limit + 1)
                finally:
                    body.close()
                return data
            path = self.local / key
            info = os.lstat(path)
            if not stat.S_ISREG(info.st_mode):
                raise ToolingError(
                    f"{self.describe(key)}: not a regular file, so not an audit record: "
                    f"{AUDIT_RECORD.fix}"
                )
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as fh:
                return fh.read(limit + 1)
        except ToolingError:
            raise
        except Exception as exc:
            raise ToolingError(
                f"{self.describe(key)}: cannot read this audit record ({_reason(exc)}); "
                "check the credentials (s3:GetObject on audit/* in the state bucket)"
            ) from None

    def _too_large(self, key: str) -> str:
        return (
            f"{self.describe(key)}: refused, larger than {AUDIT_RECORD.limit // MiB} MiB, the "
            f"most {AUDIT_RECORD.what} holds: {AUDIT_RECORD.fix}"
        )


def _reason(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
