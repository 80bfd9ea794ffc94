# Sandbox stand-in for platform-modules/terraform-proxmox//modules/vm at v2.0.0.
# Mimics the real module's inputs, outputs and resource addresses with the
# built-in terraform_data resource only (no providers), so plans run offline.

variable "bridge" {
  description = "Bridge the VMs' network interface attaches to."
  type        = string
}

variable "vlan_id" {
  description = "VLAN tag of the VMs' network interface (0 = untagged)."
  type        = number

  validation {
    condition     = var.vlan_id >= 0 && var.vlan_id <= 4094 && floor(var.vlan_id) == var.vlan_id
    error_message = "The vlan_id must be an integer between 0 and 4094."
  }
}

variable "gateway" {
  description = "IPv4 default gateway of the VMs."
  type        = string

  validation {
    condition     = can(cidrhost("${var.gateway}/32", 0))
    error_message = "The gateway must be an IPv4 address."
  }
}

variable "nodes" {
  description = "VMs to create, keyed by name: vCPU cores, memory in MiB and static IPv4 address."
  type = map(object({
    cores     = number
    memory_mb = number
    ip        = string
  }))

  validation {
    condition     = alltrue([for n in values(var.nodes) : n.cores >= 1 && n.memory_mb >= 512])
    error_message = "Each node needs at least 1 core and 512 MiB of memory."
  }
}

variable "prefix_length" {
  description = "Prefix length of the VMs' IPv4 addresses."
  type        = number
  default     = 24
}

variable "disk_size_gb" {
  description = "Size of each VM's system disk in GiB."
  type        = number
  default     = 32
}

variable "bios" {
  description = "Firmware of the VMs: ovmf (UEFI) or seabios."
  type        = string
  default     = "ovmf"

  validation {
    condition     = contains(["ovmf", "seabios"], var.bios)
    error_message = "The bios must be ovmf or seabios."
  }
}
