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
#     set, in which case an S3 backend with S3-native locking (use_lockfile);
#   - OpenTofu's encryption of state and plan files (encryption.tf): on when
#     IAC_ENCRYPTION_PASSPHRASE or IAC_ENCRYPTION_KMS_KEY_ID is set, plain
#     otherwise (docs/runbooks.md, "Encrypting plans and state").
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

  # Encryption of state and plan files at rest (OpenTofu's own, AES-GCM). The
  # passphrase never lands on disk: encryption.tf reads it from an ephemeral
  # variable (never stored in a plan) that the tooling sets from
  # IAC_ENCRYPTION_PASSPHRASE (as TF_VAR_iac_encryption_passphrase). The KMS key
  # id is not a secret and is written in. Both set: KMS encrypts, and data the
  # passphrase encrypted is still read (the way from a passphrase to KMS).
  # IAC_ENCRYPTION_FROM_PLAIN=true also reads plain state and plans, for the
  # one migration of an existing repository (OpenTofu then writes encrypted).
  enc_passphrase = get_env("IAC_ENCRYPTION_PASSPHRASE", "") != ""
  enc_kms_key_id = get_env("IAC_ENCRYPTION_KMS_KEY_ID", "")
  enc_from_plain = get_env("IAC_ENCRYPTION_FROM_PLAIN", "") == "true"
  enc_on         = local.enc_passphrase || local.enc_kms_key_id != ""
  enc_method     = local.enc_kms_key_id != "" ? "aes_gcm.kms" : "aes_gcm.passphrase"

  enc_passphrase_blocks = !local.enc_passphrase ? "" : <<-EOT
    key_provider "pbkdf2" "passphrase" {
      passphrase = var.iac_encryption_passphrase
    }
    method "aes_gcm" "passphrase" {
      keys = key_provider.pbkdf2.passphrase
    }
  EOT
  enc_kms_blocks        = local.enc_kms_key_id == "" ? "" : <<-EOT
    key_provider "aws_kms" "kms" {
      kms_key_id = "${local.enc_kms_key_id}"
      key_spec   = "AES_256"
      region     = "${local.state_region}"
    }
    method "aes_gcm" "kms" {
      keys = key_provider.aws_kms.kms
    }
  EOT
  enc_fallback = (
    local.enc_from_plain ? "unencrypted.plain" :
    local.enc_kms_key_id != "" && local.enc_passphrase ? "aes_gcm.passphrase" : ""
  )
  enc_fallback_block = local.enc_fallback == "" ? "" : <<-EOT
    fallback {
      method = method.${local.enc_fallback}
    }
  EOT
  enc_target         = <<-EOT
    method   = method.${local.enc_method}
    enforced = ${local.enc_from_plain ? "false" : "true"}
    ${local.enc_fallback_block}
  EOT
  enc_variable       = !local.enc_passphrase ? "" : <<-EOT
    variable "iac_encryption_passphrase" {
      type      = string
      sensitive = true
      ephemeral = true
    }
  EOT

  encryption_plain = <<-EOT
    # State and plan files are plain: set IAC_ENCRYPTION_PASSPHRASE or
    # IAC_ENCRYPTION_KMS_KEY_ID to encrypt them (docs/runbooks.md).
  EOT
  encryption_on    = <<-EOT
    ${local.enc_variable}
    terraform {
      encryption {
        ${local.enc_passphrase_blocks}
        ${local.enc_kms_blocks}
        ${local.enc_from_plain ? "method \"unencrypted\" \"plain\" {}" : ""}
        state {
          ${local.enc_target}
        }
        plan {
          ${local.enc_target}
        }
      }
    }
  EOT
}

generate "encryption" {
  path      = "encryption.tf"
  if_exists = "overwrite_terragrunt"
  contents  = local.enc_on ? local.encryption_on : local.encryption_plain
}

generate "backend" {
  path      = "backend.tf"
  if_exists = "overwrite_terragrunt"
  contents  = local.state_bucket == "" ? local.backend_local : local.backend_s3
}
