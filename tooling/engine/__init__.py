"""What the command entry points share, one room per domain: the plan operation and its
steps (:mod:`.plan`), the apply mechanism (:mod:`.apply`), the app tier's runs
(:mod:`.apps`), what the workflows run between the tasks (:mod:`.ci`), the bump's pull
requests (:mod:`.bump`) and the rules enforced where Terragrunt and OpenTofu run
(:mod:`.rules`); below them all, the secret values a run knows and the one redaction
step (:mod:`.secrets`)."""
