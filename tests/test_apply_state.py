"""State is never lost nor misreported at the edges of an apply, with the real tools.

- a plan is bound to the tree it was made from (a dirty tree is recorded, and refused)
  and to its unit's state (plans swapped between units are refused);
- a state backend that dies mid-apply (moto's S3 server stopped): OpenTofu's
  ``errored.tfstate`` is copied into the plan folder, named with the runbook's
  commands, kept by the runner clean-up, and the runbook's commands put it back;
- OpenTofu killed mid-apply (local state): the record names the objects reported
  created but absent from the state, and the runbook's import command records them.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import _free_port
from infra_fixtures import (
    GIT_ENV,
    bucket_keys,
    commit_all,
    edit,
    git,
    invoke,
    local_unit,
    read_summary,
    units_by_path,
)
from test_apply import SLOW_MODULE, _apply, _plan, _popen_apply

from tooling.core.apply import binding
from tooling.io import git as gitio

pytestmark = pytest.mark.e2e


def _shown(report: Path) -> str:
    """apply.md as a reader sees it: the page escapes & < > in reasons as HTML entities."""
    return html.unescape(report.read_text())


def _tool_env(repo: Path) -> dict[str, str]:
    from tooling.io.workspace import Workspace

    return {**os.environ, **GIT_ENV, **Workspace(repo).tool_env}


def _shell(repo: Path, command: str) -> subprocess.CompletedProcess[str]:
    """A runbook command, as printed, in a shell at the repository root."""
    return subprocess.run(
        command,
        shell=True,
        cwd=repo,
        env=_tool_env(repo),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


# ------------------------------------------------------------------ item 6: a dirty tree


def test_a_plan_of_a_dirty_tree_is_recorded_as_dirty_and_apply_refuses_it(
    example_repo: Path, tmp_path: Path
) -> None:
    clean = _plan(example_repo, tmp_path / "clean", "--unit", "live/cloud/dns")
    assert clean["worktree"] == {"dirty": False, "files": [], "digest": None}
    # an uncommitted edit is planned, then reverted before the apply
    unit = "live/cloud/dns/terragrunt.hcl"
    original = (example_repo / unit).read_text()
    edit(example_repo, unit, "203.0.113.10", "203.0.113.99")
    (example_repo / "live/cloud/dns/notes.txt").write_text("untracked\n")
    out = tmp_path / "dirty"
    summary = _plan(example_repo, out, "--unit", "live/cloud/dns")
    tree = summary["worktree"]
    assert tree["dirty"] is True
    assert tree["files"] == ["live/cloud/dns/notes.txt", unit]
    _files, diff, untracked = gitio.worktree_changes(example_repo)
    assert "203.0.113.99" in diff and untracked == [("live/cloud/dns/notes.txt", b"untracked\n")]
    assert tree["digest"] == binding.worktree_digest(diff, untracked)
    (example_repo / unit).write_text(original)
    (example_repo / "live/cloud/dns/notes.txt").unlink()

    refused = invoke(example_repo, "apply", "--plans", str(out))
    assert refused.returncode == 1, refused.output
    message = refused.stderr.strip().splitlines()[-1]
    assert "uncommitted changes (live/cloud/dns/notes.txt, live/cloud/dns/terragrunt.hcl" in message
    assert tree["digest"] in message and "nothing applied" in message
    assert not (out / "apply.json").exists()
    assert not (example_repo / ".iac/state/live/cloud/dns/terraform.tfstate").exists()
    # the clean plan of the same unit applies
    code, results, output = _apply(example_repo, tmp_path / "clean")
    assert code == 0 and results["live/cloud/dns"]["result"] == "applied", output


def test_the_dirty_tree_digest_changes_with_the_difference_and_not_otherwise(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "--quiet")
    (repo / "a.hcl").write_text("a = 1\n")
    commit_all(repo, "one")
    assert gitio.worktree_changes(repo) == ([], "", [])
    (repo / "a.hcl").write_text("a = 2\n")
    first = binding.worktree_record(*gitio.worktree_changes(repo)).to_json()
    assert first["dirty"] and first["files"] == ["a.hcl"]
    assert first == binding.worktree_record(*gitio.worktree_changes(repo)).to_json()
    (repo / "b.hcl").write_text("b = 1\n")  # an untracked file changes it
    second = binding.worktree_record(*gitio.worktree_changes(repo)).to_json()
    assert second["files"] == ["a.hcl", "b.hcl"] and second["digest"] != first["digest"]
    (repo / "b.hcl").write_text("b = 2\n")  # and so does its content
    assert binding.worktree_record(*gitio.worktree_changes(repo)).digest != second["digest"]
    (repo / ".gitignore").write_text("*.log\n")
    commit_all(repo, "commit it all, and ignore logs")
    (repo / "x.log").write_text("ignored\n")  # an ignored file is not a change
    assert gitio.worktree_changes(repo) == ([], "", [])


# ------------------------------------------------------------------ item 7: swapped plans


def _swap_plans(out: Path, a: str, b: str) -> None:
    summary = read_summary(out)
    units = units_by_path(summary)
    file_a, file_b = out / str(units[a]["plan_file"]), out / str(units[b]["plan_file"])
    swap = file_a.with_suffix(".swap")
    shutil.move(file_a, swap)
    shutil.move(file_b, file_a)
    shutil.move(swap, file_b)
    units[a]["plan_sha256"], units[b]["plan_sha256"] = (
        units[b]["plan_sha256"],
        units[a]["plan_sha256"],
    )
    (out / "summary.json").write_text(json.dumps(summary))


@pytest.mark.parametrize("backend", ["local", "s3"])
def test_plans_swapped_between_two_units_are_refused_by_their_state_key(
    example_repo: Path,
    tmp_path: Path,
    backend: str,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if backend == "s3":
        from infra_fixtures import s3_state_bucket

        aws_env = request.getfixturevalue("aws_env")
        s3, bucket = s3_state_bucket(monkeypatch, aws_env, f"swap-{tmp_path.name}")
    out = tmp_path / "plans"
    _plan(example_repo, out, "--unit", "live/cloud/dns", "--unit", "live/cloud/iam")
    _swap_plans(out, "live/cloud/dns", "live/cloud/iam")

    code, results, output = _apply(example_repo, out)
    assert code == 1, output
    for unit, other in (("live/cloud/dns", "live/cloud/iam"), ("live/cloud/iam", "live/cloud/dns")):
        assert results[unit]["result"] == "refused", output
        reason = results[unit]["reason"]
        assert f"planned against the state {'' if backend == 's3' else '/'}" in reason
        assert f"{other}/terraform.tfstate ({backend} backend, workspace default)" in reason
        assert f"not this unit's {unit}/terraform.tfstate" in reason
    if backend == "s3":
        assert not any(k.endswith("terraform.tfstate") for k in bucket_keys(s3, bucket))
    else:
        assert not list((example_repo / ".iac/state").rglob("terraform.tfstate"))
    # swapped back, both apply
    _swap_plans(out, "live/cloud/dns", "live/cloud/iam")
    code, results, output = _apply(example_repo, out)
    assert code == 0, output
    assert {r["result"] for r in results.values()} == {"applied"}


def test_a_plan_made_with_local_state_is_refused_when_the_apply_runs_against_s3(
    example_repo: Path, tmp_path: Path, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from infra_fixtures import s3_state_bucket

    out = tmp_path / "plans"
    _plan(example_repo, out, "--unit", "live/cloud/dns")
    s3, bucket = s3_state_bucket(monkeypatch, aws_env, f"settings-{tmp_path.name}")
    code, results, output = _apply(example_repo, out)
    assert code == 1 and results["live/cloud/dns"]["result"] == "refused", output
    assert (
        f"planned against a local backend, this apply runs against S3 state in s3://{bucket}"
        in results["live/cloud/dns"]["reason"]
    )
    assert not (example_repo / ".iac/state/live/cloud/dns/terraform.tfstate").exists()
    # no state was written; the objects are the apply's two audit records, before and after
    # (a refused apply is recorded too)
    keys = bucket_keys(s3, bucket)
    assert len(keys) == 2 and all(k.startswith("audit/") for k in keys), keys


# ------------------------------------------------------------------ item 4: errored.tfstate


@pytest.fixture
def dying_s3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """A moto S3 server of this test's own (so it can be stopped mid-apply) and a bucket
    on it as the state backend."""
    import boto3
    from moto.server import ThreadedMotoServer

    port = _free_port()
    endpoint = f"http://127.0.0.1:{port}"
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": endpoint,
        "IAC_STATE_BUCKET": f"dying-{tmp_path.name}".lower().replace("_", "-")[:60],
        "IAC_STATE_ENDPOINT": endpoint,
        "AWS_MAX_ATTEMPTS": "2",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    s3.create_bucket(Bucket=env["IAC_STATE_BUCKET"])
    box: dict[str, Any] = {
        "server": server,
        "port": port,
        "s3": s3,
        "bucket": env["IAC_STATE_BUCKET"],
    }
    try:
        yield box
    finally:
        box["server"].stop()


def test_a_state_backend_dying_mid_apply_keeps_errored_tfstate_and_the_runbook_restores_it(
    example_repo: Path, tmp_path: Path, dying_s3: dict[str, Any]
) -> None:
    from moto.server import ThreadedMotoServer

    s3, bucket = dying_s3["s3"], dying_s3["bucket"]
    local_unit(example_repo, "slow", SLOW_MODULE, "\ninputs = {\n  seconds = 8\n}\n")
    commit_all(example_repo, "slow unit")
    out = tmp_path / "plans"
    _plan(example_repo, out, "--unit", "live/cloud/dns", "--unit", "live/cloud/slow")
    proc = _popen_apply(example_repo, out)
    deadline = time.monotonic() + 120
    while "live/cloud/slow/terraform.tfstate.tflock" not in bucket_keys(s3, bucket):
        assert time.monotonic() < deadline and proc.poll() is None, "the apply never took the lock"
        time.sleep(0.1)
    dying_s3["server"].stop()  # inside the provisioner's sleep: the state cannot be saved
    output, _ = proc.communicate(timeout=600)

    assert proc.returncode == 1, output
    record = json.loads((out / "apply.json").read_text())
    results = {u["path"]: u for u in record["units"]}
    assert results["live/cloud/dns"]["result"] == "applied"
    slow = results["live/cloud/slow"]
    assert slow["result"] == "failed"
    copy = out / "units/live/cloud/slow/errored.tfstate"
    kept = list((example_repo / "live/cloud/slow/.terragrunt-cache").rglob("errored.tfstate"))
    assert len(kept) == 1
    push = f"cd live/cloud/slow && terragrunt state push {copy}"
    assert f"wrote it to {kept[0]} (copied to {copy})" in slow["reason"]
    assert push in slow["reason"] and push in _shown(out / "apply.md")
    assert "The state could not be saved" in slow["reason"]
    # OpenTofu's cause, whole (it used to be cut mid-sentence), and the lock it left
    assert slow["reason"].endswith("connect: connection refused"), slow["reason"]
    assert "release the lock OpenTofu could not release" in slow["reason"]
    saved = json.loads(copy.read_text())
    assert [r["type"] for r in saved["resources"] if r["mode"] == "managed"] == ["terraform_data"]

    # the runner clean-up keeps the working copy that holds it (and the plan folder), and says so
    cleaned = invoke(example_repo, "clean-runner", "--plans", str(out))
    assert cleaned.returncode == 0, cleaned.output
    assert f"kept {example_repo / 'live/cloud/slow/.terragrunt-cache'}: it holds" in cleaned.output
    assert f"kept {out}: it holds {copy}" in cleaned.output
    assert kept[0].is_file() and copy.is_file()
    assert not (example_repo / "live/cloud/dns/.terragrunt-cache").exists()
    # nothing plans over it, nothing applies over it
    replanned = invoke(example_repo, "plan", "--out", str(out), "--unit", "live/cloud/slow")
    assert replanned.returncode == 2 and "errored.tfstate" in replanned.output, replanned.output
    assert copy.is_file()

    # the backend answers again (the same moto backends, on the same port)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=dying_s3["port"], verbose=False)
    server.start()
    dying_s3["server"] = server
    code, results, output = _apply(example_repo, out)
    assert code == 1 and results["live/cloud/slow"]["result"] == "refused", output
    assert (
        "an earlier apply could not save this unit's state" in results["live/cloud/slow"]["reason"]
    )
    # the runbook: release the lock OpenTofu could not release, push the state back
    lock = json.loads(
        s3.get_object(Bucket=bucket, Key="live/cloud/slow/terraform.tfstate.tflock")["Body"].read()
    )
    unlocked = _shell(
        example_repo, f"cd live/cloud/slow && terragrunt force-unlock -force {lock['ID']}"
    )
    assert unlocked.returncode == 0, unlocked.stdout + unlocked.stderr
    pushed = _shell(example_repo, push)
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    state = json.loads(
        s3.get_object(Bucket=bucket, Key="live/cloud/slow/terraform.tfstate")["Body"].read()
    )
    assert [r["type"] for r in state["resources"] if r["mode"] == "managed"] == ["terraform_data"]
    after = _plan(example_repo, tmp_path / "after", "--unit", "live/cloud/slow")
    assert units_by_path(after)["live/cloud/slow"]["status"] == "no-changes"


# ------------------------------------------------------------------ item 5: OpenTofu killed

KILLED_MODULE = """
resource "terraform_data" "first" {
  input = "made before the kill"
}

