"""What the root file declares for a unit (the guard compares the working copy's generated
files and the recorded backend with it), worked out by the model instead of a
``terragrunt render``: equal to Terragrunt's own render where the model answers, a render
where it cannot; and the units judged on their static forms, with no render at all.

Every comparison is against the pinned Terragrunt rendering the same files.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from infra_fixtures import commit_all, invoke, make_example_repo, read_summary

from tooling.engine.rules import verify
from tooling.io import config, terragrunt
from tooling.io.workspace import Workspace
from tooling.model import declared as declared_model
from tooling.model import hcl

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    from tooling.io import binpath

    binpath.ensure_bin_dir_on_path()
    yield make_example_repo(tmp_path_factory.mktemp("declared") / "infra")


def _terragrunt_declared(root: Path, unit: str, env: dict[str, str]) -> dict[str, Any]:
    return verify.rendered_declared(root / unit, unit, env, config.read_policy(root))


def _compared(render: dict[str, Any]) -> dict[str, Any]:
    hooks = render.get("terraform") or {}
    return {
        "generate": render["generate"],
        "hooks": {k: hooks.get(k) or {} for k in ("before_hook", "after_hook", "error_hook")},
    }


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"IAC_STATE_BUCKET": "state $(id) bucket", "IAC_STATE_ENDPOINT": "http://127.0.0.1:9"},
        {"IAC_WORKCOPY_HOOK": json.dumps(["python3", "-I", "-S", "a dir/hook.py", "m f"])},
    ],
    ids=["local-state", "s3-state-with-endpoint", "armed-hook"],
)
def test_the_model_declares_what_terragrunt_renders_for_every_example_unit(
    repo: Path, extra: dict[str, str]
) -> None:
    ws = Workspace(repo)
    env = {**ws.tool_env, **extra}
    conf = config.read_policy(repo)
    for unit in ws.model().order:
        model = verify.model_declared(repo, unit, env, conf)
        assert model is not None, unit
        assert _compared(model) == _compared(_terragrunt_declared(repo, unit, env)), unit


ROOT_VARIANTS = {
    # blanks beside interpolations, escapes, and flush heredocs with blank and deeper lines
    "quoted-blanks": 'contents = "a ${local.x} b\\t$${not} %%{x} ${local.x} "',
    "flush-heredoc": "contents = <<-EOT\n      one ${local.x}\n\n        two\n\t    three $${x}\n    EOT",
    "plain-heredoc": "contents = <<EOT\n  keep ${local.x}  \n    this\nEOT",
    "heredoc-interp-first": "contents = <<-EOT\n    ${local.x} first\n      second\n    EOT",
    "numbers-and-bools": 'contents = "${1 + 1} ${local.x == "v"} ${2.5}"\ncomment_prefix = "// "',
}


@pytest.mark.parametrize("variant", sorted(ROOT_VARIANTS))
def test_templates_keep_their_blanks_and_escapes_as_terragrunt_reads_them(
    tmp_path: Path, tools: None, variant: str
) -> None:
    repo = make_example_repo(tmp_path / "infra")
    text = (repo / "root.hcl").read_text()
    text = (
        text.replace("locals {\n", 'locals {\n  x = "v a l"\n', 1)
        + f'\ngenerate "probe" {{\n  path      = "probe.txt"\n  if_exists = "overwrite"\n  {ROOT_VARIANTS[variant]}\n}}\n'
    )
    (repo / "root.hcl").write_text(text)
    commit_all(repo, variant)
    env = Workspace(repo).tool_env
    model = verify.model_declared(repo, "live/cloud/dns", env, config.read_policy(repo))
    rendered = _terragrunt_declared(repo, "live/cloud/dns", env)
    assert model is not None
    assert model["generate"]["probe"] == rendered["generate"]["probe"]


def test_the_parser_keeps_the_blanks_beside_an_interpolation() -> None:
    body = hcl.parse(b'a = "x ${y} z"\nb = " pad "\n', "t.hcl")
    assert body["a"]["a"][0] == ("tmpl", [("lit", "x "), ("var", "y", []), ("lit", " z")])
    assert body["a"]["b"][0] == ("lit", " pad ")


def _count_renders(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Record each Terragrunt process the verifier starts (they still run)."""
    seen: list[list[str]] = []
    real_run = terragrunt.run

    def run(args: list[str], *rest: Any, **kw: Any) -> Any:
        seen.append(list(args))
        return real_run(args, *rest, **kw)

    monkeypatch.setattr(terragrunt, "run", run)
    return seen


