# Sandbox stand-in for platform-modules/terraform-aws-ecr at v1.1.0.
# Mimics the real module's inputs, outputs and resource addresses with the
# built-in terraform_data resource only (no providers), so plans run offline.

locals {
  account_id = "000000000000"
  region     = "us-east-1"
  registry   = "${local.account_id}.dkr.ecr.${local.region}.amazonaws.com"
}

resource "terraform_data" "repository" {
  for_each = toset(var.repositories)

  triggers_replace = [each.key]

  input = {
    name                 = each.key
    arn                  = "arn:aws:ecr:${local.region}:${local.account_id}:repository/${each.key}"
    url                  = "${local.registry}/${each.key}"
    image_tag_mutability = "MUTABLE"
    scan_on_push         = false
  }
}

resource "terraform_data" "repository_policy" {
  for_each = toset(var.repositories)

  input = {
    repository = each.key
    policy = jsonencode({
      Version = "2012-10-17"
      Statement = [{
        Sid       = "AllowPush"
        Effect    = "Allow"
        Principal = { AWS = var.push_role_arn }
        Action = [
          "ecr:BatchCheckLayerAvailability",
          "ecr:CompleteLayerUpload",
          "ecr:InitiateLayerUpload",
          "ecr:PutImage",
          "ecr:UploadLayerPart",
        ]
      }]
    })
  }
}

resource "terraform_data" "lifecycle_policy" {
  for_each = toset(var.repositories)

  input = {
    repository = each.key
    policy = jsonencode({
      rules = [
        {
          rulePriority = 1
          description  = "Expire untagged images after 7 days"
          selection    = { tagStatus = "untagged", countType = "sinceImagePushed", countUnit = "days", countNumber = 7 }
          action       = { type = "expire" }
        },
        {
          rulePriority = 2
          description  = "Keep the last ${var.max_image_count} tagged images"
          selection    = { tagStatus = "any", countType = "imageCountMoreThan", countNumber = var.max_image_count }
          action       = { type = "expire" }
        },
      ]
    })
  }
}