resource "terraform_data" "slow" {
  input      = "never finished"
  depends_on = [terraform_data.first]
  provisioner "local-exec" {
    command = "sleep 60"
  }
}
"""


def _tofu_applying_under(root: Path) -> int | None:
    """The pid of the OpenTofu process applying in a working copy under ``root``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            cwd = Path(os.readlink(entry / "cwd"))
        except OSError:
            continue
        tofu = argv and Path(argv[0].decode()).name == "tofu"
        if tofu and b"apply" in argv and root in cwd.parents:
            return int(entry.name)
    return None


def _apply_until_first_is_created(repo: Path, out: Path) -> tuple[subprocess.Popen[str], int]:
    """Plan and start applying ``live/cloud/killed``; (the tool, OpenTofu's pid) once
    OpenTofu has reported ``terraform_data.first`` created."""
    local_unit(repo, "killed", KILLED_MODULE)
    commit_all(repo, "a unit whose apply is killed")
    _plan(repo, out, "--unit", "live/cloud/killed")
    proc = _popen_apply(repo, out)
    raw: list[Path] = []
    deadline = time.monotonic() + 120
    while not raw or "terraform_data.first: Creation complete" not in raw[0].read_text():
        assert time.monotonic() < deadline and proc.poll() is None, "first was never created"
        time.sleep(0.2)
        raw = list((repo / ".iac/apply-output").rglob("live__cloud__killed.out"))
    pid = _tofu_applying_under(repo / "live/cloud/killed")
    assert pid is not None
    return proc, pid


