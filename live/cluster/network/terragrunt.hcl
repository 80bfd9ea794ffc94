# live/cluster/network: the cluster bridge, VLAN and subnet on the hypervisor.
include "root" {
  path = find_in_parent_folders("root.hcl")
}

include "tier" {
  path   = find_in_parent_folders("tier.hcl")
  expose = true
}

terraform {
  source = "git::https://git.example.com/platform-modules/terraform-proxmox.git//modules/network?ref=v1.1.0"
}

inputs = {
  node_name = "pve-1"
  bridge    = "vmbr1"
  vlan_id   = 40
  cidr      = "10.40.0.0/24"
}
