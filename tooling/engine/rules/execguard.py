"""The point of execution, armed for a run: Terragrunt runs the guard instead of OpenTofu.

The guard (``tooling/guard``, :mod:`tooling.io.guardbin`) checks, right before each
OpenTofu command Terragrunt starts, the arguments, the environment, the working copy
and the backend OpenTofu recorded after init, then replaces itself with the pinned
OpenTofu (docs/rules.md, "The point of execution"). :func:`armed` works out what each
unit of the run may run with (:mod:`tooling.core.rules.execpoint`): its working copy (the
module's files at the commit its tag names, the root file's generated files), its
module's own variables, the backend the root file declares for it, whether it may
assume a role; for the units it reads outputs from too, since Terragrunt runs OpenTofu
in their working copies. It writes that into a folder of its own beside the guard and
returns the environment whose ``TG_TF_PATH`` names it: with that variable set,
Terragrunt 1.1.3 runs it whatever a unit's ``terraform_binary`` says.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tooling.core.ci import executors
from tooling.core.rules import execpoint
from tooling.core.rules.enforce import role_of
from tooling.core.rules.execpoint import Backend, GuardedUnit
from tooling.core.rules.rule import UnitRender
from tooling.core.rules.workcopy import Expected
from tooling.engine.rules import preflight, verify, workcopies
from tooling.engine.rules.verify import shown_role
from tooling.errors import ToolingError
from tooling.io import guardbin, tags
from tooling.model.policy import Executor, Policy
from tooling.model.sources import parse_source, remote_url
from tooling.model.units import Model

#: Terragrunt's variable naming the OpenTofu it runs (a unit cannot set it: its
#: ``env_vars`` reach OpenTofu's environment, not Terragrunt's)
TF_PATH_ENV = "TG_TF_PATH"
#: the variables of the working-copy hook root.hcl declared before the guard checked the
#: working copy: never set now (a root file that still declares the hook runs ``true``)
OLD_HOOK_ENV = ("IAC_WORKCOPY_HOOK", "IAC_WORKCOPY_MARK")
#: the AWS credentials Terragrunt sets in OpenTofu's environment after assuming a role
CREDENTIALS = frozenset(
    {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"}
)
#: a module's variables, kept per commit and module folder in its mirror
VARIABLES = "iac-variables"


def _real(program: str, env: Mapping[str, str]) -> str:
    found = shutil.which(program, path=env.get("PATH") or os.environ.get("PATH"))
    if found is None:
        raise ToolingError(f"{program}: not found on PATH. Run `invoke setup`.")
    return os.path.realpath(found)


def _files_of(folder: Path) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    with contextlib.suppress(OSError):
        for entry in folder.iterdir():
            if entry.is_file():
                out[entry.name] = entry.read_bytes()
    return out


def _git_variables(repo: Path, commit: str, tree: Mapping[str, str], subdir: str) -> frozenset[str]:
    """The variables of the module folder ``subdir`` at ``commit``, kept in the mirror."""
    key = hashlib.sha256(subdir.encode()).hexdigest()[:12]
    kept = repo / VARIABLES / f"{commit}-{key}.json"
    with contextlib.suppress(OSError, ValueError):
        return frozenset(json.loads(kept.read_text(encoding="utf-8")))
    paths = execpoint.module_folder_files(tree, subdir)
    blobs = tags.blobs_of(repo, [tree[p] for p in paths])
    found = execpoint.variables_in(
        {p.rsplit("/", 1)[-1]: blobs[tree[p]] for p in paths if tree[p] in blobs}
    )
    with contextlib.suppress(OSError):
        kept.parent.mkdir(parents=True, exist_ok=True)
        tmp = kept.with_name(f".{kept.name}.{os.getpid()}")
        tmp.write_text(json.dumps(sorted(found)), encoding="utf-8")
        os.replace(tmp, kept)
    return found


def module_variables(
    expected: Expected, unit_dir: Path, source: str | None, repos: workcopies.Repos
) -> frozenset[str]:
    """The module's own variables (the only ``TF_VAR_`` names a unit may set)."""
    if expected.error is not None:
        return frozenset()
    if source is None:
        return execpoint.variables_in(_files_of(unit_dir))
    parsed = parse_source(source)
    if parsed.kind == "local":
        folder, sub = workcopies.split_local(source, unit_dir)
        return execpoint.variables_in(_files_of(folder / sub if sub else folder))
    url = remote_url(parsed)
    if url is None or expected.commit is None or url not in repos.listed:
        return frozenset()
    repo = repos.listed[url][0]
    tree = tags.tree_of(repo, expected.commit) or {}
    return _git_variables(repo, expected.commit, tree, expected.subdir)


