# Sandbox stand-in for platform-modules/terraform-aws-iam//modules/github-oidc-roles at v1.1.0.
# Mimics the real module's inputs, outputs and resource addresses with the
# built-in terraform_data resource only (no providers), so plans run offline.

variable "github_org" {
  description = "GitHub organisation whose repositories may assume the roles."
  type        = string

  validation {
    condition     = can(regex("^[A-Za-z0-9][A-Za-z0-9-]{0,38}$", var.github_org))
    error_message = "The github_org must be a valid GitHub organisation name."
  }
}

variable "roles" {
  description = "Roles to create, keyed by role name: the repository (in github_org) allowed to assume it, the OIDC subject suffix after repo:<org>/<repository>: (e.g. pull_request, environment:production, ref:refs/heads/main) and the name of the policy to attach."
  type = map(object({
    repository = string
    subject    = string
    policy     = string
  }))

  validation {
    condition     = alltrue([for name in keys(var.roles) : can(regex("^[A-Za-z0-9+=,.@_-]{1,64}$", name))])
    error_message = "Role names (keys of roles) must be valid IAM role names."
  }
}

variable "bootstrap_token" {
  description = "One-time bootstrap token the CI token is minted from. Never shown in plans or logs."
  type        = string
  sensitive   = true
}
