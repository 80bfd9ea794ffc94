"""Where the audit records live: the state bucket (S3) or the local state folder.

Only this module reads or writes them; :mod:`tooling.core.audit` says what a
record holds and how keys are named. With ``IAC_STATE_BUCKET`` the records are
objects ``audit/…`` in that bucket (next to the units' state, which the same
identity can already write); with local state they are files under
``.iac/state/audit/…``. A record is written once and never changed (each key carries a random
suffix, so two applies in the same second never meet).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tooling.errors import ToolingError
from tooling.io import config, s3


class AuditLog:
    """The records under ``audit/`` in the state store of ``settings``."""

    def __init__(self, root: Path, settings: config.Settings, *, client: Any = None) -> None:
        self.bucket = settings.state_bucket
        self.local = root / ".iac" / "state"
        self._client = client if client is not None or not self.bucket else s3.client(settings)

    def describe(self, key: str = "audit/") -> str:
        return f"s3://{self.bucket}/{key}" if self.bucket else str(self.local / key)

    def put(self, key: str, doc: dict[str, Any]) -> str:
        """Write one record; returns where it went."""
        data = (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode("utf-8")
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
                "the apply itself is done (apply.json says what it did): give the apply identity "
                "s3:PutObject on audit/* in the state bucket"
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

    def get(self, key: str) -> dict[str, Any]:
        try:
            if self.bucket:
                body = self._client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
            else:
                body = (self.local / key).read_bytes()
            doc = json.loads(body)
        except Exception as exc:
            raise ToolingError(
                f"{self.describe(key)}: cannot read this audit record ({_reason(exc)})"
            ) from None
        if not isinstance(doc, dict):
            raise ToolingError(f"{self.describe(key)}: not an audit record (not a JSON object)")
        return doc


def _reason(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
