# Sandbox stand-in for platform-modules/terraform-cloudflare-dns at v2.0.0.
# Mimics the real module's inputs, outputs and resource addresses with the
# built-in terraform_data resource only (no providers), so plans run offline.

locals {
  # Cloudflare zone IDs are 32 hex characters: derive a stable fake one.
  zone_id = md5("cloudflare-zone:${var.zone_name}")

  fqdns = { for name, _ in var.records : name => name == "@" ? var.zone_name : "${name}.${var.zone_name}" }
}

resource "terraform_data" "zone" {
  triggers_replace = [var.zone_name]

  input = {
    id   = local.zone_id
    name = var.zone_name
    plan = "free"
    type = "full"
    settings = {
      always_use_https = "on"
      min_tls_version  = "1.2"
    }
  }
}

resource "terraform_data" "record" {
  for_each = var.records

  # Since v2.0.0 records are identified by their fully qualified name.
  triggers_replace = [local.zone_id, local.fqdns[each.key], each.value.type]

  input = {
    zone_id = local.zone_id
    name    = local.fqdns[each.key]
    type    = each.value.type
    content = each.value.value
    ttl     = each.value.ttl
    proxied = contains(var.proxied_records, each.key)
  }
}

resource "terraform_data" "dnssec" {
  triggers_replace = [local.zone_id]

  input = {
    zone_id   = local.zone_id
    status    = "active"
    algorithm = 13
    digest    = 2
  }
}
