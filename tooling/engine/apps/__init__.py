"""The application tier's runs: its folder read and checked, its backend override, its plan
and apply (:mod:`.runs`), and its rule where its ``tofu`` runs (:mod:`.verify`).
"""
