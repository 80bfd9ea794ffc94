"""The CI side: the executors declared in policy.toml and the matrix per executor
(:mod:`.executors`), an executor's units split over legs (:mod:`.split`), a leg's units
and the legs' reports merged (:mod:`.legs`), the workflows' steps between the tasks
(:mod:`.steps`) and the executors' runners (:mod:`.runners`).
"""
