terraform {
  backend "s3" {
    bucket = "example-apps-state"
    region = "us-east-1"
    key    = "live/shop/terraform.tfstate"
  }
}
