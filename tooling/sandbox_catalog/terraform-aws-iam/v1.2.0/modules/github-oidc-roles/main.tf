# Sandbox stand-in for platform-modules/terraform-aws-iam//modules/github-oidc-roles at v1.2.0.
# Mimics the real module's inputs, outputs and resource addresses with the
# built-in terraform_data resource only (no providers), so plans run offline.

locals {
  account_id = "000000000000"
  oidc_host  = "token.actions.githubusercontent.com"
  audience   = "sts.amazonaws.com"

  # AWS managed policies are referenced by name; anything else is a customer policy.
  aws_managed_policies = ["AdministratorAccess", "PowerUserAccess", "ReadOnlyAccess", "ViewOnlyAccess"]
  policy_arns = {
    for name, role in var.roles : name => contains(local.aws_managed_policies, role.policy) ? "arn:aws:iam::aws:policy/${role.policy}" : "arn:aws:iam::${local.account_id}:policy/${role.policy}"
  }

  boundary_name = "${var.github_org}-ci-boundary"
}

resource "terraform_data" "oidc_provider" {
  triggers_replace = ["https://${local.oidc_host}"]

  input = {
    arn            = "arn:aws:iam::${local.account_id}:oidc-provider/${local.oidc_host}"
    url            = "https://${local.oidc_host}"
    client_id_list = [local.audience]
  }
}

resource "terraform_data" "role" {
  for_each = var.roles

  triggers_replace = [each.key]

  input = {
    name = each.key
    arn  = "arn:aws:iam::${local.account_id}:role/${each.key}"
    assume_role_policy = jsonencode({
      Version = "2012-10-17"
      Statement = [{
        Effect    = "Allow"
        Action    = "sts:AssumeRoleWithWebIdentity"
        Principal = { Federated = "arn:aws:iam::${local.account_id}:oidc-provider/${local.oidc_host}" }
        Condition = {
          StringEquals = { "${local.oidc_host}:aud" = local.audience }
          StringLike   = { "${local.oidc_host}:sub" = "repo:${var.github_org}/${each.value.repository}:${each.value.subject}" }
        }
      }]
    })
    policy_arn           = local.policy_arns[each.key]
    max_session_duration = 3600
    permissions_boundary = "arn:aws:iam::${local.account_id}:policy/${local.boundary_name}"
  }
}

resource "terraform_data" "permissions_boundary" {
  triggers_replace = [local.boundary_name]

  input = {
    name = local.boundary_name
    arn  = "arn:aws:iam::${local.account_id}:policy/${local.boundary_name}"
    policy = jsonencode({
      Version = "2012-10-17"
      Statement = [
        { Effect = "Allow", Action = "*", Resource = "*" },
        { Effect = "Deny", Action = ["iam:CreateAccessKey", "iam:CreateUser", "organizations:*"], Resource = "*" },
      ]
    })
  }
}

# Token the pipeline uses to register runners; minted from the bootstrap token.
resource "terraform_data" "ci_token" {
  input = "ghs_${substr(sha256("${var.github_org}:${var.bootstrap_token}"), 0, 36)}"
}
