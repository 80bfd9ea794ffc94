"""The bump's repository side: one pull request per bump, converged (:mod:`.pull_requests`)."""
