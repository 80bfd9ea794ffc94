# Sandbox stand-in for platform-modules/terraform-cloudflare-dns at v1.2.0.
# Mimics the real module's inputs, outputs and resource addresses with the
# built-in terraform_data resource only (no providers), so plans run offline.

output "zone_id" {
  description = "ID of the zone (32 hex characters, like a Cloudflare zone ID)."
  value       = terraform_data.zone.input.id
}

output "record_fqdns" {
  description = "Fully qualified name of each record, keyed like the records input."
  value       = { for name, record in terraform_data.record : name => record.input.name }
}

output "dnssec_status" {
  description = "DNSSEC status of the zone."
  value       = terraform_data.dnssec.input.status
}
