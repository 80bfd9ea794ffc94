"""What every written, posted or printed text passes through: redaction (:mod:`.redact`),
escaping for Markdown (:mod:`.markdown`) and for a terminal (:mod:`.terminal`), and "did
you mean" (:mod:`.suggest`).
"""
