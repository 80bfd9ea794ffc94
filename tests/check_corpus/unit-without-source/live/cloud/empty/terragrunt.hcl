# live/cloud/empty: no terraform.source, so it would run whatever code sits in the folder.
include "root" {
  path = find_in_parent_folders("root.hcl")
}

include "tier" {
  path   = find_in_parent_folders("tier.hcl")
  expose = true
}
