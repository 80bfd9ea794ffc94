"""One plan operation for ``invoke plan``, ``invoke drift`` and ``invoke app-plan``.

A command builds a :class:`~tooling.engine.plan.request.PlanRequest` (what to plan),
the :class:`~tooling.engine.plan.request.PlanContext` of its repository (root,
settings, policy, model, tool environment: values, read once at the command's edge)
and claims the report folder; :func:`~tooling.engine.plan.operation.run_plan` plans
and writes the plan folder's own files, and returns a
:class:`~tooling.engine.plan.request.PlanOutcome` that the command shows (the report,
comment.md, drift.json, the drift issue) and turns into its exit code: OpenTofu's
command, operation and view.
"""
