# live/cloud/registry: container image repositories; CI pushes with the role from iam.
include "root" {
  path = find_in_parent_folders("root.hcl")
}

include "tier" {
  path   = find_in_parent_folders("tier.hcl")
  expose = true
}

terraform {
  source = "git::https://git.example.com/platform-modules/terraform-aws-ecr.git?ref=v1.1.0"
}

dependency "iam" {
  config_path = "../iam"

  mock_outputs = {
    role_arns = { registry = "arn:aws:iam::000000000000:role/mock-registry" }
  }
  mock_outputs_allowed_terraform_commands = ["validate", "plan"]
}

inputs = {
  repositories  = ["web", "api", "worker"]
  push_role_arn = dependency.iam.outputs.role_arns["registry"]
}
