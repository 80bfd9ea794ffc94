# Sandbox stand-in for platform-modules/terraform-aws-iam//modules/account-password-policy at v1.1.0.
# Mimics the real module's inputs, outputs and resource addresses with the
# built-in terraform_data resource only (no providers), so plans run offline.

output "minimum_password_length" {
  description = "Minimum password length in force."
  value       = terraform_data.password_policy.input.minimum_password_length
}
