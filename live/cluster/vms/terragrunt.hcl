# live/cluster/vms: the cluster's virtual machines. Changes here touch nodes,
# so the gate policy sends them to a human before apply.
include "root" {
  path = find_in_parent_folders("root.hcl")
}

include "tier" {
  path   = find_in_parent_folders("tier.hcl")
  expose = true
}

terraform {
  source = "git::https://git.example.com/platform-modules/terraform-proxmox.git//modules/vm?ref=v1.1.0"
}

dependency "network" {
  config_path = "../network"

  mock_outputs = {
    bridge  = "vmbr-mock"
    vlan_id = 0
    gateway = "10.0.0.1"
  }
  mock_outputs_allowed_terraform_commands = ["validate", "plan"]
}

inputs = {
  bridge  = dependency.network.outputs.bridge
  vlan_id = dependency.network.outputs.vlan_id
  gateway = dependency.network.outputs.gateway
  nodes = {
    node-1 = { cores = 4, memory_mb = 8192, ip = "10.40.0.11" }
    node-2 = { cores = 4, memory_mb = 8192, ip = "10.40.0.12" }
    node-3 = { cores = 4, memory_mb = 8192, ip = "10.40.0.13" }
  }
}
