"""What the command entry points share: the planners, preflight, working copies and their
hook, the rule's verifier, refusals, secrets, detection, the apply mechanism."""
