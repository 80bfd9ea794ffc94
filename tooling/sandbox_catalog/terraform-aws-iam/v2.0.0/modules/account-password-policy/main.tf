# Sandbox stand-in for platform-modules/terraform-aws-iam//modules/account-password-policy at v2.0.0.
# Mimics the real module's inputs, outputs and resource addresses with the
# built-in terraform_data resource only (no providers), so plans run offline.

resource "terraform_data" "password_policy" {
  input = {
    minimum_password_length        = var.minimum_password_length
    max_password_age               = var.max_password_age_days
    require_lowercase_characters   = true
    require_uppercase_characters   = true
    require_numbers                = true
    require_symbols                = true
    allow_users_to_change_password = true
    password_reuse_prevention      = 24
  }
}
