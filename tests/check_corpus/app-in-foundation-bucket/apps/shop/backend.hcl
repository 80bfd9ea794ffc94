bucket = "example-org-iac-foundation-state"
key    = "apps/shop/terraform.tfstate"
