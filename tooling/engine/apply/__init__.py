"""The apply mechanism: the walk over the reviewed plans (:mod:`.applier`), its guards around
state (:mod:`.safety`) and the audit trail it writes (:mod:`.audit`).
"""
