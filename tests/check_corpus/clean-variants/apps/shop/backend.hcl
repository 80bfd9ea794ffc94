bucket = "example-apps-state"
key    = "apps/shop/terraform.tfstate"
region = "us-east-1"
