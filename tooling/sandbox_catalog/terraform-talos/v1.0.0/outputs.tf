# Sandbox stand-in for platform-modules/terraform-talos at v1.0.0.
# Mimics the real module's inputs, outputs and resource addresses with the
# built-in terraform_data resource only (no providers), so plans run offline.

output "cluster_endpoint" {
  description = "Kubernetes API endpoint (https://<first node ip>:6443)."
  value       = local.cluster_endpoint
}

output "kubeconfig" {
  description = "Admin kubeconfig for the cluster."
  sensitive   = true
  value = yamlencode({
    apiVersion = "v1"
    kind       = "Config"
    clusters = [{
      name    = var.cluster_name
      cluster = { server = local.cluster_endpoint, "certificate-authority-data" = base64encode("sandbox-ca:${var.cluster_name}") }
    }]
    users = [{
      name = "admin@${var.cluster_name}"
      user = { token = sha256("sandbox-admin:${var.cluster_name}:${local.cluster_endpoint}") }
    }]
    contexts = [{
      name    = "admin@${var.cluster_name}"
      context = { cluster = var.cluster_name, user = "admin@${var.cluster_name}" }
    }]
    "current-context" = "admin@${var.cluster_name}"
  })
}
