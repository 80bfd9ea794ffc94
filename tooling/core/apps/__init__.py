"""The per-application tier: its rules as data (app names, where its state lives, the
``tofu`` command lines, what its configuration and plan may not do: :mod:`.tier`) and its
rule where its ``tofu`` runs (:mod:`.verify`).
"""
