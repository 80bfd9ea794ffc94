# Sandbox stand-in for platform-modules/terraform-proxmox//modules/network at v2.0.0.
# Mimics the real module's inputs, outputs and resource addresses with the
# built-in terraform_data resource only (no providers), so plans run offline.

output "bridge" {
  description = "Name of the bridge VMs attach to."
  value       = terraform_data.bridge.input.name
}

output "vlan_id" {
  description = "VLAN tag VMs use on the bridge."
  value       = terraform_data.vlan.input.vlan
}

output "gateway" {
  description = "Default gateway of the cluster network (first host of cidr)."
  value       = local.gateway
}

output "prefix_length" {
  description = "Prefix length of the cluster network."
  value       = local.prefix_length
}
