# live/cloud/shared: state at a hand-written key outside live/.
include "root" {
  path = find_in_parent_folders("root.hcl")
}

include "tier" {
  path   = find_in_parent_folders("tier.hcl")
  expose = true
}

terraform {
  source = "git::https://git.example.com/platform-modules/terraform-aws-iam.git//modules/account-password-policy?ref=v1.0.0"
}

remote_state {
  backend = "s3"
  config = {
    key    = "shared/terraform.tfstate"
    region = "us-east-1"
  }
}
