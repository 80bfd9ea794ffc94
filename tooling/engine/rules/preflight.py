"""Executor preflight: what a job checks before any plan or apply.

1. The tools on ``PATH`` are exactly the versions pinned in ``.tool-versions``
   (both executors and every laptop run the same OpenTofu and Terragrunt). A
   workspace checks them once: in a task, its preamble did
   (:func:`tooling.cli.run`), and this finds them checked.
2. When the job declares which executor it runs as (``IAC_EXECUTOR``, set by
   the workflows from the matrix), that executor must be declared in
   ``policy.toml`` and every unit it is asked to plan or apply must belong to
   it: a LAN unit never runs on a hosted runner, and the other way round.
   Unset (local use), any unit may run.
3. When ``policy.toml`` declares the identity that executor's jobs must hold,
   the identity in the environment must match it: AWS through STS
   ``GetCallerIdentity`` (the ARN against ``aws_role_arn_pattern``), Google
   Cloud through google-auth's application default credentials, which are
   refreshed (a real token exchange with the workload identity federation
   endpoint) before the impersonated service account and the credentials'
   audience are compared with ``gcp_service_account_pattern`` and
   ``gcp_audience_pattern``.

4. The role each unit will run as (``iam_role`` in its static form,
   :func:`tooling.engine.rules.verify.roles_of`; computed: never taken on trust) is the executor's
   own (its ``aws_role_arn_pattern``) or one ``[check.allowed_roles.TIER]``
   lists for the unit's tier; a unit without ``iam_role`` runs as the job's
   identity, checked in 3. This holds for a role the root file declares too,
   which the verifier (comparing the unit with what the root file declares)
   lets through.

5. With S3 state (``IAC_STATE_BUCKET``), the bucket is reachable, exists and
   accepts the credentials in the environment (``HeadBucket``, short timeouts),
   once, before any unit runs or any lock is taken.

Each check fails with a message that says what to do; nothing is planned or
applied after a failure.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tooling.core.ci import executors
from tooling.core.rules.enforce import allowed_role
from tooling.errors import ToolingError
from tooling.io import config
from tooling.io.ui import say
from tooling.model.policy import CheckPolicy, Executor, Policy

ENV_EXECUTOR = "IAC_EXECUTOR"
GCP_SCOPE = "https://www.googleapis.com/auth/cloud-platform"


def foreign_units(units: Iterable[tuple[str, str | None]], executor: str) -> list[str]:
    """Why each unit of another executor may not run here (empty: all belong). Pure."""
    return [
        f"unit {path} belongs to executor {owner or '(none)'}, but this job runs as executor {executor} "
        f"({ENV_EXECUTOR}={executor}); it runs in the {owner or '?'} job"
        for path, owner in units
        if owner != executor
    ]


def identity_problems(
    executor: Executor,
    *,
    aws_arn: str | None = None,
    gcp_email: str | None = None,
    gcp_audience: str | None = None,
) -> list[str]:
    """Compare the identities found with the ones ``executor`` expects. Pure."""
    problems: list[str] = []
    name = executor.name
    if executor.aws_role_arn_patterns and not (
        aws_arn and executors.matches(aws_arn, executor.aws_role_arn_patterns)
    ):
        problems.append(
            f"AWS identity {aws_arn} is not the one executor {name} runs as "
            f"(policy.toml [executors.{name}] aws_role_arn_pattern: {', '.join(executor.aws_role_arn_patterns)}); "
            "assume the executor's role before planning or applying"
        )
    if executor.gcp_service_account_patterns and not (
        gcp_email and executors.matches(gcp_email, executor.gcp_service_account_patterns)
    ):
        problems.append(
            f"Google Cloud service account {gcp_email or '(none: the credentials impersonate no service account)'} "
            f"is not the one executor {name} runs as (policy.toml [executors.{name}] gcp_service_account_pattern: "
            f"{', '.join(executor.gcp_service_account_patterns)})"
        )
    if executor.gcp_audience_patterns and not (
        gcp_audience and executors.matches(gcp_audience, executor.gcp_audience_patterns)
    ):
        problems.append(
            f"Google Cloud credentials for audience {gcp_audience or '(none: not external account credentials)'} "
            f"are not the workload identity provider of executor {name} (policy.toml [executors.{name}] "
            f"gcp_audience_pattern: {', '.join(executor.gcp_audience_patterns)})"
        )
    return problems


_ROLE_ARN = re.compile(
    r"arn:(?P<partition>[^:]+):iam::(?P<account>\d+):role/(?:.*/)?(?P<name>[^/]+)"
)


def assumed_arn(role: str, session: str = "terragrunt") -> str:
    """The STS identity a job holds once it assumed ``role`` (what ``aws_role_arn_pattern``
    is written for), or ``role`` itself when it is not an IAM role ARN. Pure."""
    m = _ROLE_ARN.fullmatch(role)
    if m is None:
        return role
    return f"arn:{m['partition']}:sts::{m['account']}:assumed-role/{m['name']}/{session}"


def role_problems(
    roles: Iterable[tuple[str, str, str | None]], executor: Executor | None, policy: CheckPolicy
) -> list[str]:
    """Why each ``(path, tier, role)`` unit may not assume its role here (empty: all may):
    the role must be the executor's own or allowlisted for the unit's tier. Pure."""
    problems: list[str] = []
    for path, tier, role in roles:
        if role is None or allowed_role(policy, tier, role) is not None:
            continue
        if executor is not None and executors.matches(
            assumed_arn(role), executor.aws_role_arn_patterns
        ):
            continue
        own = (
            f"executor {executor.name}'s aws_role_arn_pattern "
            f"({', '.join(executor.aws_role_arn_patterns) or 'none declared'})"
            if executor is not None
            else "the executor's role (IAC_EXECUTOR unset)"
        )
        problems.append(
            f"unit {path} would run as role {role} (iam_role), which is neither {own} nor listed "
            f"under [check.allowed_roles.{tier}] in policy.toml; remove iam_role or list the role "
            "there with the reason"
        )
    return problems


def aws_caller_arn() -> str:
    """The ARN of the AWS identity in the environment (STS GetCallerIdentity)."""
    from tooling.io import s3

    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    try:
        return s3.caller_arn(region)
    except s3.AwsError as exc:
        raise ToolingError(
            f"preflight: cannot read the AWS identity (STS GetCallerIdentity: {exc}); "
            "this job must hold its executor's AWS role before planning or applying"
        ) from None


@dataclass(frozen=True)
class GcpIdentity:
    service_account: str | None
    audience: str | None


def gcp_identity() -> GcpIdentity:
    """The Google Cloud identity of the application default credentials, after a token refresh.

    Workload identity federation (``external_account`` credentials, what
    google-github-actions/auth writes) exchanges the job's OIDC token at the
    credentials' ``token_url`` and, when the file names one, impersonates a
    service account; the refresh proves the exchange works.
    """
    import google.auth
    import google.auth.exceptions
    import google.auth.transport.requests

    # google-auth warns when it cannot tell the project; the preflight does not need one
    logging.getLogger("google.auth._default").setLevel(logging.ERROR)
    try:
        credentials: Any
        credentials, _project = google.auth.default()
        if getattr(credentials, "requires_scopes", False):
            credentials = credentials.with_scopes([GCP_SCOPE])
        credentials.refresh(google.auth.transport.requests.Request())
    except google.auth.exceptions.GoogleAuthError as exc:
        raise ToolingError(
            f"preflight: cannot obtain Google Cloud credentials ({exc}); this job must authenticate "
            "(workload identity federation) before planning or applying"
        ) from None
    email = getattr(credentials, "service_account_email", None)
    info = getattr(credentials, "info", None)
    audience = info.get("audience") if isinstance(info, dict) else None
    return GcpIdentity(
        service_account=str(email) if email else None, audience=str(audience) if audience else None
    )


def check_identity(executor: Executor) -> None:
    """Refuse unless the environment holds the identity ``executor`` expects."""
    arn = aws_caller_arn() if executor.aws_role_arn_patterns else None
    gcp = (
        gcp_identity()
        if executor.gcp_service_account_patterns or executor.gcp_audience_patterns
        else None
    )
    problems = identity_problems(
        executor,
        aws_arn=arn,
        gcp_email=gcp.service_account if gcp else None,
        gcp_audience=gcp.audience if gcp else None,
    )
    if problems:
        raise ToolingError("preflight refused:\n  - " + "\n  - ".join(problems))
    if arn:
        say(f"preflight: AWS identity {arn} is executor {executor.name}'s")
    if gcp:
        say(
            f"preflight: Google Cloud identity {gcp.service_account or gcp.audience} is executor {executor.name}'s"
        )


#: S3 error codes that mean the credentials are not accepted (or not allowed to list the bucket)
_DENIED = frozenset(
    {
        "403",
        "AccessDenied",
        "Forbidden",
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "ExpiredToken",
        "InvalidToken",
        "TokenRefreshRequired",
    }
)
_checked_backends: set[config.Settings] = set()


def backend_problem(bucket: str, where: str, *, kind: str, code: str, detail: str) -> str:
    """The message for a state backend that cannot be used, with what to do. Pure."""
    target = f"state bucket s3://{bucket} at {where}"
    if kind == "credentials":
        return (
            f"preflight: no AWS credentials for the {target} ({detail}). Set AWS_ACCESS_KEY_ID/"
            "AWS_SECRET_ACCESS_KEY or AWS_PROFILE (CI: the job's role), or unset IAC_STATE_BUCKET "
            "for local state."
        )
    if kind == "unreachable":
        return (
            f"preflight: cannot reach the {target} ({detail}). Check IAC_STATE_ENDPOINT and "
            "IAC_STATE_REGION and the network, or unset IAC_STATE_BUCKET for local state."
        )
    if code in ("404", "NoSuchBucket", "NotFound"):
        return (
            f"preflight: the {target} does not exist. Create it (bootstrap/ owns the state "
            "bucket) or fix IAC_STATE_BUCKET."
        )
    if code in _DENIED:
        return (
            f"preflight: the {target} refused these AWS credentials ({code}). Use credentials "
            "that may list and write the bucket (CI: the executor's role)."
        )
    if code in ("301", "PermanentRedirect", "AuthorizationHeaderMalformed"):
        return f"preflight: the {target} is in another region ({code}). Set IAC_STATE_REGION to the bucket's region."
    return f"preflight: cannot use the {target} ({code}: {detail})."


def check_state_backend(settings: config.Settings) -> None:
    """S3 state: the bucket exists and these credentials may use it, checked once per run,
    before any unit runs or any lock is taken (otherwise each unit retries on its own and
    fails late). Local state needs no check."""
    bucket = settings.state_bucket
    if not bucket or settings in _checked_backends:
        return
    from tooling.io.statestore import probe_bucket

    where = settings.state_endpoint or f"AWS S3 ({settings.state_region})"
    failure = probe_bucket(settings, bucket)
    if failure is None:
        _checked_backends.add(settings)
        say(f"preflight: state bucket s3://{bucket} reachable")
        return
    raise ToolingError(
        backend_problem(bucket, where, kind=failure.kind, code=failure.code, detail=failure.detail)
    )


def check_roles(roles: Iterable[tuple[str, str, str | None]], *, policy: Policy) -> None:
    """Refuse unless each ``(path, tier, role)`` unit (its role as its static form gives it)
    may run as that role on this job's executor (:func:`role_problems`) under ``policy``
    (policy.toml)."""
    name = os.environ.get(ENV_EXECUTOR, "").strip()
    executor = executors.get(policy.executors, name, what=ENV_EXECUTOR) if name else None
    refused = role_problems(roles, executor, policy.check)
    if refused:
        raise ToolingError("preflight refused:\n  - " + "\n  - ".join(refused))


def check(
    units: Iterable[tuple[str, str | None]], *, policy: Policy, settings: config.Settings
) -> Executor | None:
    """The preflight, before any plan or apply of ``units`` (``(path, executor)`` pairs)
    under ``policy`` (policy.toml) and ``settings``; the roles they run as are
    :func:`check_roles`' (from each unit's static form). The pinned tools are checked before
    (the task's preamble, and :meth:`tooling.io.workspace.Workspace.check_tools`).

    Returns the executor this job runs as, or None for local use (``IAC_EXECUTOR`` unset).
    """
    units = list(units)
    executor: Executor | None = None
    name = os.environ.get(ENV_EXECUTOR, "").strip()
    if name:
        executor = executors.get(policy.executors, name, what=ENV_EXECUTOR)
        refused = foreign_units(units, name)
        if refused:
            raise ToolingError("preflight refused:\n  - " + "\n  - ".join(refused))
        check_identity(executor)
    if units:
        check_state_backend(settings)
    return executor
