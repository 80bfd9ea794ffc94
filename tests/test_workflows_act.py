"""The workflows rehearsed end to end by a real workflow engine: act, host mode.

Every workflow of ``.github/workflows/`` runs under act (pinned in
``.tool-versions``, installed by ``invoke setup``) on this machine, without
containers (``-P ubuntu-latest=-self-hosted``, and the same for the LAN
runner's labels), job after job in the order GitHub runs them, with:

- the pinned third-party actions mapped onto the composite stand-ins of
  ``tests/act/`` (``--local-repository OWNER/REPO@SHA=FOLDER``, see its README);
- GitHub's API: the local test server (``tests/ghserver.py``), through
  ``GITHUB_API_URL``; the requests it recorded are what the tests assert on;
- state: moto's S3 (and its STS for the identities the preflight checks);
- module sources: the sandbox catalog, through the workflows' own
  ``IAC_MODULE_REWRITE`` variable;
- events: JSON event files, one per run.

Each scenario is one test, in the order GitHub would run them (docs/pipelines.md,
"Rehearsal"). The stage they share (the repository, the sandbox catalog, the
foundation applied once into a baseline bucket) is built once per session; each
test gets its own copy of the repository and its own bucket seeded from the
baseline, so the tests are independent of each other's order.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from conftest import MotoServer
from ghserver import DEFAULT_REPOSITORY, GitHubAPI
from infra_fixtures import (
    EXAMPLE_FILES,
    GIT_ENV,
    REPO,
    apply_everything,
    commit_all,
    edit,
    git,
    invoke,
)
from test_bump_e2e import _newest_major, _next_minor, _precedence
from test_drift import edit_state_json

from tooling.io import binpath, sandbox
from tooling.model import tools

# one worker runs the module (`invoke test` distributes with --dist loadgroup),
# so the stage below is built once
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("act-rehearsal")]

ACT_DIR = REPO / "tests" / "act"
WORKFLOWS = REPO / ".github" / "workflows"
ACCOUNT = "123456789012"
PLAN_ROLE = f"arn:aws:iam::{ACCOUNT}:role/github-infra-plan"
APPLY_ROLE = f"arn:aws:iam::{ACCOUNT}:role/github-infra-apply"
LAN_ROLE = f"arn:aws:iam::{ACCOUNT}:role/infra-lan-executor"
APP_PLAN_ROLE = f"arn:aws:iam::{ACCOUNT}:role/app-billing-plan"
APP_APPLY_ROLE = f"arn:aws:iam::{ACCOUNT}:role/app-billing-apply"
MODULES_URL = "https://git.example.com/platform-modules/"
APP_REPOSITORY = "example-org/billing"
FORK_REPOSITORY = "someone/infrastructure"
#: the pinned third-party actions and the stand-in folder of each, under tests/act/
STANDINS = {
    "actions/checkout": "checkout",
    "actions/setup-python": "setup-python",
    "actions/upload-artifact": "upload-artifact",
    "actions/download-artifact": "download-artifact",
    "aws-actions/configure-aws-credentials": "configure-aws-credentials",
    "hashicorp/vault-action": "vault-action",
}
#: the vault's secret values (the stand-in reads them); none may reach a report
VAULT_SECRETS = {
    "proxmox": {"api_token_id": "ci@pve!rehearsal", "api_token_secret": "pve-6f1d2c0a-rehearsal"},
    "talos": {"secrets_yaml": "cluster:\n  secret: talos-4b9e-rehearsal\n"},
    "flux": {
        "ssh_private_key": "flux-key-83c2-rehearsal",
        "known_hosts": "git.example.com ssh-ed25519 AAAA",
    },
}
DNS = "live/cloud/dns"
VMS = "live/cluster/vms"
REGISTRY = "live/cloud/registry"
NETWORK = "live/cluster/network"
NETWORK_B = "live/cluster/network-b"
VMS_B = "live/cluster/vms-b"


# --------------------------------------------------------------------------- the stage


def _pinned_actions() -> dict[str, str]:
    """``owner/repo@sha`` of every action the workflows use -> its stand-in folder."""
    pins: dict[str, str] = {}
    for path in sorted(WORKFLOWS.glob("*.yml")):
        for repo, sha in re.findall(r"uses:\s*([\w.-]+/[\w.-]+)@([0-9a-f]{40})", path.read_text()):
            assert repo in STANDINS, f"{path.name}: {repo} has no stand-in under tests/act/"
            pins[f"{repo}@{sha}"] = str(ACT_DIR / STANDINS[repo])
    return pins


def _act_binary() -> str:
    binpath.ensure_bin_dir_on_path()
    exe = shutil.which("act")
    pins = tools.parse_tool_versions((REPO / ".tool-versions").read_text(), ".tool-versions")
    if exe is None:
        pytest.fail(f"act not found on PATH: run `invoke setup` (it builds act {pins['act']})")
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=True).stdout
    assert tools.parse_act_version(out) == pins["act"], out
    return exe


def _copy_tree(src: Path, dest: Path) -> None:
    shutil.copytree(
        src,
        dest,
        symlinks=True,
        ignore=shutil.ignore_patterns(".terragrunt-cache", "__pycache__", "*.pyc", ".iac"),
    )


def _infra_template(dest: Path, remotes: Path) -> None:
    """The foundation repository as the workflows see it: the example tree, the
    workflows, tasks.py and the tooling; its bare origin under ``remotes``."""
    dest.mkdir(parents=True)
    for name in (*EXAMPLE_FILES, "pyproject.toml", ".pre-commit-config.yaml"):
        shutil.copy2(REPO / name, dest / name)
    for folder in ("live", ".github", "tooling"):
        _copy_tree(REPO / folder, dest / folder)
    git(dest, "init", "--quiet", "--initial-branch=main")
    commit_all(dest, "example foundation")
    origin = remotes / f"{DEFAULT_REPOSITORY}.git"
    origin.parent.mkdir(parents=True, exist_ok=True)
    git(dest, "init", "--quiet", "--bare", "--initial-branch=main", str(origin))
    git(dest, "remote", "add", "origin", str(origin))
    git(dest, "push", "--quiet", "origin", "main")


def _python_bin(dest: Path) -> Path:
    """``python``/``python3`` for the setup-python stand-in: this interpreter (the
    package and its dependencies installed); ``-m pip install`` is answered here."""
    dest.mkdir(parents=True)
    script = (
        "#!/bin/bash\n"
        "# The rehearsal's interpreter (tests/act/setup-python): the package and its\n"
        "# dependencies are installed already; pip must not touch the shared environment.\n"
        'if [[ "${1:-} ${2:-} ${3:-}" == "-m pip install" ]]; then\n'
        '  echo "rehearsal: already installed in $(dirname ' + sys.executable + '): pip $*"\n'
        "  exit 0\n"
        "fi\n"
        f'exec {sys.executable} "$@"\n'
    )
    for name in ("python", "python3"):
        (dest / name).write_text(script)
        (dest / name).chmod(0o755)
    return dest


def _moto_env(moto: MotoServer) -> dict[str, str]:
    return {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": moto.endpoint,
    }


@dataclass
class Stage:
    """What every scenario shares (built once per session: the module's tests
    run on one worker, see ``pytestmark``)."""

    root: Path
    act: str
    actions: dict[str, str]
    template: Path
    remotes: Path
    python_bin: Path
    module_rewrite: str
    baseline: str
    vault: dict[str, dict[str, str]]
    moto: MotoServer
    cache: Path

    @property
    def s3(self) -> Any:
        return boto3.client(
            "s3",
            endpoint_url=self.moto.endpoint,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )


@pytest.fixture(scope="session")
def stage(
    tmp_path_factory: pytest.TempPathFactory, moto_server: MotoServer, iac_cache: Path, tools: None
) -> Stage:
    root = tmp_path_factory.mktemp("act-stage")
    act = _act_binary()
    remotes = root / "remotes"
    template = root / "infrastructure"
    _infra_template(template, remotes)
    catalog = sandbox.build(iac_cache)
    moto_env = _moto_env(moto_server)
    s3 = boto3.client(
        "s3",
        endpoint_url=moto_server.endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    baseline = "rehearsal-baseline"
    s3.create_bucket(Bucket=baseline)
    # The foundation as it stands before the first scenario: every unit applied
    # (plan, then the saved plans, again while a re-plan on real outputs waits for
    # a new approval), the way the pipeline applies.
    env = {
        **moto_env,
        "IAC_CACHE_DIR": str(iac_cache),
        "IAC_STATE_BUCKET": baseline,
        "IAC_STATE_ENDPOINT": moto_server.endpoint,
    }
    apply_everything(template, root / "baseline-plans", env=env)
    sts = boto3.client(
        "sts",
        endpoint_url=moto_server.endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    lan = sts.assume_role(RoleArn=LAN_ROLE, RoleSessionName="vault-aws-engine")["Credentials"]
    kv = "secret/data/infra/lan"
    vault = {
        "aws/sts/infra-lan-executor": {
            "access_key": lan["AccessKeyId"],
            "secret_key": lan["SecretAccessKey"],
            "security_token": lan["SessionToken"],
        },
        **{f"{kv}/{name}": values for name, values in VAULT_SECRETS.items()},
    }
    return Stage(
        root=root,
        act=act,
        actions=_pinned_actions(),
        template=template,
        remotes=remotes,
        python_bin=_python_bin(root / "python-bin"),
        module_rewrite=f"{MODULES_URL}={catalog.as_uri()}/",
        baseline=baseline,
        vault=vault,
        moto=moto_server,
        cache=iac_cache,
    )


# --------------------------------------------------------------------------- one world per test


@dataclass
class Job:
    name: str
    result: str


@dataclass
class ActRun:
    returncode: int
    output: str
    artifacts: Path
    jobs: list[Job]
    steps: list[tuple[str, str, str]]  # (job, step, result) of every step act ran
    step_envs: list[dict[str, str]]
    run_id: int = 0  # its GITHUB_RUN_ID

    def result(self, prefix: str) -> list[str]:
        """The results of the jobs whose name starts with ``prefix``."""
        return [j.result for j in self.jobs if j.name.startswith(prefix)]

    def artifact(self, name: str) -> Path:
        path = self.artifacts / name
        assert path.is_dir(), (
            f"no artifact {name}; artifacts: {sorted(p.name for p in self.artifacts.iterdir())}"
        )
        return path

    def artifact_names(self) -> set[str]:
        return {p.name for p in self.artifacts.iterdir()} if self.artifacts.is_dir() else set()


@dataclass
class World:
    """One scenario's repository, bucket, API server and runs."""

    stage: Stage
    root: Path
    repo: Path
    remotes: Path
    bucket: str
    api: GitHubAPI
    runs: int = 0

    @property
    def s3(self) -> Any:
        return self.stage.s3

    def state(self, unit: str) -> dict[str, Any]:
        body = self.s3.get_object(Bucket=self.bucket, Key=f"{unit}/terraform.tfstate")["Body"]
        doc: dict[str, Any] = json.loads(body.read())
        return doc

    def state_etags(self) -> dict[str, str]:
        listed = self.s3.list_objects_v2(Bucket=self.bucket).get("Contents", [])
        return {o["Key"]: o["ETag"] for o in listed}

    def push(self, branch: str) -> str:
        """Push HEAD to origin as ``branch`` (or a full ``refs/...`` name); its commit."""
        ref = branch if branch.startswith("refs/") else f"refs/heads/{branch}"
        git(self.repo, "push", "--quiet", "--force", "origin", f"HEAD:{ref}")
        return git(self.repo, "rev-parse", "HEAD").strip()

    def act(
        self,
        workflow: str,
        event_name: str,
        event: Mapping[str, Any],
        *,
        sha: str,
        ref: str,
        workdir: Path | None = None,
        repository: str = DEFAULT_REPOSITORY,
        variables: Mapping[str, str] | None = None,
        job: str | None = None,
        timeout: float = 900,
    ) -> ActRun:
        """Run ``workflow`` (a path under the working directory's .github/workflows)
        for one event, as GitHub would on ``repository`` at ``sha``."""
        self.runs += 1
        run_dir = self.root / f"run-{self.runs}"
        artifacts = run_dir / "artifacts"
        step_envs = run_dir / "step-envs"
        artifacts.mkdir(parents=True)
        run_id = 7000 + self.runs
        # another run's artifacts (download-artifact's run-id): REHEARSAL_RUNS/<run id>
        (self.root / "runs").mkdir(exist_ok=True)
        (self.root / "runs" / str(run_id)).symlink_to(artifacts)
        event_file = run_dir / "event.json"
        event_file.write_text(json.dumps(event))
        vault_file = run_dir / "vault.json"
        vault_file.write_text(json.dumps(self.stage.vault))
        workdir = workdir or self.repo
        envs = {
            "GITHUB_REPOSITORY": repository,
            "GITHUB_REPOSITORY_OWNER": repository.split("/")[0],
            "GITHUB_API_URL": self.api.url,
            "GITHUB_REF": ref,
            "SHA_REF": sha,
            "GITHUB_RUN_ID": str(run_id),
            "REHEARSAL_REMOTES": str(self.remotes),
            "REHEARSAL_ARTIFACTS": str(artifacts),
            "REHEARSAL_RUNS": str(self.root / "runs"),
            "REHEARSAL_PYTHON_BIN": str(self.stage.python_bin),
            "REHEARSAL_VAULT": str(vault_file),
            "REHEARSAL_STEP_ENVS": str(step_envs),
            # plumbing of the rehearsal, not of the workflows: where moto listens
            "AWS_ENDPOINT_URL": self.stage.moto.endpoint,
            "IAC_STATE_ENDPOINT": self.stage.moto.endpoint,
            "IAC_CACHE_DIR": str(self.stage.cache),
        }
        repo_vars = {
            "IAC_STATE_BUCKET": self.bucket,
            "AWS_REGION": "us-east-1",
            "AWS_PLAN_ROLE_ARN": PLAN_ROLE,
            "AWS_APPLY_ROLE_ARN": APPLY_ROLE,
            "VAULT_ADDR": "https://vault.example.invalid",
            "VAULT_PLAN_ROLE": "infra-plan",
            "VAULT_APPLY_ROLE": "infra-apply",
            "IAC_MODULE_REWRITE": self.stage.module_rewrite,
            **(variables or {}),
        }
        args = [
            self.stage.act,
            event_name,
            "--workflows",
            str(workdir / ".github" / "workflows" / workflow),
            "--eventpath",
            str(event_file),
            "-P",
            "ubuntu-latest=-self-hosted",
            "-P",
            "self-hosted=-self-hosted",
            "-P",
            "lan=-self-hosted",
            "--no-skip-checkout",
            "--json",
            "--secret",
            f"GITHUB_TOKEN={self.api.token}",
            # the runners token (Administration: read): the routing jobs list the runners
            "--secret",
            f"IAC_RUNNERS_TOKEN={self.api.token}",
        ]
        if job:
            args += ["--job", job]
        for pin, folder in self.stage.actions.items():
            args += ["--local-repository", f"{pin}={folder}"]
        args += ["--local-repository", f"{DEFAULT_REPOSITORY}@main={self.repo}"]
        for key, value in envs.items():
            args += ["--env", f"{key}={value}"]
        for key, value in repo_vars.items():
            args += ["--var", f"{key}={value}"]
        # act's host mode hands its own environment to every step: keep it to
        # what a runner has (no credentials, nothing of this test process).
        process_env = {
            "PATH": os.pathsep.join(
                [
                    str(ACT_DIR / "runner"),
                    os.path.dirname(self.stage.act),
                    "/usr/local/bin",
                    "/usr/bin",
                    "/bin",
                ]
            ),
            "HOME": str(self.root / "home"),
            "XDG_CACHE_HOME": str(self.root / "xdg-cache"),
            "LANG": "C.UTF-8",
            "GIT_PAGER": "cat",
            **GIT_ENV,
        }
        proc = subprocess.run(
            args,
            cwd=workdir,
            env=process_env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        (run_dir / "act.log").write_text(proc.stdout + proc.stderr)
        return ActRun(
            returncode=proc.returncode,
            output=proc.stdout + proc.stderr,
            artifacts=artifacts,
            jobs=_jobs(proc.stdout),
            steps=_steps(proc.stdout),
            step_envs=_step_envs(step_envs),
            run_id=run_id,
        )


def _jobs(log: str) -> list[Job]:
    """The jobs act finished, with their results, from its JSON log."""
    jobs: list[Job] = []
    for line in log.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("jobResult"):
            # "workflow/job name" (a called workflow's jobs: "caller/job/called job")
            name = str(entry.get("job", "")).rsplit("/", 1)[-1].strip()
            jobs.append(Job(name, str(entry["jobResult"])))
    return jobs


def _steps(log: str) -> list[tuple[str, str, str]]:
    """(job, step, result) of every step act ran, from its JSON log."""
    steps = []
    for line in log.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("stepResult") and entry.get("stage") == "Main":
            job = str(entry.get("job", "")).rsplit("/", 1)[-1].strip()
            steps.append((job, str(entry.get("step", "")), str(entry["stepResult"])))
    return steps


def _step_envs(folder: Path) -> list[dict[str, str]]:
    found = []
    for path in sorted(folder.glob("*.env")) if folder.is_dir() else []:
        pairs = (item.partition("=") for item in path.read_text().split("\0") if item)
        found.append({k: v for k, _, v in pairs})
    return found


@pytest.fixture
def world(stage: Stage, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[World]:
    repo = tmp_path / "infrastructure"
    remotes = tmp_path / "remotes"
    shutil.copytree(stage.template, repo, symlinks=True)
    shutil.copytree(stage.remotes, remotes, symlinks=True)
    git(repo, "remote", "set-url", "origin", str(remotes / f"{DEFAULT_REPOSITORY}.git"))
    git(repo, "fetch", "--quiet", "origin")
    s3 = stage.s3
    bucket = re.sub(r"[^a-z0-9-]", "-", f"act-{request.node.name.lower()}")[:60].rstrip("-")
    s3.create_bucket(Bucket=bucket)
    for obj in s3.list_objects_v2(Bucket=stage.baseline).get("Contents", []):
        s3.copy_object(
            Bucket=bucket, Key=obj["Key"], CopySource={"Bucket": stage.baseline, "Key": obj["Key"]}
        )
    with GitHubAPI() as api:
        api.state.add_runner("lan-1", ["lan"])  # the LAN runner, online (runners.yml, matrix)
        yield World(stage, tmp_path, repo, remotes, bucket, api)


# --------------------------------------------------------------------------- events


def _repository(full_name: str) -> dict[str, Any]:
    owner, name = full_name.split("/")
    return {
        "full_name": full_name,
        "name": name,
        "owner": {"login": owner},
        "default_branch": "main",
    }


def pull_request_event(
    number: int, head: str, head_sha: str, base_sha: str, *, head_repo: str = DEFAULT_REPOSITORY
) -> dict[str, Any]:
    return {
        "action": "synchronize",
        "number": number,
        "pull_request": {
            "number": number,
            "head": {"ref": head, "sha": head_sha, "repo": _repository(head_repo)},
            "base": {"ref": "main", "sha": base_sha, "repo": _repository(DEFAULT_REPOSITORY)},
        },
        "repository": _repository(DEFAULT_REPOSITORY),
    }


def push_event(before: str, after: str, repository: str = DEFAULT_REPOSITORY) -> dict[str, Any]:
    return {
        "ref": "refs/heads/main",
        "before": before,
        "after": after,
        "head_commit": {"id": after},
        "repository": _repository(repository),
    }


def merge_group_event(number: int, head_sha: str, base_sha: str) -> dict[str, Any]:
    """The merge queue's ``merge_group`` (checks_requested) for pull request ``number``."""
    return {
        "action": "checks_requested",
        "merge_group": {
            "head_sha": head_sha,
            "head_ref": f"refs/heads/gh-readonly-queue/main/pr-{number}-{base_sha}",
            "base_sha": base_sha,
            "base_ref": "refs/heads/main",
            "head_commit": {"id": head_sha},
        },
        "repository": _repository(DEFAULT_REPOSITORY),
    }


def schedule_event(cron: str) -> dict[str, Any]:
    return {"schedule": cron, "repository": _repository(DEFAULT_REPOSITORY)}


# --------------------------------------------------------------------------- helpers


def summary_of(folder: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((folder / "summary.json").read_text())
    return doc


def units_of(doc: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {u["path"]: u for u in doc["units"]}


def texts_under(folder: Path) -> str:
    """Every text file of an artifact folder, concatenated (binary plans left out)."""
    return "".join(
        p.read_text(errors="replace")
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.suffix != ".tfplan"
    )


def secret_values(stage: Stage) -> list[str]:
    values = [v for values in VAULT_SECRETS.values() for v in values.values()]
    values += list(stage.vault["aws/sts/infra-lan-executor"].values())
    return values


def assert_no_secret_in(text: str, stage: Stage) -> None:
    for value in secret_values(stage):
        assert value not in text, f"a vault value reached a report: {value[:8]}…"


def change_dns_and_vms(repo: Path, api_value: str = "203.0.113.11") -> None:
    """A change of a cloud unit (a DNS record, auto) and a cluster unit (a VM, manual)."""
    edit(repo, f"{DNS}/terragrunt.hcl", 'value = "203.0.113.10"', f'value = "{api_value}"')
    edit(
        repo,
        f"{VMS}/terragrunt.hcl",
        "node-3 = { cores = 4, memory_mb = 8192",
        "node-3 = { cores = 4, memory_mb = 16384",
    )


def api_posts(api: GitHubAPI, suffix: str) -> list[Any]:
    return [r for r in list(api.requests) if r.method == "POST" and r.path.endswith(suffix)]


def api_patches(api: GitHubAPI, fragment: str) -> list[Any]:
    return [r for r in list(api.requests) if r.method == "PATCH" and fragment in r.path]


def expected_bump_branches(repo: Path) -> dict[str, bool]:
    """``bump/<module>-<tag>`` -> is a major bump, for every module the units pin."""
    pinned: dict[str, list[str]] = {}
    for unit in sorted(repo.glob("live/*/*/terragrunt.hcl")):
        for module, ref in re.findall(
            r"platform-modules/(terraform-[a-z0-9-]+)\.git[^?\"]*\?ref=(v[0-9.]+)", unit.read_text()
        ):
            pinned.setdefault(module, []).append(ref)
    branches: dict[str, bool] = {}
    for module, refs in pinned.items():
        current = min(refs, key=_precedence)
        minor = _next_minor(module, current)
        if minor and minor != current:
            branches[f"bump/{module}-{minor}"] = False
        major = _newest_major(module, current)
        if major:
            branches[f"bump/{module}-{major}"] = True
    assert branches, "the example pins no module with a newer tag"
    return branches


def origin_sha(origin: Path, branch: str) -> str:
    return git(origin, "for-each-ref", "--format=%(objectname)", f"refs/heads/{branch}").strip()


# --------------------------------------------------------------------------- 1. pull request


def test_pull_request_plans_one_leg_per_executor_and_keeps_one_sticky_comment(world: World) -> None:
    repo, api = world.repo, world.api
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "--quiet", "-b", "change")
    change_dns_and_vms(repo)
    commit_all(repo, "DNS: move api; VMs: more memory for node-3")
    head = world.push("change")
    number = int(api.state.add_pull(head="change", title="api record and node-3 memory")["number"])
    state_before = world.state_etags()

    run = world.act(
        "plan.yml",
        "pull_request",
        pull_request_event(number, "change", head, base),
        sha=head,
        ref=f"refs/pull/{number}/merge",
    )
    assert run.returncode == 0, run.output[-6000:]
    assert run.result("affected executors") == ["success"]
    assert sorted(run.result("plan (")) == ["success", "success"]
    assert run.result("sticky comment") == ["success"]

    # one leg per executor, each with its own units only, planned at the head
    hosted = summary_of(run.artifact("plan-hosted"))
    lan = summary_of(run.artifact("plan-lan"))
    assert hosted["head"] == head and lan["head"] == head
    assert {u["executor"] for u in hosted["units"]} == {"hosted"}
    assert {u["executor"] for u in lan["units"]} == {"lan"}
    assert units_of(hosted)[DNS]["status"] == "changes"
    assert units_of(hosted)[DNS]["counts"]["update"] == 1
    assert units_of(lan)[VMS]["status"] == "changes"
    assert units_of(lan)[VMS]["gate"]["decision"] == "manual"

    # exactly one sticky comment, holding both executors' reports
    comments = api.state.comments_on(number)
    assert len(comments) == 1
    body = comments[0]["body"]
    assert body.startswith("<!-- iac-tooling:plan-report -->")
    assert head[:12] in body and DNS in body and VMS in body
    assert len(api_posts(api, f"/issues/{number}/comments")) == 1
    # a pull request's plan writes no state (read-only role, no lock)
    assert world.state_etags() == state_before
    for name in ("plan-hosted", "plan-lan"):
        assert_no_secret_in(texts_under(run.artifact(name)), world.stage)
    assert_no_secret_in(body, world.stage)
    # one commit status per executor on the head, for branch protection
    on_head = {st["context"]: st for st in api.state.statuses if st["sha"] == head}
    assert {c: st["state"] for c, st in on_head.items()} == {
        "iac/plan (hosted)": "success",
        "iac/plan (lan)": "success",
    }
    assert on_head["iac/plan (lan)"]["description"].endswith("1 to approve after merge")

    # a second push: the same comment is updated in place
    edit(repo, f"{DNS}/terragrunt.hcl", 'value = "203.0.113.11"', 'value = "203.0.113.12"')
    commit_all(repo, "DNS: api again")
    head2 = world.push("change")
    run2 = world.act(
        "plan.yml",
        "pull_request",
        pull_request_event(number, "change", head2, base),
        sha=head2,
        ref=f"refs/pull/{number}/merge",
    )
    assert run2.returncode == 0, run2.output[-6000:]
    comments2 = api.state.comments_on(number)
    assert [c["id"] for c in comments2] == [comments[0]["id"]]
    assert head2[:12] in comments2[0]["body"] and head[:12] not in comments2[0]["body"]
    assert len(api_posts(api, f"/issues/{number}/comments")) == 1
    assert len(api_patches(api, f"/issues/comments/{comments[0]['id']}")) == 1
    assert summary_of(run2.artifact("plan-hosted"))["head"] == head2


# --------------------------------------------------------------------------- 2. merge


def test_merge_applies_auto_units_then_the_approval_jobs_apply_the_waiting_ones_from_the_reviewed_folders(
    world: World,
) -> None:
    """Each executor's folder holds what waits; the cloud one also holds what the
    auto job applied, which the approval job must leave alone (its plan is stale)."""
    repo, api = world.repo, world.api
    base = git(repo, "rev-parse", "HEAD").strip()
    api.state.add_run("apply.yml", base)  # the last successful apply: the base
    git(repo, "checkout", "--quiet", "-b", "change")
    change_dns_and_vms(repo)
    # a deleted image repository: a delete, so the registry waits for a human too
    edit(repo, f"{REGISTRY}/terragrunt.hcl", '["web", "api", "worker"]', '["web", "api"]')
    commit_all(repo, "DNS: move api; VMs: more memory for node-3; registry: drop worker")
    world.push("change")
    number = int(api.state.add_pull(head="change", title="api, node-3, worker")["number"])
    git(repo, "checkout", "--quiet", "main")
    git(repo, "merge", "--quiet", "--no-ff", "-m", f"Merge pull request #{number}", "change")
    merged = world.push("main")
    api.state.merge(number, merged)
    vms_before = world.state(VMS)

    run = world.act(
        "apply.yml", "push", push_event(base, merged), sha=merged, ref="refs/heads/main"
    )
    assert run.returncode == 0, run.output[-6000:]
    assert run.result("affected executors") == ["success"]
    assert sorted(run.result("plan and apply auto")) == ["success", "success"]
    assert run.result("report") == ["success"]
    assert sorted(run.result("apply manual (")) == ["success", "success"]
    assert run.result("status after approval") == ["success"]

    # the matrix job planned from the last applied commit (the API's run)
    assert ("GET", f"/repos/{DEFAULT_REPOSITORY}/actions/workflows/apply.yml/runs") in api.calls(
        "GET"
    )
    for executor in ("hosted", "lan"):
        plan = summary_of(run.artifact(f"plan-{executor}"))
        assert plan["base"] == base and plan["head"] == merged

    # the auto jobs: the DNS record applied; the registry and the VM wait
    auto_hosted = json.loads((run.artifact("apply-auto-hosted") / "apply.json").read_text())
    auto_lan = json.loads((run.artifact("apply-auto-lan") / "apply.json").read_text())
    assert units_of(auto_hosted)[DNS]["result"] == "applied"
    assert units_of(auto_hosted)[REGISTRY]["result"] == "waiting-approval"
    assert units_of(auto_lan)[VMS]["result"] == "waiting-approval"
    # the approval jobs applied them, from the reviewed plan folders and the auto records
    manual_hosted = json.loads((run.artifact("apply-manual-hosted") / "apply.json").read_text())
    manual_lan = json.loads((run.artifact("apply-manual-lan") / "apply.json").read_text())
    for record in (manual_hosted, manual_lan):
        assert record["approve_manual"] is True and record["plans_head"] == merged
        assert [r["approve_manual"] for r in record["runs"]] == [False, True]
    assert units_of(manual_hosted)[REGISTRY]["result"] == "applied"
    assert units_of(manual_lan)[VMS]["result"] == "applied"
    # what the auto job applied from the same folder is left alone
    assert units_of(manual_hosted)[DNS]["result"] == "applied"
    assert units_of(manual_hosted)[DNS]["earlier"] is True

    # moto: the new values are in the state
    assert "203.0.113.11" in json.dumps(world.state(DNS))
    assert '"worker"' not in json.dumps(world.state(REGISTRY)["resources"])
    vms_after = world.state(VMS)
    assert vms_after["serial"] > vms_before["serial"]
    assert "16384" in json.dumps(vms_after)

    # the report commented on the merged pull request, once, naming what waits
    report = [c for c in api.state.comments_on(number) if "iac-tooling:apply-report" in c["body"]]
    assert len(report) == 1 and VMS in report[0]["body"] and REGISTRY in report[0]["body"]
    assert ("GET", f"/repos/{DEFAULT_REPOSITORY}/commits/{merged}/pulls") in api.calls("GET")
    # the merge commit's status per executor: waiting for approval after the auto
    # applies, then applied once the approval jobs applied what waited
    applied = {
        executor: sum(1 for u in record["units"] if u["result"] == "applied")
        for executor, record in (("hosted", manual_hosted), ("lan", manual_lan))
    }
    history: dict[str, list[tuple[str, str]]] = {}
    for st in api.state.statuses:
        if st["sha"] == merged:
            history.setdefault(st["context"], []).append((st["state"], st["description"]))
    assert history == {
        "iac/plan (hosted)": [
            ("pending", f"waiting for approval in infra-manual: {REGISTRY}"),
            ("success", f"applied after approval: {applied['hosted']} unit(s)"),
        ],
        "iac/plan (lan)": [
            ("pending", f"waiting for approval in infra-manual: {VMS}"),
            ("success", f"applied after approval: {applied['lan']} unit(s)"),
        ],
    }
    assert_no_secret_in(report[0]["body"], world.stage)

    # afterwards a fresh plan of everything shows no changes
    out = world.root / "fresh-plan"
    fresh = invoke(
        repo,
        "plan",
        "--all",
        "--out",
        str(out),
        env={
            **_moto_env(world.stage.moto),
            "IAC_STATE_BUCKET": world.bucket,
            "IAC_STATE_ENDPOINT": world.stage.moto.endpoint,
        },
    )
    assert fresh.returncode == 0, fresh.output
    statuses = {u["path"]: u["status"] for u in summary_of(out)["units"]}
    assert len(statuses) == 7 and set(statuses.values()) == {"no-changes"}, statuses


def test_a_vm_beside_its_network_in_one_merge_applies_after_one_approval_of_its_replan(
    world: World,
) -> None:
    """A new network and new VMs on it in one merge: the network applies (auto), the
    VMs, planned on its mock outputs, are re-planned on the real ones before the
    approval is asked for; the report shows that re-plan and one approval applies it."""
    repo, api = world.repo, world.api
    base = git(repo, "rev-parse", "HEAD").strip()
    api.state.add_run("apply.yml", base)
    git(repo, "checkout", "--quiet", "-b", "second-network")
    shutil.copytree(repo / NETWORK, repo / NETWORK_B)
    edit(repo, f"{NETWORK_B}/terragrunt.hcl", 'bridge    = "vmbr1"', 'bridge    = "vmbr2"')
    shutil.copytree(repo / VMS, repo / VMS_B)
    edit(
        repo,
        f"{VMS_B}/terragrunt.hcl",
        'config_path = "../network"',
        'config_path = "../network-b"',
    )
    commit_all(repo, "a second network and VMs on it")
    world.push("second-network")
    number = int(api.state.add_pull(head="second-network", title="network b")["number"])
    git(repo, "checkout", "--quiet", "main")
    git(
        repo, "merge", "--quiet", "--no-ff", "-m", f"Merge pull request #{number}", "second-network"
    )
    merged = world.push("main")
    api.state.merge(number, merged)

    run = world.act(
        "apply.yml", "push", push_event(base, merged), sha=merged, ref="refs/heads/main"
    )
    assert run.returncode == 0, run.output[-6000:]
    plan = summary_of(run.artifact("plan-lan"))
    assert {u["path"]: u["mocked_dependencies"] for u in plan["units"]}[VMS_B] == [NETWORK_B]
    auto = json.loads((run.artifact("apply-auto-lan") / "apply.json").read_text())
    assert units_of(auto)[NETWORK_B]["result"] == "applied"
    waiting = units_of(auto)[VMS_B]
    assert waiting["result"] == "waiting-approval" and waiting["cascaded"] is True, waiting
    replan = (run.artifact("apply-auto-lan") / waiting["waiting_plan"]["text_file"]).read_text()
    assert "vmbr2" in replan and "vmbr-mock" not in replan, replan
    # the report on the pull request shows the re-plan the approval applies
    report = [c for c in api.state.comments_on(number) if "iac-tooling:apply-report" in c["body"]]
    assert len(report) == 1
    assert f"The plan to approve for <code>{VMS_B}</code>" in report[0]["body"]
    # one approval: the VMs applied from their re-plan, on the new bridge
    manual = json.loads((run.artifact("apply-manual-lan") / "apply.json").read_text())
    assert units_of(manual)[VMS_B]["result"] == "applied", units_of(manual)[VMS_B]
    state = json.dumps(world.state(VMS_B))
    assert "vmbr2" in state and "vmbr-mock" not in state


# --------------------------------------------------------------------------- 2b. legs

IAM = "live/cloud/iam"


def split_hosted_over_two_legs(world: World) -> str:
    """policy.toml on main: the hosted executor over up to 2 legs; the new base."""
    edit(
        world.repo,
        "policy.toml",
        'runs_on = ["ubuntu-latest"]\nplatforms',
        'runs_on = ["ubuntu-latest"]\nmax_legs = 2\nplatforms',
    )
    commit_all(world.repo, "hosted: up to two legs")
    return world.push("main")


def change_dns_iam_and_vms(repo: Path) -> None:
    """Three parts: dns and iam (hosted, independent of each other), vms (lan)."""
    change_dns_and_vms(repo)
    edit(
        repo,
        f"{IAM}/terragrunt.hcl",
        'github_org = "example-org"',
        'github_org = "example-org" # legs',
    )


def test_pull_request_plans_three_legs_and_merges_them_into_one_sticky_comment(
    world: World,
) -> None:
    repo, api = world.repo, world.api
    base = split_hosted_over_two_legs(world)
    git(repo, "checkout", "--quiet", "-b", "legs")
    change_dns_iam_and_vms(repo)
    commit_all(repo, "DNS, IAM and a VM")
    head = world.push("legs")
    number = int(api.state.add_pull(head="legs", title="three legs")["number"])

    run = world.act(
        "plan.yml",
        "pull_request",
        pull_request_event(number, "legs", head, base),
        sha=head,
        ref=f"refs/pull/{number}/merge",
    )
    assert run.returncode == 0, run.output[-6000:]
    assert sorted(run.result("plan (")) == ["success"] * 3
    assert run.result("sticky comment") == ["success"]
    # each leg planned only its own units, into its own artifact
    legs = {
        name: [u["path"] for u in summary_of(run.artifact(name))["units"]]
        for name in ("plan-hosted-1-of-2", "plan-hosted-2-of-2", "plan-lan")
    }
    assert legs == {"plan-hosted-1-of-2": [DNS], "plan-hosted-2-of-2": [IAM], "plan-lan": [VMS]}
    # one sticky comment, one section per executor, every leg's units in it
    (comment,) = api.state.comments_on(number)
    body = comment["body"]
    assert body.startswith("<!-- iac-tooling:plan-report -->")
    assert body.count("### Executor `hosted`") == 1 and body.count("### Executor `lan`") == 1
    for unit in (DNS, IAM, VMS):
        assert unit in body
    assert "No report" not in body
    on_head = {st["context"]: st["state"] for st in api.state.statuses if st["sha"] == head}
    assert on_head == {"iac/plan (hosted)": "success", "iac/plan (lan)": "success"}
    assert_no_secret_in(body, world.stage)


def test_merge_applies_across_legs_and_the_approval_job_applies_only_the_leg_that_waits(
    world: World,
) -> None:
    repo, api = world.repo, world.api
    base = split_hosted_over_two_legs(world)
    api.state.add_run("apply.yml", base)
    git(repo, "checkout", "--quiet", "-b", "legs")
    change_dns_iam_and_vms(repo)
    commit_all(repo, "DNS, IAM and a VM")
    world.push("legs")
    number = int(api.state.add_pull(head="legs", title="three legs")["number"])
    git(repo, "checkout", "--quiet", "main")
    git(repo, "merge", "--quiet", "--no-ff", "-m", f"Merge pull request #{number}", "legs")
    merged = world.push("main")
    api.state.merge(number, merged)

    run = world.act(
        "apply.yml", "push", push_event(base, merged), sha=merged, ref="refs/heads/main"
    )
    assert run.returncode == 0, run.output[-6000:]
    assert sorted(run.result("plan and apply auto")) == ["success"] * 3
    assert run.result("report") == ["success"]
    # only the lan leg holds a unit that waits (the VM): one approval job
    assert run.result("apply manual (") == ["success"]
    auto = {
        leg: units_of(json.loads((run.artifact(f"apply-auto-{leg}") / "apply.json").read_text()))
        for leg in ("hosted-1-of-2", "hosted-2-of-2", "lan")
    }
    assert auto["hosted-1-of-2"][DNS]["result"] == "applied"
    assert set(auto["hosted-2-of-2"]) == {IAM}
    assert auto["lan"][VMS]["result"] == "waiting-approval"
    manual = json.loads((run.artifact("apply-manual-lan") / "apply.json").read_text())
    assert units_of(manual)[VMS]["result"] == "applied"
    assert "203.0.113.11" in json.dumps(world.state(DNS))
    assert "16384" in json.dumps(world.state(VMS))
    # one report on the merged pull request, with both hosted legs merged into it
    (report,) = [
        c for c in api.state.comments_on(number) if "iac-tooling:apply-report" in c["body"]
    ]
    for unit in (DNS, IAM, VMS):
        assert unit in report["body"]
    contexts = {st["context"] for st in api.state.statuses if st["sha"] == merged}
    assert contexts == {"iac/plan (hosted)", "iac/plan (lan)"}


# --------------------------------------------------------------------------- 3. bump


def test_scheduled_bump_opens_one_pull_request_per_module_and_nothing_on_the_second_run(
    world: World,
) -> None:
    repo, api = world.repo, world.api
    head = git(repo, "rev-parse", "HEAD").strip()
    event = schedule_event("23 5 * * 1")
    run = world.act("bump.yml", "schedule", event, sha=head, ref="refs/heads/main")
    assert run.returncode == 0, run.output[-6000:]
    assert run.result("bump-all") == ["success"]
    # one pull request per module with a newer tag in its major, and one per newer
    # major, computed here from the catalog and the pins, not by the tooling
    expected = expected_bump_branches(repo)
    opened = api_posts(api, "/pulls")
    assert sorted(r.body["head"] for r in opened) == sorted(expected)
    assert all(r.body["base"] == "main" for r in opened)
    origin = world.remotes / f"{DEFAULT_REPOSITORY}.git"
    pushed = {b: origin_sha(origin, b) for b in expected}
    assert all(pushed.values()), pushed
    for number, pull in api.state.pulls.items():
        assert ("(major)" in api.state.issues[number]["title"]) is expected[pull["head"]]

    run2 = world.act("bump.yml", "schedule", event, sha=head, ref="refs/heads/main")
    assert run2.returncode == 0, run2.output[-6000:]
    assert len(api_posts(api, "/pulls")) == len(expected), "the second run opened a pull request"
    assert len(api.state.pulls) == len(expected)
    assert {b: origin_sha(origin, b) for b in expected} == pushed  # nothing pushed again


# --------------------------------------------------------------------------- 4. drift


def test_scheduled_drift_opens_one_issue_and_closes_it_after_the_fix(world: World) -> None:
    repo, api = world.repo, world.api
    head = git(repo, "rev-parse", "HEAD").strip()
    key = f"{DNS}/terraform.tfstate"
    original = world.s3.get_object(Bucket=world.bucket, Key=key)["Body"].read()
    state = json.loads(original)
    edit_state_json(state, "record", "api", "content", "198.51.100.99")  # a console edit
    world.s3.put_object(Bucket=world.bucket, Key=key, Body=json.dumps(state).encode())
    etags = world.state_etags()
    event = schedule_event("41 4 * * *")

    run = world.act("drift.yml", "schedule", event, sha=head, ref="refs/heads/main")
    assert run.returncode == 0, run.output[-6000:]
    assert sorted(run.result("drift (")) == ["success", "success"]
    hosted = json.loads((run.artifact("drift-hosted") / "drift.json").read_text())
    lan = json.loads((run.artifact("drift-lan") / "drift.json").read_text())
    assert hosted["drifted"] == [DNS] and lan["drifted"] == []
    assert hosted["executor"] == "hosted" and lan["executor"] == "lan"
    created = api_posts(api, f"/repos/{DEFAULT_REPOSITORY}/issues")
    assert len(created) == 1
    issue = int(hosted["issue"]["number"])
    assert api.state.issues[issue]["state"] == "open" and DNS in api.state.issues[issue]["body"]
    assert world.state_etags() == etags  # drift is read-only
    assert_no_secret_in(texts_under(run.artifact("drift-lan")), world.stage)

    # the fix: the state is back as the code says
    world.s3.put_object(Bucket=world.bucket, Key=key, Body=original)
    run2 = world.act("drift.yml", "schedule", event, sha=head, ref="refs/heads/main")
    assert run2.returncode == 0, run2.output[-6000:]
    assert len(api_posts(api, f"/repos/{DEFAULT_REPOSITORY}/issues")) == 1  # nothing new opened
    assert api.state.issues[issue]["state"] == "closed"
    fixed = json.loads((run2.artifact("drift-hosted") / "drift.json").read_text())
    assert fixed["drifted"] == [] and fixed["issue"]["action"] == "closed"


# --------------------------------------------------------------------------- 5. app-infra

CALLER = """\
name: infra
on:
  push:
    branches: [main]
permissions: {}
jobs:
  infra:
    permissions:
      contents: read
      id-token: write
    uses: example-org/infrastructure/.github/workflows/app-infra.yml@main
    with:
      app: billing
      tooling-repository: example-org/infrastructure
      tooling-ref: main
"""


def test_app_infra_runs_as_a_reusable_workflow_and_keeps_state_under_apps(world: World) -> None:
    app = world.root / "billing"
    shutil.copytree(REPO / "tests" / "apps" / "sample" / "terraform", app / "terraform")
    (app / ".github" / "workflows").mkdir(parents=True)
    (app / ".github" / "workflows" / "infra.yml").write_text(CALLER)
    git(app, "init", "--quiet", "--initial-branch=main")
    sha = commit_all(app, "billing's infrastructure")
    origin = world.remotes / f"{APP_REPOSITORY}.git"
    git(app, "init", "--quiet", "--bare", "--initial-branch=main", str(origin))
    git(app, "push", "--quiet", str(origin), "main")
    app_bucket = "billing-app-state"
    world.s3.create_bucket(Bucket=app_bucket)
    foundation = world.state_etags()

    run = world.act(
        "infra.yml",
        "push",
        push_event("0" * 40, sha, APP_REPOSITORY),
        sha=sha,
        ref="refs/heads/main",
        workdir=app,
        repository=APP_REPOSITORY,
        variables={
            "IAC_APP_STATE_BUCKET": app_bucket,
            "APP_PLAN_ROLE_ARN": APP_PLAN_ROLE,
            "APP_APPLY_ROLE_ARN": APP_APPLY_ROLE,
        },
    )
    assert run.returncode == 0, run.output[-6000:]
    assert run.result("validate inputs") == ["success"]
    assert run.result("apply (billing)") == ["success"]
    assert run.result("plan (billing)") == []  # a push: no pull request plan

    summary = summary_of(run.artifact("app-infra-plan"))
    assert summary["app"]["name"] == "billing"
    assert summary["app"]["state"]["key"] == "apps/billing/terraform.tfstate"
    assert summary["app"]["state"]["bucket"] == app_bucket
    keys = {o["Key"] for o in world.s3.list_objects_v2(Bucket=app_bucket).get("Contents", [])}
    assert keys == {"apps/billing/terraform.tfstate"}
    state = json.loads(
        world.s3.get_object(Bucket=app_bucket, Key="apps/billing/terraform.tfstate")["Body"].read()
    )
    assert {r["name"] for r in state["resources"]} == {"database", "bucket"}
    assert world.state_etags() == foundation  # the foundation's state untouched
    assert run.result("apply manual") == []  # creates only: nothing waits


# --------------------------------------------------------------------------- 6. fork


def test_pull_request_from_a_fork_gets_no_plan_no_credentials_and_no_secret(world: World) -> None:
    repo, api = world.repo, world.api
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "--quiet", "-b", "fork-change")
    change_dns_and_vms(repo)
    head = commit_all(repo, "a contribution")
    world.push("refs/pull/9/head")
    number = 9
    run = world.act(
        "plan.yml",
        "pull_request",
        pull_request_event(number, "fork-change", head, base, head_repo=FORK_REPOSITORY),
        sha=head,
        ref=f"refs/pull/{number}/merge",
    )
    assert run.returncode == 0, run.output[-6000:]
    assert run.result("affected executors") == ["success"]
    assert run.result("plan (") == [] and run.result("sticky comment") == []
    assert run.artifact_names() == set()
    assert api.requests == []  # no comment, no call at all
    assert run.step_envs, "no step environment was recorded"
    secrets = [*secret_values(world.stage), api.token]
    for env in run.step_envs:
        assert not any(k.startswith("AWS_") and k != "AWS_ENDPOINT_URL" for k in env), sorted(env)
        assert not any(k.startswith("TF_VAR_") for k in env)
        for value in secrets:
            assert value not in env.values()
    ran = {(job, step) for job, step, _ in run.steps}
    assert {job for job, _ in ran} == {"affected executors"}
    assert not [step for _, step in ran if "credentials" in step.lower() or "vault" in step.lower()]


# --------------------------------------------------------------------------- check.yml


def test_check_workflow_runs_pre_commit_invoke_check_and_crosscheck(world: World) -> None:
    """check.yml's own jobs; its `tests` job runs this suite and is not nested in it."""
    repo, api = world.repo, world.api
    before = git(repo, "rev-parse", "HEAD").strip()
    head = commit_all(repo, "an empty commit on main")
    world.push("main")
    event = push_event(before, head)
    runs = {}
    for job in ("check", "pre-commit"):
        runs[job] = world.act("check.yml", "push", event, sha=head, ref="refs/heads/main", job=job)
        assert runs[job].returncode == 0, runs[job].output[-6000:]
        assert [j.result for j in runs[job].jobs] == ["success"], runs[job].jobs
    steps = {step: result for _, step, result in runs["check"].steps}
    assert steps["invoke check"] == "success"
    assert steps["invoke crosscheck (change detection against Terragrunt's own find)"] == "success"
    assert ("pre-commit", "pre-commit run --all-files", "success") in runs["pre-commit"].steps
    assert api.requests == []  # no token, no API call

    # a unit whose HCL is not formatted fails the pre-commit job
    unit = repo / DNS / "terragrunt.hcl"
    unit.write_text(unit.read_text().replace("zone_name = ", "zone_name    =   "))
    bad = commit_all(repo, "an unformatted unit")
    world.push("main")
    failed = world.act(
        "check.yml", "push", push_event(head, bad), sha=bad, ref="refs/heads/main", job="pre-commit"
    )
    assert failed.returncode != 0
    assert [j.result for j in failed.jobs] == ["failure"]
    assert "terragrunt hcl fmt" in failed.output


# --------------------------------------------------------------------------- 8. LAN runner health


def test_a_lan_leg_without_online_runner_fails_fast_with_the_reason_while_the_hosted_leg_plans(
    world: World,
) -> None:
    repo, api = world.repo, world.api
    api.state.set_runner("lan-1", status="offline")
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "--quiet", "-b", "change")
    change_dns_and_vms(repo)
    commit_all(repo, "DNS: move api; VMs: more memory for node-3")
    head = world.push("change")
    number = int(api.state.add_pull(head="change", title="api record and node-3 memory")["number"])

    run = world.act(
        "plan.yml",
        "pull_request",
        pull_request_event(number, "change", head, base),
        sha=head,
        ref=f"refs/pull/{number}/merge",
    )
    assert run.returncode != 0, run.output[-6000:]  # the LAN leg failed
    assert run.result("affected executors") == ["success"]
    assert run.result("no online runner (") == ["failure"]
    assert run.result("plan (") == ["success"]  # the hosted leg alone
    assert "plan-hosted" in run.artifact_names() and "plan-lan" not in run.artifact_names()
    assert (
        "executor lan: no online self-hosted runner with labels [self-hosted, lan] "
        "(1 runner(s) carry its labels, all offline (lan-1))" in run.output
    )
    listed = [r for r in api.requests if r.path.endswith("/actions/runners")]
    assert listed and all(r.header("Authorization") == f"Bearer {api.token}" for r in listed)


def test_scheduled_runner_check_opens_one_issue_then_closes_it_when_the_runner_is_back(
    world: World,
) -> None:
    repo, api = world.repo, world.api
    head = git(repo, "rev-parse", "HEAD").strip()
    api.state.set_runner("lan-1", status="offline")
    event = schedule_event("*/15 * * * *")
    run = world.act("runners.yml", "schedule", event, sha=head, ref="refs/heads/main")
    assert run.returncode == 0, run.output[-6000:]
    assert run.result("LAN runner health") == ["success"]
    created = api_posts(api, f"/repos/{DEFAULT_REPOSITORY}/issues")
    assert len(created) == 1
    (number,) = [n for n, i in api.state.issues.items() if not i["is_pull"]]
    assert api.state.issues[number]["state"] == "open"
    assert api.state.issues[number]["title"] == "No online runner for executor lan"

    api.state.set_runner("lan-1", status="online", busy=True)  # busy is online
    run2 = world.act("runners.yml", "schedule", event, sha=head, ref="refs/heads/main")
    assert run2.returncode == 0, run2.output[-6000:]
    assert len(api_posts(api, f"/repos/{DEFAULT_REPOSITORY}/issues")) == 1  # nothing new opened
    assert api.state.issues[number]["state"] == "closed"
    assert "online again (lan-1" in api.state.comments_on(number)[-1]["body"]


# --------------------------------------------------------------------------- merge queue


def _queue(world: World, number: int, base: str) -> tuple[str, ActRun]:
    """The merge group of pull request ``number`` on ``base`` (HEAD is its commit), planned."""
    ref = f"refs/heads/gh-readonly-queue/main/pr-{number}-{base}"
    group = world.push(ref)
    run = world.act(
        "plan.yml", "merge_group", merge_group_event(number, group, base), sha=group, ref=ref
    )
    return group, run


def test_merge_queue_fails_the_check_naming_the_unit_whose_plan_differs_and_passes_the_same_plan(
    world: World,
) -> None:
    repo, api = world.repo, world.api
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "--quiet", "-b", "change")
    edit(repo, f"{DNS}/terragrunt.hcl", 'value = "203.0.113.10"', 'value = "203.0.113.11"')
    commit_all(repo, "DNS: move api")
    head = world.push("change")
    number = int(api.state.add_pull(head="change", title="api record", head_sha=head)["number"])
    reviewed = world.act(
        "plan.yml",
        "pull_request",
        pull_request_event(number, "change", head, base),
        sha=head,
        ref=f"refs/pull/{number}/merge",
    )
    assert reviewed.returncode == 0, reviewed.output[-6000:]
    api.state.add_run(
        "plan.yml", head, branch="change", event="pull_request", run_id=reviewed.run_id
    )

    # the group of the pull request on an unchanged main: the reviewed plan, the check passes
    git(repo, "checkout", "--quiet", "--detach", base)
    git(repo, "merge", "--quiet", "--no-ff", "-m", f"Merge pull request #{number}", "change")
    _, same = _queue(world, number, base)
    assert same.returncode == 0, same.output[-6000:]
    assert same.result("reviewed plan check") == ["success"]
    assert units_of(summary_of(same.artifact("plan-hosted")))[DNS]["gate"]["decision"] == "auto"
    assert "differs from the reviewed plan" not in same.output
    # the pull request's plan was found through the API, downloaded from its run
    assert ("GET", f"/repos/{DEFAULT_REPOSITORY}/pulls/{number}") in api.calls("GET")

    # main moved on with another change of dns: the group's plan is not the reviewed one
    git(repo, "checkout", "--quiet", "main")
    edit(repo, f"{DNS}/terragrunt.hcl", 'value = "203.0.113.20"', 'value = "203.0.113.21"')
    commit_all(repo, "DNS: move cluster")
    moved = world.push("main")
    git(repo, "checkout", "--quiet", "--detach", moved)
    try:
        git(repo, "merge", "--quiet", "--no-ff", "-m", f"Merge pull request #{number}", "change")
    except subprocess.CalledProcessError:  # neighbouring lines: both changes kept
        git(repo, "checkout", "--theirs", "--", f"{DNS}/terragrunt.hcl")
        edit(repo, f"{DNS}/terragrunt.hcl", 'value = "203.0.113.20"', 'value = "203.0.113.21"')
        git(repo, "add", f"{DNS}/terragrunt.hcl")
        git(repo, "commit", "--quiet", "--no-edit")
    _, stale = _queue(world, number, moved)
    assert stale.returncode != 0
    assert stale.result("reviewed plan check") == ["failure"]
    gate = units_of(summary_of(stale.artifact("plan-hosted")))[DNS]["gate"]
    assert gate["decision"] == "manual"
    assert f"{DNS}: differs from the reviewed plan: " in stale.output
    # dns is applied already: the pull request updates the api record, the group also cluster
    assert gate["reasons"][-1] == (
        'differs from the reviewed plan: terraform_data.record["cluster"]: update, '
        "not in the reviewed plan"
    )


