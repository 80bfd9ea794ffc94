# Sandbox stand-in for platform-modules/terraform-aws-iam//modules/github-oidc-roles at v1.2.0.
# Mimics the real module's inputs, outputs and resource addresses with the
# built-in terraform_data resource only (no providers), so plans run offline.

output "role_arns" {
  description = "ARN of each role, keyed like the roles input."
  value       = { for name, role in terraform_data.role : name => role.input.arn }
}

output "oidc_provider_arn" {
  description = "ARN of the GitHub Actions OIDC identity provider."
  value       = terraform_data.oidc_provider.input.arn
}

output "permissions_boundary_arn" {
  description = "ARN of the permissions boundary policy for CI roles."
  value       = terraform_data.permissions_boundary.input.arn
}

output "ci_token" {
  description = "Token for the CI pipeline, derived from bootstrap_token."
  value       = terraform_data.ci_token.input
  sensitive   = true
}
