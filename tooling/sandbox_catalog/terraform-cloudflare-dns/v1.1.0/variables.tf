# Sandbox stand-in for platform-modules/terraform-cloudflare-dns at v1.1.0.
# Mimics the real module's inputs, outputs and resource addresses with the
# built-in terraform_data resource only (no providers), so plans run offline.

variable "zone_name" {
  description = "Apex domain of the zone, without a trailing dot (for example example.net)."
  type        = string

  validation {
    condition     = can(regex("^([a-z0-9]([a-z0-9-]*[a-z0-9])?\\.)+[a-z]{2,}$", var.zone_name))
    error_message = "The zone_name must be a lower-case domain name without a trailing dot."
  }
}

variable "records" {
  description = "DNS records in the zone, keyed by name relative to the zone (\"@\" for the apex)."
  type = map(object({
    type  = string
    value = string
    ttl   = number
  }))
  default = {}

  validation {
    condition     = alltrue([for r in values(var.records) : contains(["A", "AAAA", "CAA", "CNAME", "MX", "NS", "SRV", "TXT"], r.type)])
    error_message = "Each record type must be one of A, AAAA, CAA, CNAME, MX, NS, SRV or TXT."
  }
}
