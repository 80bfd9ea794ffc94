"""What an apply decides and records: the one decision per unit of both tiers
(:mod:`.decision`), how old a plan may be (:mod:`.age`), whether an
approval still holds after a re-plan (:mod:`.approval`), what binds a saved plan to its
tree and its unit's state (:mod:`.binding`), encrypted plan files (:mod:`.encryption`),
the apply record and report (:mod:`.record`), what an apply that did not finish left
behind (:mod:`.statecheck`) and the audit trail (:mod:`.audit`).
"""