def test_opentofu_killed_mid_apply_the_record_names_created_objects_absent_from_state(
    example_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "plans"
    proc, pid = _apply_until_first_is_created(example_repo, out)
    os.kill(pid, signal.SIGKILL)
    output, _ = proc.communicate(timeout=120)

    assert proc.returncode == 1, output
    state_dir = example_repo / ".iac/state/live/cloud/killed"
    assert (state_dir / "terraform.tfstate").stat().st_size == 0  # what kill -9 leaves
    record = json.loads((out / "apply.json").read_text())
    killed = record["units"][0]
    assert killed["result"] == "failed"
    log = (out / "units/live/cloud/killed/apply.log").read_text()
    first_id = re.search(r"terraform_data\.first: Creation complete after \S+ \[id=([^\]]+)\]", log)
    assert first_id is not None, log
    command = f"cd live/cloud/killed && terragrunt import terraform_data.first {first_id.group(1)}"
    assert "1 object(s) OpenTofu reported created are not in the state" in killed["reason"]
    assert (
        command in killed["reason"]
        and 'docs/runbooks.md, "OpenTofu was killed"' in killed["reason"]
    )
    named = killed["reason"].split('(docs/runbooks.md, "OpenTofu was killed")')[0]
    assert "terraform_data.slow" not in named  # never reported created
    assert command in _shown(out / "apply.md")

    # the same plans again: refused while the object is missing from the state (no duplicate)
    code, results, output = _apply(example_repo, out)
    again = results["live/cloud/killed"]
    assert code == 1 and again["result"] == "refused", output
    assert "an earlier apply of this unit was cut short" in again["reason"]
    assert command in again["reason"]
    assert (state_dir / "terraform.tfstate").stat().st_size == 0, "applied a second time"

    # the runbook: the import command, as printed, records it; the next plan does not create it again
    imported = _shell(example_repo, command)
    assert imported.returncode == 0, imported.stdout + imported.stderr
    after = _plan(example_repo, tmp_path / "after", "--unit", "live/cloud/killed")
    plan_text = (tmp_path / "after/units/live/cloud/killed/plan.txt").read_text()
    assert "terraform_data.first will be created" not in plan_text, plan_text
    assert "terraform_data.slow will be created" in plan_text
    assert units_by_path(after)["live/cloud/killed"]["status"] == "changes"


def test_clean_runner_removes_only_plan_folders_and_working_copies(
    example_repo: Path, tmp_path: Path
) -> None:
    foreign = tmp_path / "notes"
    foreign.mkdir()
    (foreign / "todo.txt").write_text("keep me\n")
    for folder, why in (
        (example_repo, "it is the repository"),
        (foreign, "it holds todo.txt, which a plan folder does not"),
    ):
        ran = invoke(example_repo, "clean-runner", "--plans", str(folder))
        assert ran.returncode == 2, ran.output
        assert f"--plans {folder}: {why}; nothing removed" in ran.stderr
    assert (foreign / "todo.txt").is_file() and (example_repo / "root.hcl").is_file()
    out = tmp_path / "plans"
    _plan(example_repo, out, "--unit", "live/cloud/dns")
    assert (example_repo / "live/cloud/dns/.terragrunt-cache").is_dir()
    ran = invoke(example_repo, "clean-runner", "--plans", str(out))
    assert ran.returncode == 0, ran.output
    assert f"removed {example_repo / 'live/cloud/dns/.terragrunt-cache'}" in ran.output
    assert not out.exists() and not (example_repo / "live/cloud/dns/.terragrunt-cache").exists()
    # local state is state, not a leftover
    _plan(example_repo, out, "--unit", "live/cloud/dns")
    assert _apply(example_repo, out)[0] == 0
    ran = invoke(example_repo, "clean-runner", "--plans", str(out))
    assert f"kept {example_repo / '.iac/state'}: it holds local state" in ran.output
    assert (example_repo / ".iac/state/live/cloud/dns/terraform.tfstate").is_file()
    assert not out.exists() and not (example_repo / "live/cloud/dns/.terragrunt-cache").exists()


def test_tool_and_opentofu_both_killed_the_next_run_refuses_instead_of_creating_twice(
    example_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "plans"
    proc, pid = _apply_until_first_is_created(example_repo, out)
    proc.send_signal(signal.SIGKILL)  # the runner torn down: the tool first, then OpenTofu
    proc.communicate(timeout=30)
    os.kill(pid, signal.SIGKILL)
    assert json.loads((out / "apply.json").read_text())["units"][0]["result"] == "running"

    code, results, output = _apply(example_repo, out)
    killed = results["live/cloud/killed"]
    assert code == 1 and killed["result"] == "refused", output
    assert "an earlier apply of this unit was cut short" in killed["reason"]
    assert "cd live/cloud/killed && terragrunt import terraform_data.first " in killed["reason"]
    state = example_repo / ".iac/state/live/cloud/killed/terraform.tfstate"
    assert state.stat().st_size == 0, "the plan was applied a second time"
