"""The pure rules behind the apply's state guards (tooling/core/apply/binding.py,
tooling/core/apply/statecheck.py), as tables; the end-to-end cases are in
tests/test_apply_state.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tooling.core.apply import binding, statecheck
from tooling.core.plan.summary import Summary, Worktree
from tooling.engine.plan import planfolder
from tooling.errors import ToolingError
from tooling.io.terragrunt import error_summary, shortened

KILLED_OUTPUT = """terraform_data.first: Creating...
terraform_data.first: Creation complete after 0s [id=5e74fb77-56c5]
module.m.terraform_data.x["a b"]: Creation complete after 1s [id=zz]
terraform_data.old: Destroying... [id=old-1]
terraform_data.old: Destruction complete after 0s
terraform_data.swap: Destruction complete after 0s
terraform_data.swap: Creation complete after 0s [id=new-2]
data.terraform_remote_state.x: Read complete after 0s
terraform_data.slow: Creating...
"""


def test_objects_reported_done_but_not_recorded_in_state_are_named_with_the_import_command() -> (
    None
):
    done = statecheck.reported_done(KILLED_OUTPUT)
    assert [(d.address, d.created, d.id) for d in done] == [
        ("terraform_data.first", True, "5e74fb77-56c5"),
        ('module.m.terraform_data.x["a b"]', True, "zz"),
        ("terraform_data.old", False, ""),
        ("terraform_data.swap", True, "new-2"),  # a replacement: destroyed, then created
    ]
    missing = statecheck.unrecorded(done, ["terraform_data.swap", "terraform_data.old"])
    assert [d.address for d in missing] == [
        "terraform_data.first",
        'module.m.terraform_data.x["a b"]',
        "terraform_data.old",
    ]
    reason = statecheck.unrecorded_reason("live/cloud/x", missing)
    assert "2 object(s) OpenTofu reported created are not in the state" in reason
    assert "cd live/cloud/x && terragrunt import terraform_data.first 5e74fb77-56c5" in reason
    assert """terragrunt import 'module.m.terraform_data.x["a b"]' zz""" in reason
    assert (
        "1 object(s) OpenTofu reported destroyed are still in the state: terraform_data.old"
        in reason
    )
    assert statecheck.unrecorded_reason("live/cloud/x", []) == ""
    assert statecheck.unrecorded(done, [d.address for d in done if d.created]) == []


ERRORED = """terraform_data.slow: Creation complete after 6s [id=923e]

Error: Failed to save state

Error saving state: failed checking for existing remote state: operation
error S3: HeadObject, exceeded maximum number of attempts, 5, request send
failed: connect: connection refused

Error: Failed to persist state to backend

