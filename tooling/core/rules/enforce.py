"""The rule's verifier: a unit's static form, judged. Pure.

Input: the unit's static form (:func:`tooling.core.rules.static.static_units`: its
file and the files it reads merged, in the shape ``terragrunt render --format json``
prints; a literal is its value, anything computed stands as its expression), the
*declared* configuration (the root file and the allowlisted files: what they
declare for this unit), the unit's path and tier, the ``[check]`` policy, and the
text of the files the unit reads (only to name a ``file:line``). Output: the
violations. ``invoke check`` and the verifier before each unit's Terragrunt process
run the very same rules on the very same form, so check and plan never disagree.

Nothing here matches patterns in the configuration's text to decide: a
``generate`` block is allowed when it is one the root file declares, written the
same way; whatever computes a different set (a function, a heredoc, an include's
locals, a dependency's mock outputs) is refused because the sets differ. Where a
rule needs a value and the unit computes it, the expression never equals what is
allowed: refused, never guessed. What Terragrunt then hands to OpenTofu is the
guard's to check (docs/rules.md, "The point of execution").

Rules (docs/rules.md), each judged unit by unit (:func:`~tooling.core.rules.rule.each_unit`):
``enforce-generate``, ``enforce-state``, ``enforce-role``, ``enforce-errors``,
``enforce-mocks``, ``enforce-runtime`` (in ``invoke check`` and at the point of
execution), ``enforce-hooks`` (at the point of execution); ``enforce-env`` and
``enforce-args`` are :mod:`tooling.core.rules.passing`'s.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tooling.core.rules.rule import Rule, Stage, UnitFacts, UnitRender, each_unit
from tooling.core.rules.snapshot import Violation
from tooling.model.policy import CheckPolicy

#: the OpenTofu commands a dependency's mock outputs may stand in for: the ones known to
#: write neither state nor infrastructure (a mock value never reaches an apply, a destroy,
#: an import, a refresh or a state operation). Any other command, known or not, is refused.
MOCK_COMMANDS = (
    "init",
    "validate",
    "plan",
    "show",
    "output",
    "providers",
    "graph",
    "fmt",
    "get",
    "version",
)
#: the attributes that make Terragrunt run OpenTofu as another identity
ROLE_ATTRS = (
    "iam_role",
    "iam_assume_role_session_name",
    "iam_web_identity_token",
    "iam_assume_role_duration",
)
#: command-line arguments that move a unit's state or working directory
_STATE_ARGS = (
    "-backend-config",
    "-backend",
    "-state",
    "-state-out",
    "-backup",
    "-reconfigure",
    "-migrate-state",
    "-force-copy",
    "-chdir",
    "-lock",
)
#: environment prefixes that change how OpenTofu/Terragrunt run (state, data dir, arguments)
TOOL_ENV = ("TF_", "TG_", "TERRAGRUNT_", "TOFU_")
#: environment prefixes that change the identity OpenTofu's providers use
IDENTITY_ENV = ("AWS_", "GOOGLE_", "CLOUDSDK_", "ARM_", "AZURE_", "VAULT_")
#: generate fields compared with the declared block (what lands on disk, and how)
_GENERATE_FIELDS = (
    "path",
    "if_exists",
    "if_disabled",
    "comment_prefix",
    "contents",
    "disable_signature",
    "disable",
)

GENERATE_FIX = (
    "remove the block: only {root} (or a file [check.allowed_generate] in policy.toml lists) "
    "generates files, with the contents it declares; put resources in a module pinned by tag"
)


def where(facts: UnitFacts, *needles: str) -> tuple[str, int]:
    """The first ``file:line`` of the unit's files (the unit first) holding one of ``needles``
    (literal text, to *name* the place of a finding, never to decide one)."""
    sources = dict(facts.sources or {})
    order = [facts.unit_file, *sorted(p for p in sources if p != facts.unit_file)]
    for path in order:
        text = sources.get(path)
        if text is None:
            continue
        for needle in needles:
            at = text.find(needle)
            if at >= 0:
                return path, text.count("\n", 0, at) + 1
    return facts.unit_file, 1


def violation(
    facts: UnitFacts, needles: Sequence[str], rule: str, message: str, fix: str
) -> Violation:
    file, line = where(facts, *needles)
    return Violation(file, line, rule, message, fix)


def present(value: Any) -> bool:
    return value not in (None, "", [], {}, 0, False)


# --------------------------------------------------------------------------- generate


def _generates(rendered: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    raw = rendered.get("generate") or {}
    out: dict[str, dict[str, Any]] = {}
    if isinstance(raw, Mapping):
        for name, block in raw.items():
            if isinstance(block, Mapping):
                out[str(name)] = {k: block.get(k) for k in _GENERATE_FIELDS}
    return out


def check_generate(unit: UnitRender, policy: CheckPolicy) -> list[Violation]:
    """The generate set equals the declared set: same names, and per name the same path,
    mode and contents (a disabled declared block may stay disabled)."""
    rendered, declared, facts = unit.rendered, unit.declared, unit.facts
    out: list[Violation] = []
    mine, theirs = _generates(rendered), _generates(declared)
    fix = GENERATE_FIX.format(root=facts.root_file)
    for name in sorted(set(mine) | set(theirs)):
        got, want = mine.get(name), theirs.get(name)
        needles = (f'generate "{name}"', "generate")
        if got is None:
            if want is not None and want.get("disable") is not True:
                out.append(
                    violation(
                        facts,
                        ("merge_strategy", "include"),
                        "enforce-generate",
                        f"the unit drops the generate {name!r} block {facts.root_file} declares "
                        f"(it writes {want.get('path')!r}: without it OpenTofu keeps another state)",
                        f'include {facts.root_file} with its blocks (no merge_strategy = "no_merge")',
                    )
                )
            continue
        if want is None:
            if got.get("disable") is True:
                continue
            out.append(
                violation(
                    facts,
                    needles,
                    "enforce-generate",
                    f"generate {name!r} writes {got.get('path')!r}, which {facts.root_file} does not declare "
                    "(Terragrunt would add it to the module's code)",
                    fix,
                )
            )
            continue
        changed = [k for k in _GENERATE_FIELDS if got.get(k) != want.get(k)]
        if changed:
            out.append(
                violation(
                    facts,
                    needles,
                    "enforce-generate",
                    f"generate {name!r} differs from the one {facts.root_file} declares for this unit "
                    f"({', '.join(changed)})",
                    fix,
                )
            )
    return out


# --------------------------------------------------------------------------- state


def state_arg(arg: str) -> bool:
    name = arg.split("=", 1)[0]
    return name in _STATE_ARGS


def check_state(unit: UnitRender, policy: CheckPolicy) -> list[Violation]:
    """The state OpenTofu uses is the one the root file declares for the unit: no other
    ``remote_state``, no ``-backend-config``/``-state`` arguments (``TF_*`` variables:
    :mod:`tooling.core.rules.passing`)."""
    rendered, declared, facts = unit.rendered, unit.declared, unit.facts
    out: list[Violation] = []
    mine, theirs = rendered.get("remote_state"), declared.get("remote_state")
    if present(mine) and mine != theirs:
        backend = mine.get("backend") if isinstance(mine, Mapping) else None
        out.append(
            violation(
                facts,
                ("remote_state",),
                "enforce-state",
                f"remote_state (backend {backend!r}) differs from what {facts.root_file} declares: "
                "the unit can be planned against another unit's state",
                f"remove the unit's remote_state; {facts.root_file} keys the state by the unit's path",
            )
        )
    terraform = rendered.get("terraform") or {}
    extra = terraform.get("extra_arguments") if isinstance(terraform, Mapping) else None
    declared_tf = declared.get("terraform") or {}
    declared_extra = (
        declared_tf.get("extra_arguments") if isinstance(declared_tf, Mapping) else None
    ) or {}
    for name, block in sorted((extra or {}).items()):
        if not isinstance(block, Mapping) or declared_extra.get(name) == block:
            continue
        args = block.get("arguments")
        for arg in args if isinstance(args, list) else []:
            if isinstance(arg, str) and state_arg(arg):
                out.append(
                    violation(
                        facts,
                        (arg.split("=", 1)[0], f'extra_arguments "{name}"'),
                        "enforce-state",
                        f'extra_arguments "{name}" passes {arg.split("=", 1)[0]}: OpenTofu would use '
                        "another backend, state file or working directory than the unit's own",
                        f"remove the argument; {facts.root_file} keys the state by the unit's path",
                    )
                )
    return out


# --------------------------------------------------------------------------- roles


def allowed_role(policy: CheckPolicy, tier: str, role: str) -> str | None:
    """The reason ``[check.allowed_roles.TIER]`` gives for ``role``, or None."""
    for pattern, reason in (policy.allowed_roles.get(tier) or {}).items():
        if fnmatch.fnmatchcase(role, pattern):
            return reason
    return None


def role_of(rendered: Mapping[str, Any]) -> str | None:
    """The role Terragrunt assumes before running OpenTofu for the unit (None: the executor's own)."""
    role = rendered.get("iam_role")
    return role if isinstance(role, str) and role else None


def check_roles(unit: UnitRender, policy: CheckPolicy) -> list[Violation]:
    """``iam_*`` attributes only with a role ``[check.allowed_roles.TIER]`` lists for the tier."""
    rendered, declared, facts = unit.rendered, unit.declared, unit.facts
    out: list[Violation] = []
    role = role_of(rendered)
    reason = allowed_role(policy, facts.tier, role) if role else None
    fix = (
        f"remove it, or list the role under [check.allowed_roles.{facts.tier}] in policy.toml "
        "with the reason (the executor's identity is what its preflight checks)"
    )
    for attr in ROLE_ATTRS:
        value = rendered.get(attr)
        if not present(value) or value == declared.get(attr):
            continue
        if attr == "iam_role" and reason is not None:
            continue
        if attr != "iam_role" and role is not None and reason is not None:
            continue  # the settings of an allowlisted role
        shown = value if attr == "iam_role" else "(set)"
        out.append(
            violation(
                facts,
                (attr,),
                "enforce-role",
                f"{attr} {shown}: Terragrunt would run OpenTofu as another identity than the executor's",
                fix,
            )
        )
    return out


# --------------------------------------------------------------------------- errors, mocks, runtime


def check_errors(unit: UnitRender, policy: CheckPolicy) -> list[Violation]:
    """No ``errors`` block (retry, ignore) unless ``[check.allowed_errors]`` lists the unit."""
    rendered, declared, facts = unit.rendered, unit.declared, unit.facts
    errors = rendered.get("errors")
    if not present(errors) or errors == declared.get("errors"):
        return []
    if not isinstance(errors, Mapping) or not any(present(v) for v in errors.values()):
        return []
    if any(fnmatch.fnmatchcase(facts.path, p) for p in policy.allowed_errors):
        return []
    kinds = ", ".join(sorted(k for k, v in errors.items() if present(v)))
    return [
        violation(
            facts,
            ("errors {", "errors{", "errors"),
            "enforce-errors",
            f"an errors block ({kinds}): Terragrunt would retry or ignore OpenTofu's errors, "
            "and a failed apply could look applied",
            "remove it, or list the unit under [check.allowed_errors] in policy.toml with the reason",
        )
    ]


def check_mocks(unit: UnitRender, policy: CheckPolicy) -> list[Violation]:
    """Mock outputs stand in for read-only commands only (``MOCK_COMMANDS``: ``init``,
    ``validate``, ``plan``...), never apply, destroy, import, refresh, state, force-unlock..."""
    rendered, facts = unit.rendered, unit.facts
    out: list[Violation] = []
    deps = rendered.get("dependency") or {}
    for name, dep in sorted(deps.items() if isinstance(deps, Mapping) else []):
        if not isinstance(dep, Mapping) or dep.get("mock_outputs") is None:
            continue
        allowed = dep.get("mock_outputs_allowed_terraform_commands")
        extra = (
            sorted({str(c) for c in allowed} - set(MOCK_COMMANDS))
            if isinstance(allowed, list) and allowed
            else ["every command (no mock_outputs_allowed_terraform_commands)"]
        )
        if extra:
            out.append(
                violation(
                    facts,
                    (f'dependency "{name}"', "mock_outputs_allowed_terraform_commands"),
                    "enforce-mocks",
                    f"dependency {name!r} allows its mock outputs for {', '.join(extra)}: "
                    "a mock value could be applied (only read-only commands may use mocks: "
                    f"{', '.join(MOCK_COMMANDS)})",
                    f'set mock_outputs_allowed_terraform_commands = ["validate", "plan"] in dependency "{name}"',
                )
            )
    return out


def check_runtime(unit: UnitRender, policy: CheckPolicy) -> list[Violation]:
    """OpenTofu is the pinned binary, run in Terragrunt's own cache: no ``terraform_binary``,
    ``download_dir`` or ``engine`` other than the root file's."""
    rendered, declared, facts = unit.rendered, unit.declared, unit.facts
    out: list[Violation] = []
    for attr, why in (
        ("terraform_binary", "another program would run instead of the pinned OpenTofu"),
        ("download_dir", "the working copy would live outside the unit's own cache"),
        ("engine", "an engine plugin would run OpenTofu"),
    ):
        value = rendered.get(attr)
        if present(value) and value != declared.get(attr):
            out.append(
                violation(
                    facts,
                    (attr,),
                    "enforce-runtime",
                    f"{attr} is set: {why}",
                    "remove it; the pinned tools come from .tool-versions (`invoke setup`)",
                )
            )
    return out


_HOOK_KINDS = ("before_hook", "after_hook", "error_hook")


def check_hooks(unit: UnitRender, policy: CheckPolicy) -> list[Violation]:
    """The unit runs exactly the hooks the root file declares for it (the working-copy
    check): a hook of its own runs any program on the runner, around OpenTofu. A unit
    one of whose files ``[check.allowed_run_at_parse]`` lists may run its hooks."""
    rendered, declared, facts = unit.rendered, unit.declared, unit.facts
    files = [facts.unit_file, *(facts.sources or {})]
    if any(fnmatch.fnmatchcase(f, p) for f in files for p in policy.allowed_run_at_parse):
        return []
    out: list[Violation] = []
    mine = rendered.get("terraform") if isinstance(rendered.get("terraform"), Mapping) else {}
    theirs = declared.get("terraform") if isinstance(declared.get("terraform"), Mapping) else {}
    for kind in _HOOK_KINDS:
        got = (mine or {}).get(kind) or {}
        want = (theirs or {}).get(kind) or {}
        if not isinstance(got, Mapping) or not isinstance(want, Mapping):
            continue
        for name in sorted(got):
            if got[name] == want.get(name):
                continue
            what = "differs from the one" if name in want else "is not one"
            out.append(
                violation(
                    facts,
                    (f'{kind} "{name}"', kind),
                    "enforce-hooks",
                    f"{kind} {name!r} {what} {facts.root_file} declares: Terragrunt would run "
                    f"{got[name].get('execute') if isinstance(got[name], Mapping) else '?'} on the "
                    "runner around OpenTofu",
                    f"remove the hook; units run no hooks ({facts.root_file}'s working-copy check aside)",
                )
            )
    return out


def refusal(path: str, violations: Iterable[Violation]) -> str:
    """The one-line-per-violation message a refused unit carries in the report."""
    found = list(violations)
    rules = ", ".join(sorted({v.rule for v in found}))
    return f"refused: {path} breaks the rule ({rules}):\n" + "\n".join(str(v) for v in found)


#: in ``invoke check`` on each unit's static form, where OpenTofu runs on its render
BOTH_STAGES = {Stage.CHECK: "yes (static form)", Stage.AT_EXECUTION: "yes (static form)"}


def at_execution(guard: str) -> dict[Stage, str]:
    """The docs' table for a rule judged on each unit's static form (in ``invoke check``
    and before the unit's Terragrunt process) that the guard backs with ``guard``."""
    return {Stage.CHECK: "yes (static form)", Stage.AT_EXECUTION: f"yes (static form); {guard}"}


GENERATE = Rule(
    name="enforce-generate",
    ids=("enforce-generate",),
    summary="the unit generates exactly the files the root file declares for it",
    stages=Stage.CHECK | Stage.AT_EXECUTION,
    check=each_unit(check_generate),
    notes=at_execution("the guard: the generated files' contents (`working-copy`)"),
)
STATE = Rule(
    name="enforce-state",
    ids=("enforce-state",),
    summary="the unit's state is the one the root file declares: no other backend, no state arguments",
    stages=Stage.CHECK | Stage.AT_EXECUTION,
    check=each_unit(check_state),
    notes=at_execution("the guard: `exec-backend`, `exec-args`, `exec-env`"),
)
ROLE = Rule(
    name="enforce-role",
    ids=("enforce-role",),
    summary="`iam_*` only with a role `[check.allowed_roles.TIER]` lists",
    stages=Stage.CHECK | Stage.AT_EXECUTION,
    check=each_unit(check_roles),
    notes=at_execution("the guard: a role's credentials in OpenTofu's environment (`exec-env`)"),
)
ERRORS = Rule(
    name="enforce-errors",
    ids=("enforce-errors",),
    summary="no `errors` block unless `[check.allowed_errors]` lists the unit",
    stages=Stage.CHECK | Stage.AT_EXECUTION,
    check=each_unit(check_errors),
    notes=BOTH_STAGES,
)
MOCKS = Rule(
    name="enforce-mocks",
    ids=("enforce-mocks",),
    summary="mock outputs stand in for read-only commands only",
    stages=Stage.CHECK | Stage.AT_EXECUTION,
    check=each_unit(check_mocks),
    notes=BOTH_STAGES,
)
RUNTIME = Rule(
    name="enforce-runtime",
    ids=("enforce-runtime",),
    summary="no `terraform_binary`, `download_dir` or `engine` but the root file's",
    stages=Stage.CHECK | Stage.AT_EXECUTION,
    check=each_unit(check_runtime),
    notes=at_execution(
        "the guard: `terraform_binary` cannot replace it (`TG_TF_PATH` wins), a `download_dir` copy is refused (`exec-run`)"
    ),
)
HOOKS = Rule(
    name="enforce-hooks",
    ids=("enforce-hooks",),
    summary="the unit runs exactly the hooks the root file declares (its working-copy check)",
    stages=Stage.AT_EXECUTION,
    check=each_unit(check_hooks),
    notes={Stage.CHECK: "as `run-at-parse`", Stage.AT_EXECUTION: "yes (static form)"},
)
