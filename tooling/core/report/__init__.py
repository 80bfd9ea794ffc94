"""What reviewers read: the plan report (``comment.md`` and the terminal table,
:mod:`.comment`), its pieces outside the folds (:mod:`.review`), its split into a comment
and follow-ups (:mod:`.pages`), the drift report and issue (:mod:`.drift`) and the unit DAG
as a picture (:mod:`.graph`).
"""
