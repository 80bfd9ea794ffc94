# root.hcl: the Terragrunt root configuration, included by every unit under live/
# with `include "root" { path = find_in_parent_folders("root.hcl") }`.
#
# It is named root.hcl, not terragrunt.hcl: since 0.70 Terragrunt warns that a
# root terragrunt.hcl is an anti-pattern (it is mistaken for a unit) and
# recommends root.hcl.
#
# What it sets for every unit:
#   - the state backend, keyed by the unit's repository path
#     (path_relative_to_include(), e.g. live/cloud/dns/terraform.tfstate), so
#     every unit has its own key by construction;
#   - local state under .iac/state/ (ignored by git) unless IAC_STATE_BUCKET is
#     set, in which case an S3 backend with S3-native locking (use_lockfile).
#
# The backend block is generated rather than declared with remote_state:
# Terragrunt's own S3 handling (bucket creation and checks) gets in the way of
# S3-compatible endpoints on loopback, and the pipeline's bootstrap/ owns the
# bucket anyway.

locals {
  state_key    = "${path_relative_to_include()}/terraform.tfstate"
  state_bucket = get_env("IAC_STATE_BUCKET", "")
  state_region = get_env("IAC_STATE_REGION", "us-east-1")
  # Optional S3-compatible endpoint (MinIO, moto, Ceph...). Empty = AWS.
  state_endpoint = get_env("IAC_STATE_ENDPOINT", "")
  state_dir      = get_env("IAC_STATE_DIR", "${get_parent_terragrunt_dir()}/.iac/state")

  s3_endpoint_lines = local.state_endpoint == "" ? "" : <<-EOT
    endpoints = { s3 = "${local.state_endpoint}" }
    use_path_style              = true
    skip_credentials_validation = true
    skip_requesting_account_id  = true
    skip_metadata_api_check     = true
    skip_region_validation      = true
  EOT

  backend_local = <<-EOT
    terraform {
      backend "local" {
        path = "${local.state_dir}/${local.state_key}"
      }
    }
  EOT

  backend_s3 = <<-EOT
    terraform {
      backend "s3" {
        bucket       = "${local.state_bucket}"
        key          = "${local.state_key}"
        region       = "${local.state_region}"
        encrypt      = true
        use_lockfile = true
        ${local.s3_endpoint_lines}
      }
    }
  EOT
}

generate "backend" {
  path      = "backend.tf"
  if_exists = "overwrite_terragrunt"
  contents  = local.state_bucket == "" ? local.backend_local : local.backend_s3
}

# The working-copy rule (docs/rules.md, "working-copy"): before OpenTofu's init
# (which reads the configuration too) and again right before it plans or
# applies, the unit's working copy must hold exactly the module's files at the
# commit its tag names, plus the files the generate blocks above declare. The
# pipeline arms the check through IAC_WORKCOPY_HOOK; a plain `terragrunt plan`
# runs `true` instead.
terraform {
  before_hook "iac_working_copy" {
    commands = ["init", "plan", "apply"]
    execute  = concat(jsondecode(get_env("IAC_WORKCOPY_HOOK", "[\"true\"]")), [get_terragrunt_dir()])
  }
}
