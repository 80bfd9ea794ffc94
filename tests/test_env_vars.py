"""What a unit sets with ``extra_arguments ... env_vars`` is read before anything runs: a
map with literal names, none a process reads before its own code (``env-vars``), with
the real pinned tools and a real library built with gcc.

The findings behind these tests: ``env_vars = { LD_PRELOAD =
"${get_terragrunt_dir()}/lib/libx.so" }`` with a committed library ran its constructor
inside the working-copy hook's ``sh`` and ``python`` (the hook is gone: the guard,
a static executable, now runs where it ran); and ``env_vars = local.e`` was
invisible to ``check`` (it iterated the characters of the expression), so only the
plan's verifier refused it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from infra_fixtures import commit_all, edit, invoke

pytestmark = pytest.mark.e2e

DNS = "live/cloud/dns"
DNS_FILE = f"{DNS}/terragrunt.hcl"
SOURCE_LINE = 'dns.git?ref=v1.1.0"\n}\n'

#: a library whose constructor records the process it was loaded into
CONSTRUCTOR = r"""
#include <stdio.h>
#include <unistd.h>
__attribute__((constructor)) static void loaded(void) {
    char name[64] = {0};
    FILE *comm = fopen("/proc/self/comm", "r");
    if (comm) { if (!fgets(name, sizeof name, comm)) name[0] = 0; fclose(comm); }
    FILE *out = fopen(MARKER, "a");
    if (out) { fprintf(out, "loaded in %d %s", (int)getpid(), name); fclose(out); }
}
"""


def build_library(dest: Path, marker: Path) -> Path:
    """A real shared library (gcc) whose constructor appends to ``marker``."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed: the library cannot be built")
    dest.parent.mkdir(parents=True, exist_ok=True)
    src = dest.parent / "constructor.c"
    src.write_text(CONSTRUCTOR)
    subprocess.run(
        ["gcc", "-shared", "-fPIC", f'-DMARKER="{marker}"', "-o", str(dest), str(src)],
        check=True,
    )
    src.unlink()
    return dest


def _extra(env_vars: str, commands: str = '"init", "plan"') -> str:
    return (
        'dns.git?ref=v1.1.0"\n\n  extra_arguments "env" {\n'
        f"    commands = [{commands}]\n    env_vars = {env_vars}\n  }}\n}}\n"
    )


RUNS = {
    "per-unit plan": ("plan", "--unit", DNS, "--out"),
    "batch plan": ("plan", "--all", "--out"),
    "drift": ("drift", "--out"),
}


# --------------------------------------------------------------------------- finding 4


