# Sandbox stand-in for platform-modules/terraform-aws-iam//modules/account-password-policy at v1.1.0.
# Mimics the real module's inputs, outputs and resource addresses with the
# built-in terraform_data resource only (no providers), so plans run offline.

variable "minimum_password_length" {
  description = "Minimum length of IAM user passwords."
  type        = number
  default     = 14

  validation {
    condition     = var.minimum_password_length >= 8 && var.minimum_password_length <= 128
    error_message = "The minimum_password_length must be between 8 and 128."
  }
}

variable "max_password_age_days" {
  description = "Days before a password expires (0 = never)."
  type        = number
  default     = 90
}
