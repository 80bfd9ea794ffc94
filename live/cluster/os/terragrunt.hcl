# live/cluster/os: Talos machine configuration for the nodes and the cluster bootstrap.
include "root" {
  path = find_in_parent_folders("root.hcl")
}

include "tier" {
  path   = find_in_parent_folders("tier.hcl")
  expose = true
}

terraform {
  source = "git::https://git.example.com/platform-modules/terraform-talos.git?ref=v1.0.0"
}

dependency "vms" {
  config_path = "../vms"

  # Mocks keep the real output's shape (one entry per node), so a plan made
  # before the VMs exist lists the same resources as the one made after.
  mock_outputs = {
    node_ips = {
      node-1 = "10.0.0.11"
      node-2 = "10.0.0.12"
      node-3 = "10.0.0.13"
    }
  }
  mock_outputs_allowed_terraform_commands = ["validate", "plan"]
}

inputs = {
  cluster_name  = "home"
  talos_version = "v1.9.5"
  node_ips      = dependency.vms.outputs.node_ips
}
