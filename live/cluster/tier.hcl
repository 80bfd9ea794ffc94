# live/cluster/tier.hcl: facts about the cluster tier (network, VMs, OS config,
# GitOps), shared by every unit below this folder. Units include it with
# `include "tier" { path = find_in_parent_folders("tier.hcl"), expose = true }`;
# it holds locals only, so including it merges nothing else into the unit.
locals {
  tier = "cluster"
  # Runs on the self-hosted runner inside the home network; secrets come from
  # the vault at job time.
  executor   = "lan"
  gate       = "auto"
  plan_on_pr = true
}
