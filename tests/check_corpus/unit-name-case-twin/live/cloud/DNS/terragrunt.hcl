# live/cloud/dns: the public DNS zone and its records.
# Configuration only: the module lives in its own repository, pinned by tag.
include "root" {
  path = find_in_parent_folders("root.hcl")
}

include "tier" {
  path   = find_in_parent_folders("tier.hcl")
  expose = true
}

terraform {
  source = "git::https://git.example.com/platform-modules/terraform-cloudflare-dns.git?ref=v1.1.0"
}

inputs = {
  zone_name = "example.net"
  records = {
    www     = { type = "CNAME", value = "edge.example.net", ttl = 300 }
    api     = { type = "A", value = "203.0.113.10", ttl = 300 }
    cluster = { type = "A", value = "203.0.113.20", ttl = 60 }
  }
}
