# Root module for the Terratest-style test of the IAM stand-in, with its
# sensitive input and output (tests/test_standins.py).
module "iam" {
  source     = "../../../tooling/sandbox_catalog/terraform-aws-iam/v1.1.0/modules/github-oidc-roles"
  github_org = "example-org"
  roles = {
    plan = { repository = "infrastructure", subject = "pull_request", policy = "ReadOnlyAccess" }
  }
  bootstrap_token = "canary-standin-token"
}

output "role_arns" {
  value = module.iam.role_arns
}

output "ci_token" {
  value     = module.iam.ci_token
  sensitive = true
}
