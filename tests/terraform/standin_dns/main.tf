# Root module for the Terratest-style test of the DNS stand-in (tests/test_standins.py).
module "dns" {
  source    = "../../../tooling/sandbox_catalog/terraform-cloudflare-dns/v1.2.0"
  zone_name = "example.net"
  records = {
    www = { type = "CNAME", value = "edge.example.net", ttl = 300 }
    api = { type = "A", value = "203.0.113.10", ttl = 300 }
  }
}

output "zone_id" {
  value = module.dns.zone_id
}

output "record_fqdns" {
  value = module.dns.record_fqdns
}
