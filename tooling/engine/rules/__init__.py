"""The rules enforced where Terragrunt and OpenTofu run: before any Terragrunt process
(:mod:`.before_terragrunt`, on every file Terragrunt will parse for the units in play,
:mod:`.inplay`; a stack's files before ``terragrunt stack generate``, :mod:`.stackscreen`),
the executor's preflight (:mod:`.preflight`), the verifier on each unit's static form
(:mod:`.verify`), the guard Terragrunt runs instead of OpenTofu, armed for the run
(:mod:`.execguard`: the point of execution), and the working copies made safe to plan in
(:mod:`.workcopies`).
"""
