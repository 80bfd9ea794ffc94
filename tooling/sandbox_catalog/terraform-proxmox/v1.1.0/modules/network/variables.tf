# Sandbox stand-in for platform-modules/terraform-proxmox//modules/network at v1.1.0.
# Mimics the real module's inputs, outputs and resource addresses with the
# built-in terraform_data resource only (no providers), so plans run offline.

variable "node_name" {
  description = "Proxmox VE node that hosts the bridge and VLAN."
  type        = string
}

variable "bridge" {
  description = "Name of the Linux bridge to create (for example vmbr1)."
  type        = string

  validation {
    condition     = can(regex("^vmbr[0-9]{1,4}$", var.bridge))
    error_message = "The bridge must be named vmbrN."
  }
}

variable "vlan_id" {
  description = "VLAN tag of the cluster network."
  type        = number

  validation {
    condition     = var.vlan_id >= 1 && var.vlan_id <= 4094 && floor(var.vlan_id) == var.vlan_id
    error_message = "The vlan_id must be an integer between 1 and 4094."
  }
}

variable "cidr" {
  description = "IPv4 subnet of the cluster network in CIDR notation; the first host is the gateway."
  type        = string

  validation {
    condition     = can(cidrhost(var.cidr, 1)) && !can(regex(":", var.cidr))
    error_message = "The cidr must be an IPv4 CIDR block with room for a gateway."
  }
}
