# live/cloud/iam: the GitHub OIDC provider and the roles the pipeline assumes.
include "root" {
  path = find_in_parent_folders("root.hcl")
}

include "tier" {
  path   = find_in_parent_folders("tier.hcl")
  expose = true
}

terraform {
  source = "git::https://git.example.com/platform-modules/terraform-aws-iam.git//modules/github-oidc-roles?ref=v1.0.0"
}

inputs = {
  github_org = "example-org"
  roles = {
    plan     = { repository = "infrastructure", subject = "pull_request", policy = "ReadOnlyAccess" }
    apply    = { repository = "infrastructure", subject = "environment:infra-auto", policy = "AdministratorAccess" }
    registry = { repository = "apps", subject = "ref:refs/heads/main", policy = "RegistryPush" }
  }
  # Sensitive: the job's TF_VAR_bootstrap_token wins over this sandbox placeholder (secret-read).
  bootstrap_token = "sandbox-not-a-secret"
}
