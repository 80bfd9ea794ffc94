# A sample application folder, as an app team keeps it in its own repository
# (terraform/): plain OpenTofu, no backend block (the pipeline sets the backend
# and the key apps/<app>/terraform.tfstate). It stands in for a database and a
# bucket with OpenTofu's built-in terraform_data, so it plans and applies
# offline.

variable "database_size" {
  type    = string
  default = "small"
}

resource "terraform_data" "database" {
  input = {
    engine = "postgres"
    size   = var.database_size
  }
}

resource "terraform_data" "bucket" {
  input = {
    name       = "sample-assets"
    versioning = true
  }
}

output "database" {
  value = terraform_data.database.output
}
