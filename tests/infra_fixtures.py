"""Fixtures with real parts: the pinned binaries, real git repositories, the sandbox.

- ``tools``: the pinned tofu/terragrunt on PATH (``invoke setup`` put them in
  the virtual environment's bin directory), checked against .tool-versions;
- ``iac_cache``: a per-session cache folder, so the sandbox catalog is built
  fresh for the test session and the user's cache is left alone;
- ``example_repo``: a throwaway git clone of the example tree (root.hcl, live/,
  policy.toml, .tool-versions, tasks.py) with a bare ``origin`` to push to;
- ``provider_mirror``: a real provider (``hashicorp/time``), built once per
  machine from its Go module and cached by version, laid out as an OpenTofu
  filesystem mirror with a CLI configuration that installs from it, offline.
"""

from __future__ import annotations

import functools
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass
from http.server import HTTPServer
from pathlib import Path
from typing import Any

import pytest
import schema_check
from schema_check import JSON_TASKS

REPO = Path(__file__).resolve().parent.parent
#: the example tree's units, in DAG order (dependencies first, ties by path)
EXAMPLE_UNITS = (
    "live/cloud/dns",
    "live/cloud/iam",
    "live/cloud/registry",
    "live/cluster/network",
    "live/cluster/vms",
    "live/cluster/os",
    "live/cluster/gitops",
)
EXAMPLE_FILES = ("root.hcl", "policy.toml", ".tool-versions", "tasks.py", ".gitignore")

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.invalid",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd: Path, *args: str, env: Mapping[str, str] | None = None) -> str:
    full = {**os.environ, **GIT_ENV, **(env or {})}
    return subprocess.run(
        ["git", *args], cwd=cwd, env=full, check=True, capture_output=True, text=True
    ).stdout


@contextmanager
def serving(httpd: HTTPServer) -> Iterator[HTTPServer]:
    """Serve ``httpd`` (bound to loopback by the caller) on a thread for the block, and
    stop it promptly after: a short poll, so a test does not wait half a second to end."""
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def local_unit(repo: Path, name: str, module: str, extra: str = "") -> None:
    """A unit ``live/cloud/NAME`` of ``repo`` whose module is ``module`` (main.tf) in the
    repository's ``testmods/NAME``; ``extra`` (dependencies, inputs) ends the unit file."""
    (repo / "testmods" / name).mkdir(parents=True, exist_ok=True)
    (repo / "testmods" / name / "main.tf").write_text(module)
    unit = repo / "live" / "cloud" / name
    unit.mkdir(parents=True, exist_ok=True)
    (unit / "terragrunt.hcl").write_text(
        'include "root" {\n  path = find_in_parent_folders("root.hcl")\n}\n\n'
        f'terraform {{\n  source = "${{get_repo_root()}}/testmods/{name}"\n}}\n{extra}'
    )


def edit(repo: Path, rel: str, old: str, new: str) -> None:
    """Replace ``old`` by ``new`` in the file ``rel`` of ``repo`` (which must contain it)."""
    path = repo / rel
    text = path.read_text()
    assert old in text, f"{old!r} not in {rel}"
    path.write_text(text.replace(old, new))


def s3_state_bucket(
    monkeypatch: pytest.MonkeyPatch, aws_env: Mapping[str, str], name: str
) -> tuple[Any, str]:
    """A new bucket on the moto server, made this test's state backend; (the boto3 client, the bucket)."""
    import boto3

    s3 = boto3.client("s3", endpoint_url=aws_env["AWS_ENDPOINT_URL"], region_name="us-east-1")
    bucket = name.lower().replace("_", "-")[:60]
    s3.create_bucket(Bucket=bucket)
    monkeypatch.setenv("IAC_STATE_BUCKET", bucket)
    monkeypatch.setenv("IAC_STATE_ENDPOINT", aws_env["AWS_ENDPOINT_URL"])
    return s3, bucket


def bucket_keys(s3: Any, bucket: str) -> set[str]:
    """Every object key in ``bucket``."""
    return {o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])}


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


