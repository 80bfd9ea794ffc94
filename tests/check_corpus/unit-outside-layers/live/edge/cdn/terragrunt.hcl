# live/edge/cdn: a new tier nobody declared.
include "root" {
  path = find_in_parent_folders("root.hcl")
}

terraform {
  source = "git::https://git.example.com/platform-modules/terraform-cloudflare-dns.git?ref=v1.1.0"
}
