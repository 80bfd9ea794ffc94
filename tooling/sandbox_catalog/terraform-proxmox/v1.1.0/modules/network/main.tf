# Sandbox stand-in for platform-modules/terraform-proxmox//modules/network at v1.1.0.
# Mimics the real module's inputs, outputs and resource addresses with the
# built-in terraform_data resource only (no providers), so plans run offline.

locals {
  gateway       = cidrhost(var.cidr, 1)
  prefix_length = tonumber(split("/", var.cidr)[1])
  vlan_iface    = "vlan${var.vlan_id}"
}

resource "terraform_data" "bridge" {
  triggers_replace = [var.node_name, var.bridge]

  input = {
    node_name  = var.node_name
    name       = var.bridge
    vlan_aware = true
    autostart  = true
    mtu        = 1500
    comment    = "cluster bridge (managed by OpenTofu)"
  }
}

resource "terraform_data" "vlan" {
  triggers_replace = [var.node_name, var.vlan_id]

  input = {
    node_name = var.node_name
    name      = local.vlan_iface
    interface = terraform_data.bridge.input.name
    vlan      = var.vlan_id
    comment   = "cluster VLAN ${var.vlan_id}"
  }
}

resource "terraform_data" "subnet" {
  triggers_replace = [var.cidr]

  input = {
    vnet    = local.vlan_iface
    cidr    = var.cidr
    gateway = local.gateway
    snat    = false
  }
}
