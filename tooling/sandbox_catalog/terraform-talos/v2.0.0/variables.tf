# Sandbox stand-in for platform-modules/terraform-talos at v2.0.0.
# Mimics the real module's inputs, outputs and resource addresses with the
# built-in terraform_data resource only (no providers), so plans run offline.

variable "cluster_name" {
  description = "Name of the Talos/Kubernetes cluster."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9]([a-z0-9-]*[a-z0-9])?$", var.cluster_name))
    error_message = "The cluster_name must be a lower-case DNS label."
  }
}

variable "talos_version" {
  description = "Talos Linux version the machine configurations target (for example v1.9.5)."
  type        = string

  validation {
    condition     = can(regex("^v[0-9]+\\.[0-9]+\\.[0-9]+$", var.talos_version))
    error_message = "The talos_version must look like vX.Y.Z."
  }
}

variable "node_ips" {
  description = "IPv4 address of each control-plane node, keyed by node name. The first node (by name) is bootstrapped and serves the API endpoint."
  type        = map(string)

  validation {
    condition     = length(var.node_ips) > 0
    error_message = "At least one node is required."
  }
}

variable "installer_image" {
  description = "Talos installer image. Null uses ghcr.io/siderolabs/installer:<talos_version>."
  type        = string
  default     = null
}