def closure(
    units: Iterable[tuple[str, Path, str | None]],
    model: Model,
    models: Mapping[Path, Model] | None = None,
) -> list[tuple[str, Path, str | None]]:
    """``units`` and every unit they read outputs from, directly or through others (in
    their working copies Terragrunt runs ``init`` and ``output``), each once per checkout:
    a unit's dependencies are those of the model of its own checkout (``models``: per
    checkout root other than the working tree's, such as the base revision's a deleted
    unit is planned in; ``model`` for the rest)."""
    out: dict[tuple[Path, str], tuple[str, Path, str | None]] = {}
    for path, run_dir, source in units:
        out.setdefault((verify.repo_root(run_dir, path), path), (path, run_dir, source))
    for (root, path), _unit in list(out.items()):
        known = (models or {}).get(root, model)
        if path not in known.units:
            continue
        for dep in sorted(known.upstream(path)):
            unit = known.units.get(dep)
            if unit is not None and (root, dep) not in out:
                out[(root, dep)] = (dep, root / dep, unit.source)
    return list(out.values())


def _identity(
    path: str, tier: str, form: UnitRender | None, policy: Policy, executor: Executor | None
) -> bool:
    """Whether the unit assumes a role it may run as (the preflight's rule: the executor's
    own, or one ``[check.allowed_roles.TIER]`` lists): only then may the AWS credentials
    Terragrunt sets after assuming it reach OpenTofu."""
    role = shown_role(role_of(form.rendered)) if form is not None else None
    if role is None or form is None or _names_credentials(form):
        return False
    return not preflight.role_problems([(path, tier, role)], executor, policy.check)


def _names_credentials(form: UnitRender) -> bool:
    """Whether the unit's own ``env_vars`` (its static form's ``extra_arguments``) name an
    AWS credential variable, or are not known statically: then the credentials in
    OpenTofu's environment may be the unit's, not the assumed role's."""
    terraform = form.rendered.get("terraform")
    extra = terraform.get("extra_arguments") if isinstance(terraform, Mapping) else None
    for block in extra.values() if isinstance(extra, Mapping) else ():
        env_vars = block.get("env_vars") if isinstance(block, Mapping) else None
        if env_vars is None:
            continue
        if not isinstance(env_vars, Mapping):
            return True  # computed: what it sets is known only when Terragrunt runs
        if any(str(k).upper() in CREDENTIALS for k in env_vars):
            return True
    return False


def _executor(policy: Policy) -> Executor | None:
    """The executor this job runs as (``IAC_EXECUTOR``, read where the preflight reads it;
    None: unset or unknown, so only an allowlisted role counts)."""
    name = os.environ.get(preflight.ENV_EXECUTOR, "").strip()
    if not name:
        return None
    try:
        return executors.get(policy.executors, name, what=preflight.ENV_EXECUTOR)
    except ToolingError:
        return None


