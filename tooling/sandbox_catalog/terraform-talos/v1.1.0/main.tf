# Sandbox stand-in for platform-modules/terraform-talos at v1.1.0.
# Mimics the real module's inputs, outputs and resource addresses with the
# built-in terraform_data resource only (no providers), so plans run offline.

locals {
  bootstrap_node   = sort(keys(var.node_ips))[0]
  cluster_endpoint = "https://${var.node_ips[local.bootstrap_node]}:6443"
}

resource "terraform_data" "machine_secrets" {
  triggers_replace = [var.cluster_name]

  input = {
    cluster_name = var.cluster_name
  }
}

resource "terraform_data" "machine_config" {
  for_each = var.node_ips

  triggers_replace = [each.key, each.value]

  input = {
    cluster_name     = var.cluster_name
    cluster_endpoint = local.cluster_endpoint
    node             = each.key
    ip               = each.value
    machine_type     = "controlplane"
    talos_version    = var.talos_version
    install_disk     = "/dev/sda"
    config_patches = {
      allow_scheduling_on_control_planes = false
    }
  }
}

resource "terraform_data" "bootstrap" {
  triggers_replace = [var.cluster_name]

  input = {
    node     = local.bootstrap_node
    endpoint = var.node_ips[local.bootstrap_node]
  }

  depends_on = [terraform_data.machine_secrets, terraform_data.machine_config]
}

resource "terraform_data" "cluster_health" {
  input = {
    endpoint            = local.cluster_endpoint
    control_plane_nodes = sort(values(var.node_ips))
    timeout             = "10m"
  }

  depends_on = [terraform_data.bootstrap]
}