def test_no_terragrunt_render_verifies_a_unit_in_the_batch_or_alone(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The units are judged on their static forms, and the root file's side comes from the
    model: the verifier starts no Terragrunt process on either path."""
    ws = Workspace(repo)
    model = ws.model()
    seen = _count_renders(monkeypatch)
    refused = verify.verify_many(
        [(repo / p, p, model.units[p].tier) for p in model.order], ws.tool_env, ws.policy
    )
    assert refused == {}
    unit = model.units["live/cloud/dns"]
    assert (
        verify.violations(
            repo / "live/cloud/dns", "live/cloud/dns", unit.tier, ws.tool_env, ws.policy
        )
        == []
    )
    sides = verify.declared_sides([(repo / p, p) for p in model.order], ws.tool_env, ws.policy)
    assert all(side is not None and why is None for side, why in sides.values())
    assert seen == []
    assert not list(repo.rglob(verify.DECLARED_CONFIG))


def _unit(repo: Path, name: str, body: str) -> str:
    path = f"live/cloud/{name}"
    (repo / "testmods" / name).mkdir(parents=True, exist_ok=True)
    (repo / "testmods" / name / "main.tf").write_text('resource "terraform_data" "own" {}\n')
    (repo / path).mkdir(parents=True)
    (repo / path / "terragrunt.hcl").write_text(
        'include "root" {\n  path = find_in_parent_folders("root.hcl")\n}\n\n'
        f'terraform {{\n  source = "${{get_repo_root()}}/testmods/{name}"\n}}\n\n{body}'
    )
    return path


def _smuggled(contents: str) -> str:
    return f'generate "extra" {{\n  path      = "extra.tf"\n  if_exists = "overwrite"\n  contents  = {contents}\n}}\n'


@pytest.mark.parametrize(
    ("variant", "root_extra", "from_model"),
    [
        # the model cannot follow sha256(): it answers None and Terragrunt renders
        (
            "model-cannot",
            'generate "stamp" {\n  path = "stamp.txt"\n  if_exists = "overwrite"\n'
            "  contents = sha256(path_relative_to_include())\n}\n",
            False,
        ),
        # the model answers, wrongly (its format() knows no widths): Terragrunt decides
        (
            "model-wrong",
            'generate "stamp" {\n  path = "stamp.txt"\n  if_exists = "overwrite"\n'
            '  contents = format("%8s", "w")\n}\n',
            True,
        ),
    ],
    ids=["model-cannot", "model-wrong"],
)
def test_the_static_form_judges_whether_the_model_works_the_declared_side_out_or_not(
    tmp_path: Path, tools: None, variant: str, root_extra: str, from_model: bool
) -> None:
    repo = make_example_repo(tmp_path / "infra")
    with (repo / "root.hcl").open("a") as fh:
        fh.write("\n" + root_extra)
    clean = _unit(repo, "clean", "")
    trick = _unit(repo, "trick", _smuggled('"resource \\"terraform_data\\" \\"x\\" {}\\n"'))
    commit_all(repo, variant)
    ws = Workspace(repo)
    env = ws.tool_env
    model = verify.model_declared(repo, clean, env, config.read_policy(repo))
    assert (model is not None) is from_model
    policy = config.read_policy(repo)
    assert verify.violations(repo / clean, clean, "cloud", env, policy) == []
    found = verify.violations(repo / trick, trick, "cloud", env, policy)
    assert [v.rule for v in found] == ["enforce-generate"]
    assert found[0].file == f"{trick}/terragrunt.hcl"
    dirs = [(repo / p).resolve() for p in (clean, trick)]
    refused = verify.verify_many(
        [(repo / clean, clean, "cloud"), (repo / trick, trick, "cloud")], env, policy, jobs=2
    )
    assert list(refused) == [trick] and "enforce-generate" in refused[trick]
    assert not [p for d in dirs for p in d.glob(".iac-*")]


def test_the_model_reads_the_environment_terragrunt_inherits_not_only_the_runs_own(
    tmp_path: Path, tools: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Terragrunt's process sees the caller's environment plus the run's variables; a
    ``get_env()`` in root.hcl set only in the caller's environment (a key such as
    IAC_ENCRYPTION_PASSPHRASE) must read the same in the model, or every unit differs."""
    repo = make_example_repo(tmp_path / "infra")
    with (repo / "root.hcl").open("a") as fh:
        fh.write(
            '\ngenerate "stamp" {\n  path = "stamp.txt"\n  if_exists = "overwrite"\n'
            '  contents = get_env("IAC_TEST_INHERITED", "unset")\n}\n'
        )
    clean = _unit(repo, "clean", "")
    commit_all(repo, "inherited")
    monkeypatch.setenv("IAC_TEST_INHERITED", "set by the caller")
    env = Workspace(repo).tool_env
    assert "IAC_TEST_INHERITED" not in env
    model = verify.model_declared(repo, clean, env, config.read_policy(repo))
    assert model is not None and model["generate"]["stamp"]["contents"] == "set by the caller"
    assert verify.violations(repo / clean, clean, "cloud", env, config.read_policy(repo)) == []


def test_a_plan_where_the_model_answers_wrongly_for_a_file_that_is_no_code_plans(
    tmp_path: Path, tools: None
) -> None:
    """The model's declared side is wrong for a generated file OpenTofu does not read
    (``stamp.txt``): the guard compares only OpenTofu's files, and the unit plans."""
    repo = make_example_repo(tmp_path / "infra")
    with (repo / "root.hcl").open("a") as fh:
        fh.write(
            '\ngenerate "stamp" {\n  path = "stamp.txt"\n  if_exists = "overwrite"\n'
            '  contents = format("%8s", "w")\n}\n'
        )
    clean = _unit(repo, "clean", "")
    commit_all(repo, "model-wrong")
    out = tmp_path / "plans"
    ran = invoke(repo, "plan", "--unit", clean, "--out", str(out))
    units = read_summary(out)["units"]
    assert isinstance(units, list)
    unit = {u["path"]: u for u in units}[clean]
    assert unit["status"] == "changes", (unit.get("error"), ran.stdout)


def test_a_declared_answer_is_none_when_the_root_file_reads_another_file(tmp_path: Path) -> None:
    (tmp_path / "live" / "u").mkdir(parents=True)
    (tmp_path / "other.hcl").write_text('locals {\n  c = "x"\n}\n')
    (tmp_path / "root.hcl").write_text(
        'locals {\n  o = read_terragrunt_config("${get_parent_terragrunt_dir()}/other.hcl")\n}\n'
        'generate "g" {\n  path = "g.txt"\n  if_exists = "overwrite"\n  contents = local.o.locals.c\n}\n'
    )
    assert declared_model.declared(tmp_path, "live/u", ["root.hcl"], {}, ".x.hcl") is None
    (tmp_path / "root.hcl").write_text('remote_state {\n  backend = "local"\n}\n')
    assert declared_model.declared(tmp_path, "live/u", ["root.hcl"], {}, ".x.hcl") is None


HOOKS = {
    "after-hook": 'after_hook "x" {\n    commands = ["plan"]\n    execute  = ["touch", "MARK"]\n  }\n',
    "before-hook-init": 'before_hook "x" {\n    commands = ["init"]\n    execute  = ["touch", "MARK"]\n  }\n',
    "error-hook": 'error_hook "x" {\n    commands  = ["plan"]\n    execute   = ["touch", "MARK"]\n    on_errors = [".*"]\n  }\n',
}


@pytest.mark.parametrize("kind", sorted(HOOKS))
def test_a_units_own_hook_is_refused_before_terragrunt_runs_it_on_both_planners(
    tmp_path: Path, tools: None, kind: str
) -> None:
    from tooling.core.plan.targets import Target
    from tooling.engine.plan.batchplanner import run_batch
    from tooling.engine.plan.unitplanner import plan_unit

    repo = make_example_repo(tmp_path / "infra")
    mark = tmp_path / "ran $(id)"
    path = _unit(repo, "hooked", "")
    unit_file = repo / path / "terragrunt.hcl"
    text = unit_file.read_text().replace(
        "terraform {\n", "terraform {\n  " + HOOKS[kind].replace("MARK", str(mark)), 1
    )
    unit_file.write_text(text)
    commit_all(repo, kind)
    ws = Workspace(repo)
    model = ws.model()
    target = Target(path, "cloud", model.units[path].executor, "named", repo / path)
    dns = model.units["live/cloud/dns"]
    other = Target("live/cloud/dns", dns.tier, dns.executor, "named", repo / "live/cloud/dns")
    result = plan_unit(target, tmp_path / "one", ws.tool_env, policy=ws.policy)
    assert result.status == "error" and result.plan_file is None
    assert result.error and ": enforce-hooks: " in result.error, result.error
    assert f"{path}/terragrunt.hcl:" in result.error
    planned = run_batch([other, target], tmp_path / "all", ws.tool_env, jobs=2, policy=ws.policy)
    results = {r.path: r for r in planned}
    assert results[path].status == "error" and "enforce-hooks" in (results[path].error or "")
    assert results["live/cloud/dns"].status == "changes", results["live/cloud/dns"].error
    assert not mark.exists()  # the hook never ran
