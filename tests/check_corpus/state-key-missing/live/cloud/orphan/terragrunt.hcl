# live/cloud/orphan: forgot the root include, so no backend and no key.
include "tier" {
  path   = find_in_parent_folders("tier.hcl")
  expose = true
}

terraform {
  source = "git::https://git.example.com/platform-modules/terraform-aws-iam.git//modules/account-password-policy?ref=v1.0.0"
}
