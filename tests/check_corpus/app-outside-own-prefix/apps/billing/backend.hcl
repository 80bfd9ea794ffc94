bucket = "example-apps-state"
key    = "apps/billing/terraform.tfstate"
