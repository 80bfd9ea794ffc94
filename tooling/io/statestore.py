"""State objects in a local folder or an S3 bucket (where a unit's backend puts them is
:func:`tooling.io.backends.located`), and the probe of the tooling's state bucket."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tooling.errors import ToolingError
from tooling.io import config


class StateStore(Protocol):
    """Where units keep state; keys are the model's ``state_key`` values."""

    where: str

    def exists(self, key: str) -> bool: ...

    def locked(self, key: str) -> bool: ...

    def read(self, key: str) -> bytes: ...

    def copy(self, src: str, dst: str) -> None: ...

    def write(self, key: str, data: bytes) -> None: ...

    def delete(self, key: str) -> None: ...

    def describe(self, key: str) -> str: ...


class LocalStore:
    """The local backend: ``<state dir>/<key>`` (root.hcl's ``IAC_STATE_DIR``, set by the tooling
    to ``.iac/state`` of the repository)."""

    def __init__(self, state_dir: Path, root: Path | None = None) -> None:
        self.dir = state_dir
        self.root = root
        self.where = str(state_dir)

    def _path(self, key: str) -> Path:
        return self.dir / key

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def locked(self, key: str) -> bool:
        path = self._path(key)
        return (path.parent / f".{path.name}.lock.info").exists()

    def read(self, key: str) -> bytes:
        return self._path(key).read_bytes()

    def copy(self, src: str, dst: str) -> None:
        target = self._path(dst)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        shutil.copy2(self._path(src), tmp)
        os.replace(tmp, target)

    def write(self, key: str, data: bytes) -> None:
        target = self._path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, target)

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def describe(self, key: str) -> str:
        path = self._path(key)
        if self.root is not None and path.is_relative_to(self.root):
            return path.relative_to(self.root).as_posix()
        return str(path)


class S3Store:
    """An S3 (or S3-compatible) bucket; the lock of a key is ``<key>.tflock`` (``use_lockfile``)."""

    def __init__(self, bucket: str, client: Any) -> None:
        self.bucket = bucket
        self.client = client
        self.where = f"s3://{bucket}"

    def _head(self, key: str) -> bool:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.client.head_object(Bucket=self.bucket, Key=key)
        except BotoCoreError as exc:  # unreachable endpoint, no credentials...
            raise ToolingError(
                f"s3://{self.bucket}/{key}: cannot reach the state backend ({exc}); "
                "check IAC_STATE_ENDPOINT, the network and the AWS credentials"
            ) from None
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if code in ("404", "NoSuchKey", "NotFound"):
                return False
            raise ToolingError(
                f"s3://{self.bucket}/{key}: cannot read the state backend ({code}): {exc}"
            ) from None
        return True

    def exists(self, key: str) -> bool:
        return self._head(key)

    def locked(self, key: str) -> bool:
        return self._head(f"{key}.tflock")

    def read(self, key: str) -> bytes:
        body: bytes = self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        return body

    def copy(self, src: str, dst: str) -> None:
        self.client.copy_object(
            Bucket=self.bucket,
            Key=dst,
            CopySource={"Bucket": self.bucket, "Key": src},
            ServerSideEncryption="AES256",  # root.hcl's backend has encrypt = true
        )

    def write(self, key: str, data: bytes) -> None:
        self.client.put_object(
            Bucket=self.bucket, Key=key, Body=data, ServerSideEncryption="AES256"
        )

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=key)

    def describe(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"


def s3_client(settings: config.Settings, *, quick: bool = False) -> Any:
    """A boto3 S3 client with the tooling's settings (:func:`tooling.io.s3.client`)."""
    from tooling.io import s3

    return s3.client(settings, quick=quick)


@dataclass(frozen=True)
class BucketFailure:
    """Why a state bucket cannot be used: ``kind`` is ``credentials`` (none found),
    ``unreachable`` (no answer) or ``client`` (S3 answered ``code``)."""

    kind: str
    code: str
    detail: str


def probe_bucket(settings: config.Settings, bucket: str) -> BucketFailure | None:
    """Can these credentials use ``bucket`` (S3 HeadBucket, short timeouts)? None if so."""
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        NoCredentialsError,
        PartialCredentialsError,
    )

    try:
        s3_client(settings, quick=True).head_bucket(Bucket=bucket)
    except (NoCredentialsError, PartialCredentialsError) as exc:
        return BucketFailure("credentials", "", str(exc))
    except BotoCoreError as exc:
        return BucketFailure("unreachable", "", str(exc))
    except ClientError as exc:
        error = exc.response.get("Error", {})
        status = str(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))
        code = str(error.get("Code") or status)
        return BucketFailure("client", code, str(error.get("Message") or exc))
    return None
