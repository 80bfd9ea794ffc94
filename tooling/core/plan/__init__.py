"""What a plan is made of, as pure decisions: the units a change affects (:mod:`.affected`),
the targets ``invoke plan`` plans (:mod:`.targets`), OpenTofu's plan read as typed values
(:mod:`.planjson`), how planning one unit ended (:mod:`.status`, :mod:`.results`, and the
planners' shared :mod:`.decisions`), its gate (:mod:`.gates`), Terragrunt's log split per
unit (:mod:`.runlog`), what fits in a process's environment (:mod:`.envsize`), the
attributes policy.toml declares sensitive (:mod:`.sensitive`), and summary.json as a typed
value (:mod:`.summary`, its fields checked as they are read: :mod:`.fields`).
"""