@pytest.mark.parametrize("args", list(RUNS.values()), ids=list(RUNS))
def test_ld_preload_of_a_committed_library_is_refused_before_any_process_loads_it(
    example_repo: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    marker = tmp_path / "loaded.txt"
    build_library(example_repo / DNS / "lib" / "libx.so", marker)
    edit(
        example_repo,
        DNS_FILE,
        SOURCE_LINE,
        _extra('{ LD_PRELOAD = "${get_terragrunt_dir()}/lib/libx.so" }'),
    )
    commit_all(example_repo, "a unit preloading a committed library")
    checked = invoke(example_repo, "check")
    assert checked.returncode == 1
    assert f'{DNS_FILE}:17: env-vars: extra_arguments "env" sets LD_PRELOAD' in checked.output
    ran = invoke(example_repo, *args, str(tmp_path / "out"))
    assert ran.returncode == 1, ran.output
    assert f'{DNS_FILE}:17: env-vars: extra_arguments "env" sets LD_PRELOAD' in ran.stderr
    assert not marker.exists(), marker.read_text()


# --------------------------------------------------------------------------- finding 7


def test_check_sees_a_computed_env_vars_map(example_repo: Path, tmp_path: Path) -> None:
    edit(example_repo, DNS_FILE, SOURCE_LINE, _extra("local.e"))
    edit(
        example_repo,
        DNS_FILE,
        "inputs = {",
        'locals {\n  e = { TF_CLI_ARGS_init = "-backend-config=path=/tmp/stolen.tfstate" }\n}\n\ninputs = {',
    )
    commit_all(example_repo, "env_vars from a local")
    checked = invoke(example_repo, "check", "--json")
    assert checked.returncode == 1, checked.output
    found = [(v["file"], v["line"], v["rule"]) for v in json.loads(checked.stdout)["violations"]]
    assert (DNS_FILE, 17, "env-vars") in found
    assert "computes env_vars" in checked.stderr
    for args in list(RUNS.values())[:2]:
        ran = invoke(example_repo, *args, str(tmp_path / "out"))
        assert ran.returncode == 1 and f"{DNS_FILE}:17: env-vars:" in ran.stderr, ran.output
        assert not (tmp_path / "out" / "summary.json").exists()


# --------------------------------------------------------------------------- siblings


@pytest.mark.parametrize(
    "env_vars",
    [
        'merge({ TF_VAR_a = "1" }, { TF_VAR_b = "2" })',
        '{ for k in ["LD_PRELOAD"] : k => "/tmp/x.so" }',
        '{ "${upper("ld_preload")}" = "/tmp/x.so" }',
        'true ? { TF_VAR_a = "1" } : {}',
    ],
    ids=["merge", "for", "computed-name", "conditional"],
)
def test_every_computed_map_is_refused_by_check_and_the_plan(
    example_repo: Path, tmp_path: Path, env_vars: str
) -> None:
    edit(example_repo, DNS_FILE, SOURCE_LINE, _extra(env_vars))
    commit_all(example_repo, "a computed env_vars")
    checked = invoke(example_repo, "check")
    assert f"{DNS_FILE}:17: env-vars:" in checked.output and "computes env_vars" in checked.output
    ran = invoke(example_repo, "plan", "--unit", DNS, "--out", str(tmp_path / "out"))
    assert ran.returncode == 1 and f"{DNS_FILE}:17: env-vars:" in ran.stderr


@pytest.mark.parametrize(
    "name",
    [
        "PYTHONPATH",
        "BASH_ENV",
        "http_proxy",
        "PATH",
        "GIT_SSH_COMMAND",
        "GCONV_PATH",
        "GOGC",
        "GODEBUG",
    ],
)
def test_a_variable_a_process_reads_before_its_own_code_is_refused(
    example_repo: Path, tmp_path: Path, name: str
) -> None:
    edit(example_repo, DNS_FILE, SOURCE_LINE, _extra(f'{{ {name} = "/tmp/x" }}'))
    commit_all(example_repo, f"env_vars sets {name}")
    ran = invoke(example_repo, "plan", "--unit", DNS, "--out", str(tmp_path / "out"))
    assert ran.returncode == 1
    assert f'{DNS_FILE}:17: env-vars: extra_arguments "env" sets {name}' in ran.stderr


def test_ld_preload_in_an_included_file_is_refused_for_every_unit_including_it(
    example_repo: Path, tmp_path: Path
) -> None:
    tier = "live/cloud/tier.hcl"
    (example_repo / tier).write_text(
        (example_repo / tier).read_text()
        + '\nterraform {\n  extra_arguments "env" {\n    commands = ["plan"]\n'
        '    env_vars = { LD_AUDIT = "/tmp/x.so" }\n  }\n}\n'
    )
    commit_all(example_repo, "a tier file setting LD_AUDIT")
    ran = invoke(example_repo, "plan", "--unit", "live/cloud/iam", "--out", str(tmp_path / "out"))
    assert ran.returncode == 1 and f"{tier}:18: env-vars:" in ran.stderr, ran.output


def test_a_literal_map_of_module_variables_still_plans(example_repo: Path, tmp_path: Path) -> None:
    # zone_name is a variable of the unit's module: the only TF_VAR_ the guard lets through
    edit(
        example_repo,
        DNS_FILE,
        SOURCE_LINE,
        _extra('{ TF_VAR_zone_name = "example.net" }', '"plan"'),
    )
    commit_all(example_repo, "a literal env_vars")
    assert invoke(example_repo, "check").returncode == 0
    ran = invoke(example_repo, "plan", "--unit", DNS, "--out", str(tmp_path / "out"))
    assert ran.returncode == 0, ran.output


# --------------------------------------------------------------------------- the guard itself


def test_a_preloaded_library_is_loaded_by_no_process_the_guard_starts_and_is_refused(
    example_repo: Path, tmp_path: Path
) -> None:
    """Past the rules (Terragrunt run directly, as a rule that missed would let it): a
    unit's ``env_vars`` put ``LD_PRELOAD`` of a committed library in the environment of
    what Terragrunt starts for OpenTofu. That is the guard, a static executable no
    dynamic loader runs for: the library is loaded in no process, and the guard refuses
    the variable by its allowlist (``exec-env``) before OpenTofu starts."""
    import os

    from tooling.engine.rules import execguard
    from tooling.io.workspace import Workspace

    marker = tmp_path / "loaded.txt"
    unit = "live/cloud/hooked"
    (example_repo / "testmods" / "hooked").mkdir(parents=True)
    (example_repo / "testmods" / "hooked" / "main.tf").write_text(
        'resource "terraform_data" "x" {\n  input = "x"\n}\n'
    )
    (example_repo / unit).mkdir(parents=True)
    (example_repo / unit / "terragrunt.hcl").write_text(
        'include "root" {\n  path = find_in_parent_folders("root.hcl")\n}\n\n'
        'terraform {\n  source = "${get_repo_root()}/testmods/hooked"\n\n'
        '  extra_arguments "env" {\n    commands = ["init", "plan"]\n'
        '    env_vars = { LD_PRELOAD = "${get_terragrunt_dir()}/lib/libx.so" }\n  }\n}\n'
    )
    build_library(example_repo / unit / "lib" / "libx.so", marker)
    commit_all(example_repo, "a unit preloading a committed library")
    ws = Workspace(example_repo)
    model = ws.model()
    env, _ = execguard.armed(
        [(unit, example_repo / unit, model.units[unit].source)],
        ws.tool_env,
        cache_dir=tmp_path / "cache",
        model=model,
        policy=ws.policy,
    )
    ran = subprocess.run(
        ["terragrunt", "plan", "-input=false", "--non-interactive", "--no-color"],
        cwd=example_repo / unit,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
    )
    output = ran.stdout + ran.stderr
    assert ran.returncode != 0, output
    assert not marker.exists(), f"the library was loaded: {marker.read_text()}"
    assert f"{unit}: exec-env: OpenTofu's environment sets LD_PRELOAD" in output, output
