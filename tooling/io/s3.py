"""The S3 client of the tooling (boto3), configured like root.hcl's backend."""

from __future__ import annotations

from typing import Any

from tooling.io import config


def client(settings: config.Settings, *, quick: bool = False) -> Any:
    """A boto3 S3 client with the tooling's settings (path-style addressing for an endpoint).

    ``quick``: short timeouts and one retry, for a check that must fail fast.
    """
    import boto3
    from botocore.config import Config

    options: dict[str, Any] = {}
    if settings.state_endpoint:
        options["s3"] = {"addressing_style": "path"}
    if quick:
        options.update(
            connect_timeout=5, read_timeout=10, retries={"max_attempts": 2, "mode": "standard"}
        )
    return boto3.client(
        "s3",
        region_name=settings.state_region,
        endpoint_url=settings.state_endpoint,
        config=Config(**options) if options else None,
    )
