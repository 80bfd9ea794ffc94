# live/cloud/dns-copy: copied from dns, with the state key copied too.
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

# copied by hand: the key is dns's
remote_state {
  backend = "s3"
  config = {
    bucket = "example-foundation-state"
    key    = "live/cloud/dns/terraform.tfstate"
    region = "us-east-1"
  }
}

inputs = {
  zone_name = "example.org"
}
