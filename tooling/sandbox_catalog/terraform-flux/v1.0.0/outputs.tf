# Sandbox stand-in for platform-modules/terraform-flux at v1.0.0.
# Mimics the real module's inputs, outputs and resource addresses with the
# built-in terraform_data resource only (no providers), so plans run offline.

output "flux_namespace" {
  description = "Namespace Flux runs in."
  value       = terraform_data.flux_install.input.namespace
}

output "kustomizations" {
  description = "Path in the GitOps repository of each Flux Kustomization, keyed by name."
  value       = { for name, k in terraform_data.kustomization : name => k.input.path }
}
