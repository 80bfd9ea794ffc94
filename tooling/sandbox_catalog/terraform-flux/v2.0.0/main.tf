# Sandbox stand-in for platform-modules/terraform-flux at v2.0.0.
# Mimics the real module's inputs, outputs and resource addresses with the
# built-in terraform_data resource only (no providers), so plans run offline.

locals {
  namespace   = "flux-system"
  source_name = "flux-system"
  # Since v2.0.0 the deploy key lives in its own secret.
  secret_name = "flux-system-deploy-key"

  kustomizations = {
    apps           = { path = "${var.path}/apps" }
    infrastructure = { path = "${var.path}/infrastructure" }
  }
}

resource "terraform_data" "flux_install" {
  triggers_replace = [var.cluster_endpoint, local.namespace]

  input = {
    cluster_endpoint = var.cluster_endpoint
    namespace        = local.namespace
    version          = "v2.5.1"
    components = [
      "source-controller",
      "kustomize-controller",
      "helm-controller",
      "notification-controller",
    ]
  }
}

resource "terraform_data" "git_source" {
  triggers_replace = [var.repository_url, local.secret_name]

  input = {
    name      = local.source_name
    namespace = terraform_data.flux_install.input.namespace
    url       = var.repository_url
    ref       = { branch = var.branch }
    secret    = local.secret_name
    interval  = "1m"
  }
}

resource "terraform_data" "kustomization" {
  for_each = local.kustomizations

  input = {
    name      = each.key
    namespace = local.namespace
    source    = "GitRepository/${local.source_name}"
    path      = each.value.path
    prune     = true
    interval  = "10m"
    post_build = {
      substitute = { DNS_ZONE_ID = var.dns_zone_id }
    }
  }

  depends_on = [terraform_data.git_source]
}
