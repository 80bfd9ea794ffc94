"""The rule that prevents disasters, as checks. Pure.

"The two tiers never point at the same layer or state; every layer has its own
state key; units hold configuration only, pinned to immutable module
versions; bootstrap/ never runs in CI; the tools are pinned once." Each rule is
a :class:`~tooling.core.rules.rule.Rule`: the rule ids it reports, where it runs
(``invoke check``, before Terragrunt starts, where OpenTofu runs) and its check, a
function of one :class:`~tooling.core.rules.rule.Context` (the policy, the files,
the model, the app workspaces, each unit's configuration) returning
:class:`~tooling.core.rules.snapshot.Violation` values. Nothing here starts a
process or touches the disk: the callers gather the inputs and print the results.

- :mod:`.rule`: the interface (:class:`Rule`, :class:`Stage`, :class:`Context`);
- :mod:`.registry`: every rule, listed once (``RULES``), the one loop each stage runs
  (``run``), and docs/rules.md's table of where each rule is enforced;
- :mod:`.snapshot`: what the rules read and return (files, violations, app workspaces);
- one module per family: :mod:`.readable`, :mod:`.state`, :mod:`.config_only`,
  :mod:`.pins`, :mod:`.layers`, :mod:`.facts`, :mod:`.bootstrap`, :mod:`.tool_pins`,
  :mod:`.review_gaps` (what a reviewer would miss: unit names, generated backends, computed
  refs, commands run while parsing) and :mod:`.enforce` (the verifier's rules: a unit's
  configuration as Terragrunt resolves it, against what the root file declares; in
  ``invoke check`` on each unit's static form, :mod:`.static`);
- what Terragrunt parses for the units in play (:mod:`.parsed`), which the rules before
  any Terragrunt process read whole (:mod:`.closure`: and which must stay inside the
  repository);
- the rules other rooms enforce too: unit folder names (:mod:`.names`), the working
  copy (:mod:`.workcopy`), and what the guard allows each unit's OpenTofu to run with
  at the point of execution (:mod:`.execpoint`).

The ``[check]`` settings the rules read are :class:`tooling.model.policy.CheckPolicy`. Every
violation names ``file:line``, the rule it breaks and how to fix it; docs/rules.md
explains each rule id, and how to add a rule.
"""
