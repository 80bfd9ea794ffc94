# live/cluster/gitops: Flux, bootstrapped against the cluster, reconciling the
# GitOps repository. Reads the cluster endpoint from os and, across tiers, the
# DNS zone from live/cloud/dns.
include "root" {
  path = find_in_parent_folders("root.hcl")
}

include "tier" {
  path   = find_in_parent_folders("tier.hcl")
  expose = true
}

terraform {
  source = "git::https://git.example.com/platform-modules/terraform-flux.git?ref=v1.1.0"
}

dependency "os" {
  config_path = "../os"

  mock_outputs = {
    cluster_endpoint = "https://10.0.0.11:6443"
  }
  mock_outputs_allowed_terraform_commands = ["validate", "plan"]
}

dependency "dns" {
  config_path = "../../cloud/dns"

  mock_outputs = {
    zone_id = "mock-zone"
  }
  mock_outputs_allowed_terraform_commands = ["validate", "plan"]
}

inputs = {
  cluster_endpoint = dependency.os.outputs.cluster_endpoint
  dns_zone_id      = dependency.dns.outputs.zone_id
  repository_url   = "ssh://git@git.example.com/platform/gitops.git"
  path             = "clusters/home"
}
