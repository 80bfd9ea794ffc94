# Root module for the Terratest-style test of the Proxmox VM stand-in (tests/test_standins.py).
module "vm" {
  source  = "../../../tooling/sandbox_catalog/terraform-proxmox/v2.0.0/modules/vm"
  bridge  = "vmbr1"
  vlan_id = 40
  gateway = "10.40.0.1"
  nodes = {
    node-1 = { cores = 2, memory_mb = 4096, ip = "10.40.0.11" }
    node-2 = { cores = 2, memory_mb = 4096, ip = "10.40.0.12" }
  }
}

output "node_ips" {
  value = module.vm.node_ips
}