def guarded_units(
    units: Sequence[tuple[str, Path, str | None]],
    env: Mapping[str, str],
    *,
    cache_dir: Path,
    model: Model,
    policy: Policy,
    unreadable: Mapping[str, str] | None = None,
    extra: Mapping[str, Sequence[str]] | None = None,
    known_forms: Mapping[str, UnitRender] | None = None,
    models: Mapping[Path, Model] | None = None,
) -> list[GuardedUnit]:
    """What each unit of ``units`` (path, folder, module source), and each unit they read
    outputs from, may run with under ``policy`` (``known_forms``: static forms the caller
    worked out for ``units``; ``models``: the model of each checkout other than the
    working tree's, such as the base revision's a deleted unit is planned in)."""
    every = closure(units, model, models)
    repos = workcopies.Repos(cache_dir, env)
    repos.ask(source for _, _, source in every)
    roots: dict[Path, list[tuple[str, Path, str | None]]] = {}
    for item in every:
        roots.setdefault(verify.repo_root(item[1], item[0]), []).append(item)
    given = {(verify.repo_root(d, p), p) for p, d, _ in units}
    forms: dict[tuple[Path, str], UnitRender] = {
        key: (known_forms or {})[key[1]] for key in given if key[1] in (known_forms or {})
    }
    sides: dict[tuple[Path, str], tuple[dict[str, Any] | None, str | None]] = {}
    for where, items in roots.items():
        found = verify.declared_sides([(d, p) for p, d, _ in items], env, policy)
        sides.update(((where, p), side) for p, side in found.items())
        todo = [p for p, _, _ in items if (where, p) not in forms]
        if todo:
            with contextlib.suppress(ToolingError):
                worked = verify.static_forms(where, todo, policy, models_of(where, model, models))
                forms.update(((where, p), form) for p, form in worked.items())
    root_file = policy.layout.root_file
    generated_names = {where: workcopies.root_generated(where, root_file) for where in roots}
    executor = _executor(policy)
    out: list[GuardedUnit] = []
    for path, run_dir, source in every:
        where = verify.repo_root(run_dir, path)
        unit = models_of(where, model, models).units.get(path)
        try:
            if path in (unreadable or {}):
                raise ToolingError(
                    f"the model cannot evaluate this unit ({(unreadable or {})[path]}), so its "
                    "module is not known and its working copy cannot be compared with it; fix "
                    "it (`invoke check` names the file and line) and plan again"
                )
            expected = workcopies.expectation(path, run_dir, source, repos, generated_names[where])
            variables = module_variables(expected, run_dir, source, repos)
        except ToolingError as exc:  # refused where it runs (after Terragrunt's own errors)
            expected = Expected(path, str(source), None, "", {}, error=str(exc))
            variables = frozenset()
        declared, why = sides.get((where, path), (None, "not worked out"))
        backend: Backend | None = None
        generated: dict[str, str] = {}
        if declared is not None:
            backend = execpoint.declared_backend(declared)
            generated = execpoint.generated_expectations(declared)
            if backend is None:
                why = (
                    f"{root_file} declares no state backend for this unit: its state "
                    "would stay in the working copy"
                )
        tier = unit.tier if unit is not None else ""
        out.append(
            GuardedUnit(
                path=path,
                unit_dir=os.path.realpath(run_dir),
                module=expected,
                variables=variables,
                generated=generated,
                backend=backend,
                backend_error=None if backend is not None else f"{why}",
                identity=_identity(path, tier, forms.get((where, path)), policy, executor),
                extra=tuple((extra or {}).get(path, ())),
            )
        )
    return out


def models_of(root: Path, model: Model, models: Mapping[Path, Model] | None) -> Model:
    """The model of the checkout at ``root`` (``models``' for another checkout's)."""
    return (models or {}).get(root, model)


def armed(
    units: Sequence[tuple[str, Path, str | None]],
    env: Mapping[str, str],
    *,
    cache_dir: Path,
    model: Model,
    policy: Policy,
    unreadable: Mapping[str, str] | None = None,
    extra: Mapping[str, Sequence[str]] | None = None,
    known_forms: Mapping[str, UnitRender] | None = None,
    models: Mapping[Path, Model] | None = None,
) -> tuple[dict[str, str], list[GuardedUnit]]:
    """``env`` with the guard armed for ``units`` (path, folder, module source): its
    ``TG_TF_PATH`` names this run's guard; and what each unit may run with."""
    guarded = guarded_units(
        units,
        env,
        cache_dir=cache_dir,
        model=model,
        policy=policy,
        unreadable=unreadable,
        extra=extra,
        known_forms=known_forms,
        models=models,
    )
    document = execpoint.config_document(
        guarded, tofu=_real("tofu", env), terragrunt=_real("terragrunt", env)
    )
    exe = guardbin.run_folder(cache_dir, execpoint.config_bytes(document))
    out = {k: v for k, v in env.items() if k not in OLD_HOOK_ENV}
    out[TF_PATH_ENV] = str(exe)
    return out, guarded


def armed_unit(
    path: str,
    run_dir: Path,
    source: str | None,
    env: Mapping[str, str],
    *,
    cache_dir: Path,
    model: Model,
    policy: Policy,
) -> dict[str, str]:
    """``env`` with the guard armed for one unit (its module ``source`` as planned), as
    an apply and its re-plans run it."""
    unit = model.units.get(path)
    armed_env, _ = armed(
        [(path, run_dir, source)],
        env,
        cache_dir=cache_dir,
        model=model,
        policy=policy,
        unreadable={path: unit.error} if unit is not None and unit.error else None,
    )
    return armed_env


def backends_of(guarded: Iterable[GuardedUnit]) -> dict[str, Backend | None]:
    """Per unit path: the backend the root file declares for it (None: not known)."""
    return {g.path: g.backend for g in guarded}
