"""The rule where an application's OpenTofu runs (``invoke app-plan`` / ``app-apply``):
plain ``tofu``, no Terragrunt. Each trick is refused on the plan, and again on the apply of
a plan made before the trick, with the real pinned tofu; nothing reaches the state.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from infra_fixtures import REPO, commit_all, git, invoke

from tooling.core.apps import verify
from tooling.core.apps.tier import AppState, Found

pytestmark = pytest.mark.e2e

SAMPLE = REPO / "tests" / "apps" / "sample" / "terraform"
FOUNDATION_STATE = "live/cloud/dns/terraform.tfstate"


@pytest.fixture
def app_dir(tmp_path: Path) -> Path:
    repo = tmp_path / "sample app"  # a space in the path, as a hostile folder would have
    shutil.copytree(SAMPLE, repo / "terraform")
    git(repo.parent, "init", "--quiet", "--initial-branch=main", str(repo))
    commit_all(repo, "the sample app")
    return repo / "terraform"


def _run(task: str, infra: Path, app_dir: Path, out: Path, env: dict[str, str] | None) -> Any:
    extra = ["--out", str(out)] if task == "app-plan" else ["--plans", str(out)]
    ran = invoke(infra, task, "--app", "sample", "--dir", str(app_dir), *extra, env=env)
    assert "Traceback" not in ran.output, ran.output
    return ran


def _state(infra: Path) -> Path:
    return infra / ".iac" / "app-state" / "apps" / "sample" / "terraform.tfstate"


def _override(app_dir: Path, infra: Path) -> dict[str, str]:
    (app_dir / "zzz_override.tf").write_text(
        'terraform {\n  backend "local" {\n'
        f'    workspace_dir = "{infra}/.iac/state/live"\n  }}\n}}\n'
    )
    return {}


def _module(source: str) -> Any:
    def add(app_dir: Path, infra: Path) -> dict[str, str]:
        (app_dir / "extra.tf").write_text(f'module "extra" {{\n  source = "{source}"\n}}\n')
        return {}

    return add


def _tofurc(app_dir: Path, infra: Path) -> dict[str, str]:
    rc = infra / "h" / ".tofurc"
    rc.parent.mkdir(exist_ok=True)
    rc.write_text("provider_installation {\n  direct {}\n}\n")
    return {"TF_CLI_CONFIG_FILE": str(rc)}


def _env(name: str, value: str) -> Any:
    def add(app_dir: Path, infra: Path) -> dict[str, str]:
        return {name: value.replace("INFRA", str(infra))}

    return add


#: (id, how the trick is set up, text the refusal names, refused before tofu init)
TRICKS = [
    ("override-workspace-dir", _override, "workspace_dir", False),
    (
        "tf-cli-args-state",
        _env("TF_CLI_ARGS_plan", f"-state=INFRA/.iac/state/{FOUNDATION_STATE}"),
        "TF_CLI_ARGS_plan",
        True,
    ),
    ("tf-cli-args-all", _env("TF_CLI_ARGS", "-lock=false"), "TF_CLI_ARGS=", True),
    ("tf-workspace", _env("TF_WORKSPACE", "live"), "TF_WORKSPACE", True),
    # by allowlist, as the guard checks a foundation unit's environment
    (
        "tf-cli-config-file",
        _tofurc,
        "TF_CLI_CONFIG_FILE",
        True,
    ),
    ("tf-plugin-cache-dir", _env("TF_PLUGIN_CACHE_DIR", "INFRA/p"), "TF_PLUGIN_CACHE_DIR", True),
    ("ld-preload", _env("LD_PRELOAD", "INFRA/x.so"), "LD_PRELOAD", True),
    (
        "pipeline-passphrase",
        _env("TF_VAR_iac_encryption_passphrase", "known"),
        "TF_VAR_iac_encryption_passphrase",
        True,
    ),
    (
        "module-duplicate-ref",
        _module("git::https://git.example.com/platform-modules/m.git?re%66=main&ref=v1.0.0"),
        "can fetch something else",
        True,
    ),
    (
        "module-dot-dot",
        _module(
            "git::https://git.example.com/platform-modules/../evil-org/backdoor.git?ref=v1.0.0"
        ),
        "evil-org/backdoor is not in [check] allowed_module_sources",
        True,
    ),
    (
        "module-branch",
        _module("git::https://git.example.com/platform-modules/m.git?ref=main"),
        "?ref=main, not a version tag",
        True,
    ),
    ("module-registry", _module("hashicorp/consul/aws"), "is not a git repository", True),
]


@pytest.mark.parametrize(("name", "trick", "named", "early"), TRICKS, ids=[t[0] for t in TRICKS])
def test_each_trick_is_refused_on_app_plan(
    example_repo: Path,
    app_dir: Path,
    tmp_path: Path,
    name: str,
    trick: Any,
    named: str,
    early: bool,
) -> None:
    env = trick(app_dir, example_repo)
    out = tmp_path / "plan"
    ran = _run("app-plan", example_repo, app_dir, out, env)
    assert ran.returncode == 1, ran.output
    if early:  # refused before anything ran: the one-line error names it
        assert "refused" in ran.output and named in ran.output, ran.output
    else:  # refused after init, before the plan: the report names it
        (unit,) = json.loads((out / "summary.json").read_text())["units"]
        assert unit["status"] == "error" and unit["plan_file"] is None
        assert "refused" in unit["error"] and named in unit["error"], unit["error"]
    assert not list(out.rglob("*.tfplan"))
    # refused before `tofu init` ran: no data folder; otherwise right after it, before the plan
    assert (example_repo / ".iac" / "app-work" / "sample" / "data").exists() is not early
    assert not _state(example_repo).exists()
    assert not (example_repo / ".iac" / "state").exists()


@pytest.mark.parametrize(("name", "trick", "named", "early"), TRICKS, ids=[t[0] for t in TRICKS])
def test_each_trick_added_after_a_clean_plan_is_refused_on_app_apply(
    example_repo: Path,
    app_dir: Path,
    tmp_path: Path,
    name: str,
    trick: Any,
    named: str,
    early: bool,
) -> None:
    out = tmp_path / "plan"
    ran = _run("app-plan", example_repo, app_dir, out, None)
    assert ran.returncode == 0, ran.output
    env = trick(app_dir, example_repo)
    ran = _run("app-apply", example_repo, app_dir, out, env)
    assert ran.returncode == 1, ran.output
    assert named in ran.output, ran.output
    if not early:  # refused after init, recorded as such
        doc = json.loads((out / "apply.json").read_text())
        assert [(u["path"], u["result"]) for u in doc["units"]] == [("apps/sample", "refused")]
    assert not _state(example_repo).exists()


def test_the_pipelines_own_init_arguments_in_the_environment_are_not_a_trick() -> None:
    own = {"TF_CLI_ARGS_init": "-lockfile=readonly"}
    assert verify.env_problems({**own, "PATH": "/bin"}, own) == []
    assert verify.env_problems({"TF_CLI_ARGS_init": "-backend=false"}, own) != []


def test_the_environment_is_an_allowlist_of_the_apps_own_variables() -> None:
    app = frozenset({"database_size"})
    allowed = {"TF_VAR_database_size": "small", "HOME": "/home/runner", "PATH": "/bin"}
    assert verify.env_problems(allowed, {}, app) == []
    for key in ("TF_VAR_other", "TF_VAR_iac_encryption_passphrase", "TF_LOG", "LD_AUDIT"):
        [problem] = verify.env_problems({key: "secret-value"}, {}, app)
        assert problem.startswith(f"{key}=… is set") and "secret-value" not in problem


def test_the_backend_record_must_carry_the_apps_key_and_nothing_else() -> None:
    state = AppState("s3", "apps/a/terraform.tfstate", "b", "us-east-1", "http://127.0.0.1:9")
    good = {
        "bucket": "b",
        "key": "apps/a/terraform.tfstate",
        "region": "us-east-1",
        "encrypt": True,
        "endpoints": {"s3": "http://127.0.0.1:9", "sts": None},
        "role_arn": None,
    }
    record = {"backend": {"type": "s3", "config": good}}
    assert verify.backend_problems(record, state, "f") == []
    for name, value, said in (
        ("key", "live/cloud/dns/terraform.tfstate", "the backend's key"),
        ("workspace_key_prefix", "live", "workspace_key_prefix"),
        ("endpoints", {"s3": "http://127.0.0.1:9", "sts": "http://evil"}, "endpoints"),
        ("role_arn", "arn:aws:iam::1:role/x", "role_arn"),
    ):
        bad = {"backend": {"type": "s3", "config": {**good, name: value}}}
        found = verify.backend_problems(bad, state, "f")
        assert len(found) == 1 and said in found[0], found
    assert "no backend" in verify.backend_problems(None, state, "f")[0]
    local = {"backend": {"type": "local", "config": {"path": "/x"}}}
    assert "not the app's 's3'" in verify.backend_problems(local, state, "f")[0]


def test_a_module_source_that_is_not_a_literal_is_refused() -> None:
    found = [Found("module", "main.tf:3", "")]
    assert "not a literal" in verify.module_problems(found, ())[0]
    pinned = [
        Found("module", "m.tf:1", "git::https://git.example.com/platform-modules/m.git?ref=v1.2.0")
    ]
    assert verify.module_problems(pinned, ("git.example.com/platform-modules/*",)) == []
