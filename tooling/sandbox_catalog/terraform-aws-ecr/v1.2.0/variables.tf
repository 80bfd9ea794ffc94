# Sandbox stand-in for platform-modules/terraform-aws-ecr at v1.2.0.
# Mimics the real module's inputs, outputs and resource addresses with the
# built-in terraform_data resource only (no providers), so plans run offline.

variable "repositories" {
  description = "Names of the image repositories to create."
  type        = list(string)

  validation {
    condition     = alltrue([for name in var.repositories : can(regex("^[a-z0-9]+([._/-][a-z0-9]+)*$", name))])
    error_message = "Repository names must be lower-case ECR repository names."
  }

  validation {
    condition     = length(var.repositories) == length(distinct(var.repositories))
    error_message = "Repository names must be unique."
  }
}

variable "push_role_arn" {
  description = "ARN of the IAM role allowed to push images (typically the CI role)."
  type        = string

  validation {
    condition     = can(regex("^arn:aws[a-z-]*:iam::[0-9]{12}:role/.+$", var.push_role_arn))
    error_message = "The push_role_arn must be an IAM role ARN."
  }
}

variable "max_image_count" {
  description = "Number of tagged images kept per repository by the lifecycle policy."
  type        = number
  default     = 30
}