The error shown above has prevented OpenTofu from writing the updated state
to the configured backend. To allow for recovery, the state has been written
to the file "errored.tfstate" in the current working directory.
"""


@pytest.mark.parametrize(
    ("copy", "lock", "expected"),
    [
        ("/p/units/u/errored.tfstate", False, "(copied to /p/units/u/errored.tfstate)"),
        (None, False, "(NOT copied into the plan folder)"),
        ("/p/c", True, "release the lock OpenTofu could not release"),
    ],
)
def test_an_errored_state_is_named_with_its_copy_the_push_command_and_the_whole_cause(
    copy: str | None, lock: bool, expected: str
) -> None:
    output = ERRORED + ("\nError: Error releasing the state lock\n" if lock else "")
    reason = statecheck.errored_state_reason("live/cloud/u", copy, "/w/errored.tfstate", output)
    assert expected in reason
    assert f"cd live/cloud/u && terragrunt state push {copy or '/w/errored.tfstate'}" in reason
    assert reason.endswith(
        "OpenTofu: Failed to save state: Error saving state: failed checking for existing remote "
        "state: operation error S3: HeadObject, exceeded maximum number of attempts, 5, request "
        "send failed: connect: connection refused"
    )
    assert ("A lock is stuck" in reason) is lock


def test_a_long_failure_is_cut_after_a_whole_sentence_and_says_so() -> None:
    text = "Error: boom\n" + "One whole sentence. " * 100
    cut = shortened(text, 300)
    assert cut.endswith("One whole sentence. … (cut: the whole text is in the log)")
    assert len(cut) < 300 + 60
    assert shortened("short", 300) == "short"
    assert error_summary("Error: x\n" + "word " * 400).endswith(
        "(cut: the whole text is in the log)"
    )


@pytest.mark.parametrize(
    ("worktree", "refused"),
    [
        ({"dirty": False, "files": [], "digest": None}, None),
        (
            {"dirty": True, "files": ["a", "b", "c", "d"], "digest": "sha256:ab"},
            "uncommitted changes (a, b, c and 1 more; sha256:ab), not from commit 0123456789ab",
        ),
        (None, "does not say whether the plans were made from a clean tree"),
    ],
)
def test_apply_refuses_plans_of_a_dirty_tree_or_of_an_unknown_one(
    worktree: dict[str, object] | None, refused: str | None
) -> None:
    summary = Summary(
        head="0123456789abcdef",
        worktree=Worktree.from_json(worktree) if worktree is not None else None,
    )
    why = binding.dirty_refusal(summary, "p/summary.json", "p")
    if refused is None:
        assert why is None
    else:
        assert why is not None and refused in why and why.startswith("p/summary.json: ")
        assert "\n" not in why and "`invoke plan --out p`" in why


def test_a_summary_whose_tree_is_neither_clean_nor_dirty_is_refused_when_it_is_read(
    tmp_path: Path,
) -> None:
    """``{"dirty": "no"}``: no typed summary is made of it, so no apply reaches its units."""
    path = tmp_path / "p" / "summary.json"
    path.parent.mkdir()
    doc = {"version": 1, "base": None, "head": "0" * 40, "executor": None, "tools": {}}
    path.write_text(
        json.dumps({**doc, "units": [], "worktree": {"dirty": "no", "files": [], "digest": None}})
    )
    with pytest.raises(ToolingError) as refused:
        planfolder.read_summary(path)
    why = str(refused.value)
    assert why.startswith(f"{path}: ") and "\n" not in why
    assert "at worktree/dirty: expected boolean" in why


@pytest.mark.parametrize(
    ("backend", "key", "bound"),
    [
        (
            binding.Backend("s3", {"key": "live/a/terraform.tfstate"}, "default"),
            "live/a/terraform.tfstate",
            True,
        ),
        (
            binding.Backend("s3", {"key": "live/b/terraform.tfstate"}, "default"),
            "live/a/terraform.tfstate",
            False,
        ),
        (
            binding.Backend("s3", {"key": "live/a/terraform.tfstate"}, "other"),
            "live/a/terraform.tfstate",
            False,
        ),
        (
            binding.Backend("local", {"path": "/r/.iac/state/live/a/terraform.tfstate"}, "default"),
            "live/a/terraform.tfstate",
            True,
        ),
        (
            binding.Backend(
                "local", {"path": "/r/.iac/state/xlive/a/terraform.tfstate"}, "default"
            ),
            "live/a/terraform.tfstate",
            False,
        ),
        (
            binding.Backend("http", {"address": "https://x"}, "default"),
            "live/a/terraform.tfstate",
            False,
        ),
        (None, "live/a/terraform.tfstate", False),
        (binding.Backend("s3", {"key": "live/a/terraform.tfstate"}, "default"), None, False),
    ],
)
def test_a_plan_is_bound_to_its_units_state_key(
    backend: binding.Backend | None, key: str | None, bound: bool
) -> None:
    bucket = "bk" if backend is not None and backend.type == "s3" else None
    if backend is not None and backend.type == "s3":
        backend = binding.Backend("s3", {**backend.config, "bucket": "bk"}, backend.workspace)
    assert (binding.backend_problem("units/a/plan.tfplan", backend, key, bucket) is None) is bound


@pytest.mark.parametrize(
    ("planned", "bucket", "said"),
    [
        (
            ("local", None),
            "bk",
            "planned against a local backend, this apply runs against S3 state in s3://bk",
        ),
        (
            ("s3", "other"),
            "bk",
            "planned against s3://other, this apply runs against S3 state in s3://bk",
        ),
        (("s3", "bk"), None, "planned against s3://bk, this apply runs against local state"),
    ],
)
def test_a_plan_made_with_other_state_settings_is_refused(
    planned: tuple[str, str | None], bucket: str | None, said: str
) -> None:
    kind, planned_bucket = planned
    config = {"key": "live/a/terraform.tfstate", "path": "/r/.iac/state/live/a/terraform.tfstate"}
    if planned_bucket:
        config["bucket"] = planned_bucket
    backend = binding.Backend(kind, config, "default")
    why = binding.backend_problem("p", backend, "live/a/terraform.tfstate", bucket)
    assert why is not None and said in why and "re-plan" in why


def test_msgpack_and_protobuf_readers_decode_a_backend_message() -> None:
    packed = b"\x83\xa3key\xb8live/a/terraform.tfstate\xa6bucket\xa2bk\xa9endpoints\x81\xa2s3\xc0"
    config = b"\x0a" + bytes([len(packed)]) + packed  # DynamicValue.msgpack
    backend = b"\x0a\x02s3" + b"\x12" + bytes([len(config)]) + config + b"\x1a\x07default"
    plan = b"\x08\x03" + b"\x6a" + bytes([len(backend)]) + backend + b"\xa2\x01\x00"
    found = binding.plan_backend(plan)
    assert found == binding.Backend(
        "s3",
        {"key": "live/a/terraform.tfstate", "bucket": "bk", "endpoints": {"s3": None}},
        "default",
    )
    assert binding.plan_backend(b"\x08\x03") is None
    with pytest.raises(binding.PlanFormatError):
        binding.plan_backend(b"\x6a\x20")


def test_the_runbook_sections_the_record_names_exist_with_the_commands_the_tests_run() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "runbooks.md").read_text()
    for ref in (statecheck.RUNBOOK_ERRORED, statecheck.RUNBOOK_KILLED):
        title = ref.split('"')[1]
        assert f"\n## {title}\n" in text, title
    done = statecheck.Done("terraform_data.first", True, "5e74fb77-56c5-b411-72f7-4261c0d3bb54")
    # the commands tests/test_apply_state.py runs, in the form the record prints them
    assert statecheck.import_command("live/cloud/killed", done) in text
    push = statecheck.state_push_command(
        "live/cloud/slow", "$DIR/units/live/cloud/slow/errored.tfstate"
    )
    assert push.replace("'", "") in text.replace('"', "")
    assert "cd live/cloud/slow && terragrunt force-unlock -force LOCK_ID" in text


def test_an_error_summary_drops_terminal_colour_codes_and_keeps_the_error() -> None:
    coloured = (
        "\x1b[31m╷\x1b[0m\x1b[0m\n\x1b[31m│\x1b[0m \x1b[0m\x1b[1m\x1b[31mError: \x1b[0m\x1b[0m"
        "\x1b[1mFailed to read the given file as a state or plan file\x1b[0m\n\x1b[31m╵\x1b[0m\n"
    )
    assert error_summary(coloured) == (
        "Error: Failed to read the given file as a state or plan file"
    )
