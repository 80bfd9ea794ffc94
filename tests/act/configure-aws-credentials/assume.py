"""AssumeRoleWithWebIdentity on moto's STS; the credentials go to $GITHUB_ENV."""

from __future__ import annotations

import os
import sys

import boto3


def main() -> int:
    role = os.environ["IN_ROLE"]
    if not role:
        print("::error::role-to-assume is empty (the repository variable is not set)")
        return 1
    region = os.environ["IN_REGION"]
    sts = boto3.client(
        "sts",
        region_name=region,
        endpoint_url=os.environ["AWS_ENDPOINT_URL"],
        aws_access_key_id="oidc",
        aws_secret_access_key="oidc",
    )
    creds = sts.assume_role_with_web_identity(
        RoleArn=role,
        RoleSessionName=os.environ["IN_SESSION"],
        WebIdentityToken="rehearsal-oidc-token",
    )["Credentials"]
    with open(os.environ["GITHUB_ENV"], "a", encoding="utf-8") as env:
        env.write(f"AWS_ACCESS_KEY_ID={creds['AccessKeyId']}\n")
        env.write(f"AWS_SECRET_ACCESS_KEY={creds['SecretAccessKey']}\n")
        env.write(f"AWS_SESSION_TOKEN={creds['SessionToken']}\n")
        env.write(f"AWS_REGION={region}\nAWS_DEFAULT_REGION={region}\n")
    print(f"assumed {role}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
