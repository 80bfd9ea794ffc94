"""What the workflows run between the plan and apply: the CI matrix (:mod:`.matrix`), the
legs' plan folders merged (:mod:`.legs`), the executors' runners and their health
(:mod:`.runners`) and the one GitHub issue kept by a marker (:mod:`.issues`).
"""
