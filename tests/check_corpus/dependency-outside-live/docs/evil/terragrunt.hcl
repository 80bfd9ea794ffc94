# not a unit: outside the live folders, yet Terragrunt parses it for its dependent
locals {
  who = "nobody reviews this folder as configuration"
}
