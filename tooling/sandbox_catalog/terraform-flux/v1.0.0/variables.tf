# Sandbox stand-in for platform-modules/terraform-flux at v1.0.0.
# Mimics the real module's inputs, outputs and resource addresses with the
# built-in terraform_data resource only (no providers), so plans run offline.

variable "cluster_endpoint" {
  description = "Kubernetes API endpoint of the cluster Flux is installed into."
  type        = string

  validation {
    condition     = can(regex("^https://", var.cluster_endpoint))
    error_message = "The cluster_endpoint must be an https:// URL."
  }
}

variable "dns_zone_id" {
  description = "ID of the DNS zone, passed to the cluster's manifests as the DNS_ZONE_ID substitution."
  type        = string
}

variable "repository_url" {
  description = "URL of the GitOps repository Flux reconciles (ssh:// or https://)."
  type        = string

  validation {
    condition     = can(regex("^(ssh|https)://", var.repository_url))
    error_message = "The repository_url must be an ssh:// or https:// URL."
  }
}

variable "path" {
  description = "Path of the cluster's directory in the GitOps repository (for example clusters/home)."
  type        = string
}
