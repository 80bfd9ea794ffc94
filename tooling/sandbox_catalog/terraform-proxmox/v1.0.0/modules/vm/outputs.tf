# Sandbox stand-in for platform-modules/terraform-proxmox//modules/vm at v1.0.0.
# Mimics the real module's inputs, outputs and resource addresses with the
# built-in terraform_data resource only (no providers), so plans run offline.

output "node_ips" {
  description = "IPv4 address of each VM, keyed by node name."
  value       = { for name, vm in terraform_data.vm : name => split("/", vm.input.initialization.ipv4_address)[0] }
}

output "vm_ids" {
  description = "Proxmox VM ID of each VM, keyed by node name."
  value       = { for name, vm in terraform_data.vm : name => vm.input.vm_id }
}
