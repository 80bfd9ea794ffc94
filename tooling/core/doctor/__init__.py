"""What a repository needs to adopt the tooling: the ``[layout]`` its files suggest
(:mod:`.layout`, ``invoke doctor``) and the model against Terragrunt's own view
(:mod:`.crosscheck`, ``invoke crosscheck``).
"""
