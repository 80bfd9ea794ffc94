# apps/shop/backend.hcl: the shop app's backend (tofu init -backend-config=backend.hcl);
# the bucket comes from the pipeline (IAC_STATE_BUCKET), so only the key decides
key    = "live/cloud/dns/terraform.tfstate"
region = "us-east-1"
