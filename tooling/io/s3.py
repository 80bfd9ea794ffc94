"""The tooling's AWS clients (boto3): S3 configured like root.hcl's backend, and the
caller's identity (STS)."""

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


class AwsError(Exception):
    """An AWS call failed (no credentials, unreachable, refused); the text is boto's."""


def caller_arn(region: str) -> str:
    """The ARN of the AWS identity in the environment (STS GetCallerIdentity)."""
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        # a fresh session: the default one caches the credentials it resolved first
        sts = boto3.session.Session().client(
            "sts",
            region_name=region,
            config=Config(connect_timeout=10, read_timeout=20, retries={"max_attempts": 2}),
        )
        return str(sts.get_caller_identity()["Arn"])
    except (BotoCoreError, ClientError) as exc:
        raise AwsError(str(exc)) from None
