# Sandbox stand-in for platform-modules/terraform-aws-ecr at v1.2.0.
# Mimics the real module's inputs, outputs and resource addresses with the
# built-in terraform_data resource only (no providers), so plans run offline.

output "repository_urls" {
  description = "Image URL of each repository, keyed by repository name."
  value       = { for name, repo in terraform_data.repository : name => repo.input.url }
}

output "repository_arns" {
  description = "ARN of each repository, keyed by repository name."
  value       = { for name, repo in terraform_data.repository : name => repo.input.arn }
}
