# Sandbox stand-in for platform-modules/terraform-aws-iam//modules/github-oidc-roles at v1.1.0.
# Mimics the real module's inputs, outputs and resource addresses with the
# built-in terraform_data resource only (no providers), so plans run offline.

terraform {
  required_version = ">= 1.6"
}
