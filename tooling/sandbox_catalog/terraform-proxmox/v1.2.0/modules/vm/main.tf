# Sandbox stand-in for platform-modules/terraform-proxmox//modules/vm at v1.2.0.
# Mimics the real module's inputs, outputs and resource addresses with the
# built-in terraform_data resource only (no providers), so plans run offline.

locals {
  # VM IDs are allocated from 100 upwards in name order.
  vm_ids = { for idx, name in sort(keys(var.nodes)) : name => 100 + idx }
}

resource "terraform_data" "vm" {
  for_each = var.nodes

  triggers_replace = [each.key, local.vm_ids[each.key]]

  input = {
    name  = each.key
    vm_id = local.vm_ids[each.key]
    cpu = {
      cores = each.value.cores
      type  = "host"
    }
    memory_mb = each.value.memory_mb
    network = {
      bridge  = var.bridge
      vlan_id = var.vlan_id == 0 ? null : var.vlan_id
      model   = "virtio"
    }
    initialization = {
      ipv4_address = "${each.value.ip}/${var.prefix_length}"
      ipv4_gateway = var.gateway
    }
  }
}

resource "terraform_data" "disk" {
  for_each = var.nodes

  triggers_replace = [each.key, "scsi0"]

  input = {
    vm_id     = local.vm_ids[each.key]
    datastore = "local-lvm"
    interface = "scsi0"
    size_gb   = var.disk_size_gb
    discard   = "on"
  }
}
