# live/cloud/tier.hcl: facts about the cloud tier (DNS, IAM, registry), shared by
# every unit below this folder. Units include it with
# `include "tier" { path = find_in_parent_folders("tier.hcl"), expose = true }`;
# it holds locals only, so including it merges nothing else into the unit.
locals {
  tier = "cloud"
  # Runs on a hosted runner with federated identity (OIDC, no stored keys).
  executor = "hosted"
  # Default gate class for the units of this tier: auto | manual.
  gate = "auto"
  # Plans of this tier need only the read-only plan role, so they run on PRs.
  plan_on_pr = true
}