@dataclass
class Invoked:
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def invoke(
    repo: Path, *args: str, env: Mapping[str, str] | None = None, timeout: float = 600
) -> Invoked:
    """Run ``invoke ARGS`` in ``repo`` as a user would (a separate process)."""
    full = {**os.environ, **GIT_ENV, **(env or {})}
    full.pop("GITHUB_ACTIONS", None)
    proc = subprocess.run(
        [sys.executable, "-m", "invoke", *args],
        cwd=repo,
        env=full,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return _schema_checked(args, Invoked(proc.returncode, proc.stdout, proc.stderr))


def apply_everything(
    repo: Path, out: Path, *, env: Mapping[str, str] | None = None, rounds: int = 4
) -> None:
    """Apply every unit from scratch as an operator would: ``plan --all``, then ``apply
    --approve-manual``, again while a unit waits. A manual unit planned against mock outputs
    waits for a new approval once its upstream's real outputs differ from the mocks, so
    building the example from nothing takes one round per such layer (vms, os, gitops)."""
    for round_ in range(rounds):
        plans = out / f"round-{round_}"
        planned = invoke(repo, "plan", "--all", "--out", str(plans), env=env)
        assert planned.returncode == 0, planned.output
        applied = invoke(repo, "apply", "--plans", str(plans), "--approve-manual", env=env)
        assert applied.returncode == 0, applied.output
        record = json.loads((plans / "apply.json").read_text())
        if all(u["result"] != "waiting-approval" for u in record["units"]):
            return
    raise AssertionError(f"units still wait for approval after {rounds} rounds")


@functools.cache
def repo_tasks() -> Any:
    """This repository's ``tasks.py``, loaded once as a module of its own (``repo_tasks``)."""
    spec = importlib.util.spec_from_file_location("repo_tasks", REPO / "tasks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def invoke_in_process(
    repo: Path,
    *args: str,
    monkeypatch: pytest.MonkeyPatch | None = None,
    env: Mapping[str, str] | None = None,
) -> Invoked:
    """Run ``invoke ARGS`` in ``repo`` inside the test's own process: the same tasks, parser,
    error handling and exit codes as :func:`invoke`, without starting Python again.

    For tests that check what a task prints and returns (the check corpus, the
    misspelt policy table, the runners check); the command line itself, as a
    process, is what :func:`invoke` tests. The working directory and ``env`` are
    set through ``monkeypatch`` (the test's, or one undone when the call returns).
    """
    from invoke.collection import Collection
    from invoke.program import Program

    if monkeypatch is None:
        with pytest.MonkeyPatch.context() as scoped:
            return invoke_in_process(repo, *args, monkeypatch=scoped, env=env)
    monkeypatch.chdir(repo)
    for name, value in {**GIT_ENV, **(env or {})}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    program = Program(namespace=Collection.from_module(repo_tasks()))
    out, err = io.StringIO(), io.StringIO()
    code: int = 0
    with redirect_stdout(out), redirect_stderr(err):
        try:
            program.run(["invoke", *args], exit=True)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return _schema_checked(args, Invoked(code, out.getvalue(), err.getvalue()))


def _schema_checked(args: tuple[str, ...], ran: Invoked) -> Invoked:
    """Every ``--json`` document a test produces matches its published schema."""
    task = next((a for a in args if not a.startswith("-")), "")
    if "--json" in args and task in JSON_TASKS and ran.returncode in (0, 1) and ran.stdout.strip():
        schema_check.check(JSON_TASKS[task], json.loads(ran.stdout), f"invoke {task} --json")
    return ran


@pytest.fixture(scope="session")
def tools() -> None:
    from tooling.io import binpath, toolchain

    binpath.ensure_bin_dir_on_path()
    toolchain.check_versions(REPO)


@pytest.fixture(scope="session")
def iac_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("iac-cache")


@pytest.fixture(autouse=True)
def _documents_match_their_schemas(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test that ran the tasks with the real tools: every summary.json and
    apply.json it left in its temporary folder matches its schema. (Tests without the
    tools write partial documents by hand, as inputs.)"""
    ran_tasks = {"tools", "example_repo"}.intersection(request.fixturenames)
    folder = (
        request.getfixturevalue("tmp_path")
        if ran_tasks and "tmp_path" in request.fixturenames
        else None
    )
    yield
    if folder is not None:
        schema_check.check_folder(folder)


@pytest.fixture(autouse=True)
def _hermetic_env(monkeypatch: pytest.MonkeyPatch, iac_cache: Path) -> None:
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("IAC_CACHE_DIR", str(iac_cache))
    for key in (
        "IAC_STATE_BUCKET",
        "IAC_STATE_ENDPOINT",
        "IAC_MODULE_SOURCES",
        "IAC_MODULE_REWRITE",
        "IAC_PROVIDER_MIRROR",
        "GITHUB_ACTIONS",
        "GITHUB_EVENT_NAME",
        "GITHUB_BASE_REF",
        "GITHUB_STEP_SUMMARY",
        "CI",
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "IAC_EXECUTOR",
        "IAC_APP_STATE_BUCKET",
        "IAC_APP_STATE_REGION",
        "IAC_APP_STATE_ENDPOINT",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "IAC_GIT_TOKEN",
        "IAC_GIT_TOKEN_HOST",
        "IAC_BUMP_AUTHOR_EMAIL",
        "IAC_BUMP_AUTHOR_NAME",
        "IAC_ECHO_COMMANDS",
        "IAC_PR_NUMBER",
        "GITHUB_REPOSITORY",
        "GITHUB_API_URL",
        "GITHUB_EVENT_PATH",
        "GITHUB_SERVER_URL",
        "IAC_ENCRYPTION_PASSPHRASE",
        "IAC_ENCRYPTION_KMS_KEY_ID",
        "IAC_ENCRYPTION_FROM_PLAIN",
        "TF_VAR_iac_encryption_passphrase",
    ):
        monkeypatch.delenv(key, raising=False)


#: the provider the lock file tests build: its go.mod has no `replace` line, so `go install MOD@VER` works
PROVIDER_MODULE = "github.com/hashicorp/terraform-provider-time"
PROVIDER_VERSION = "0.14.2"
PROVIDER_ADDRESS = "registry.opentofu.org/hashicorp/time"
PROVIDER_PLATFORM = "linux_amd64"


@dataclass(frozen=True)
class ProviderMirror:
    #: the filesystem mirror folder (unpacked layout)
    path: Path
    #: a CLI configuration file installing every provider from that mirror
    cli_config: Path
    #: the provider's executable inside the mirror
    binary: Path

    def env(self) -> dict[str, str]:
        """What a run needs to install and lock providers from the mirror only."""
        return {"TF_CLI_CONFIG_FILE": str(self.cli_config), "IAC_PROVIDER_MIRROR": str(self.path)}


def _built_provider() -> Path:
    """The provider's binary, built with ``go install`` the first time on this machine.

    Cached by version under the tool cache (``providers-src/``), beside the pinned
    tools, so a warm machine never builds it again; the test session's own cache
    (``IAC_CACHE_DIR``) is not set yet when session fixtures run.
    """
    from tooling.io import config

    name = f"terraform-provider-{PROVIDER_ADDRESS.rsplit('/', 1)[1]}"
    folder = config.cache_root() / "providers-src" / name / PROVIDER_VERSION / PROVIDER_PLATFORM
    binary = folder / name
    if binary.is_file():
        return binary
    go = shutil.which("go")
    if go is None:
        pytest.skip(f"building the {name} provider needs the Go toolchain (go) once per machine")
    building = folder.parent / f".build-{os.getpid()}"
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir(parents=True)
    env = {**os.environ, "GOBIN": str(building), "CGO_ENABLED": "0", "GOFLAGS": "-mod=mod"}
    env.update(GOOS="linux", GOARCH=PROVIDER_PLATFORM.split("_")[1])
    subprocess.run(
        [go, "install", f"{PROVIDER_MODULE}@v{PROVIDER_VERSION}"],
        env=env,
        check=True,
        capture_output=True,
        timeout=1800,
    )
    folder.mkdir(parents=True, exist_ok=True)
    os.replace(building / name, binary)  # atomic: a half-built binary is never cached
    shutil.rmtree(building, ignore_errors=True)
    return binary


@pytest.fixture(scope="session")
def provider_mirror(tmp_path_factory: pytest.TempPathFactory) -> ProviderMirror:
    built = _built_provider()
    mirror = tmp_path_factory.mktemp("provider-mirror")
    version_dir = mirror / PROVIDER_ADDRESS / PROVIDER_VERSION / PROVIDER_PLATFORM
    version_dir.mkdir(parents=True)
    binary = version_dir / f"{built.name}_v{PROVIDER_VERSION}"
    shutil.copy2(built, binary)
    cli_config = mirror.parent / f"{mirror.name}.tfrc"
    cli_config.write_text(
        "provider_installation {\n"
        f"  filesystem_mirror {{\n    path = {json.dumps(str(mirror))}\n  }}\n"
        "}\n",
        encoding="utf-8",
    )
    return ProviderMirror(mirror, cli_config, binary)


def make_example_repo(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for name in EXAMPLE_FILES:
        shutil.copy2(REPO / name, dest / name)
    shutil.copytree(
        REPO / "live", dest / "live", ignore=shutil.ignore_patterns(".terragrunt-cache")
    )
    git(dest, "init", "--quiet", "--initial-branch=main")
    commit_all(dest, "example foundation")
    origin = dest.parent / f"{dest.name}-origin.git"
    git(dest.parent, "init", "--quiet", "--bare", "--initial-branch=main", str(origin))
    git(dest, "remote", "add", "origin", str(origin))
    git(dest, "push", "--quiet", "origin", "main")
    git(dest, "remote", "set-head", "origin", "main")
    return dest


def copy_repo(template: Path, dest: Path) -> Path:
    """A writable copy at ``dest`` of a repository built once (by :func:`make_example_repo`
    and a fixture's own commits), with a copy of its bare ``origin`` beside it when it has
    one: what building it again gives, without running git a dozen times. Links are copied
    as links."""
    shutil.copytree(template, dest, symlinks=True)
    origin = template.parent / f"{template.name}-origin.git"
    if origin.is_dir():
        copied = dest.parent / f"{dest.name}-origin.git"
        shutil.copytree(origin, copied, symlinks=True)
        git(dest, "remote", "set-url", "origin", str(copied))
    return dest


@pytest.fixture
def example_repo(tmp_path: Path, tools: None) -> Iterator[Path]:
    yield make_example_repo(tmp_path / "infra")


def read_summary(out: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((out / "summary.json").read_text())
    return data


def units_by_path(summary: Mapping[str, object]) -> dict[str, dict[str, object]]:
    units = summary["units"]
    assert isinstance(units, list)
    return {u["path"]: u for u in units}


def plan_one(root: Path, unit: str, out: Path) -> object:
    """Plan one unit of ``root`` with the real binaries; return the plans.Result."""
    from tooling.core.plan.targets import Target
    from tooling.engine.plan.unitplanner import plan_unit
    from tooling.io.workspace import Workspace

    ws = Workspace(root)
    u = ws.model().units[unit]
    result = plan_unit(
        Target(unit, u.tier, u.executor, "named", root / unit, u.dependencies),
        out,
        ws.tool_env,
        policy=ws.policy,
    )
    assert result.status in ("changes", "no-changes"), result.error
    return result


def apply_unit(root: Path, unit: str, out: Path) -> dict[str, int]:
    """Plan and apply one unit (the way a test sets up state); return the plan's counts."""
    from tooling.io import terragrunt
    from tooling.io.workspace import Workspace

    result = plan_one(root, unit, out)
    plan_file = result.plan_file  # type: ignore[attr-defined]
    assert plan_file is not None
    applied = terragrunt.run(
        terragrunt.apply_args(out / plan_file), root / unit, Workspace(root).tool_env
    )
    assert applied.returncode == 0, applied.stderr
    counts: dict[str, int] = result.counts  # type: ignore[attr-defined]
    return counts


def encrypted_envelope(provider: str) -> bytes:
    """An encrypted plan or state as OpenTofu writes it: a JSON envelope naming its key
    provider (``pbkdf2``, ``aws_kms``), its payload opaque."""
    return json.dumps(
        {
            "meta": {f"key_provider.{provider}.x": "e30="},
            "encrypted_data": "AAAA",
            "encryption_version": "v0",
        }
    ).encode()