def test_the_apply_after_a_merge_through_the_queue_compares_with_the_merge_groups_plans(
    world: World,
) -> None:
    repo, api = world.repo, world.api
    base = git(repo, "rev-parse", "HEAD").strip()
    api.state.add_run("apply.yml", base)  # the last successful apply: the base
    git(repo, "checkout", "--quiet", "-b", "change")
    edit(repo, f"{DNS}/terragrunt.hcl", 'value = "203.0.113.10"', 'value = "203.0.113.11"')
    commit_all(repo, "DNS: move api")
    head = world.push("change")
    number = int(api.state.add_pull(head="change", title="api record", head_sha=head)["number"])
    reviewed = world.act(
        "plan.yml",
        "pull_request",
        pull_request_event(number, "change", head, base),
        sha=head,
        ref=f"refs/pull/{number}/merge",
    )
    assert reviewed.returncode == 0, reviewed.output[-6000:]
    api.state.add_run(
        "plan.yml", head, branch="change", event="pull_request", run_id=reviewed.run_id
    )
    git(repo, "checkout", "--quiet", "--detach", base)
    git(repo, "merge", "--quiet", "--no-ff", "-m", f"Merge pull request #{number}", "change")
    group, queued = _queue(world, number, base)
    assert queued.returncode == 0, queued.output[-6000:]
    api.state.add_run("plan.yml", group, event="merge_group", run_id=queued.run_id)

    # the queue fast-forwards main to the group's commit
    assert world.push("main") == group
    api.state.merge(number, group)
    run = world.act("apply.yml", "push", push_event(base, group), sha=group, ref="refs/heads/main")
    assert run.returncode == 0, run.output[-6000:]
    assert f"the merge group's plan.yml run {queued.run_id}" in run.output
    auto = json.loads((run.artifact("apply-auto-hosted") / "apply.json").read_text())
    assert units_of(auto)[DNS]["result"] == "applied"
    assert units_of(summary_of(run.artifact("plan-hosted")))[DNS]["gate"]["decision"] == "auto"
    assert "203.0.113.11" in json.dumps(world.state(DNS))
