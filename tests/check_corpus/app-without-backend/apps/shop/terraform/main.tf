resource "terraform_data" "bucket" {}
