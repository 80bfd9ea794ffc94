"""The one redaction step (pure) and the guarded report folder's checks (files only)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tooling.core import redact
from tooling.errors import ToolingError, UsageError
from tooling.io import outdir

PEM = "-----BEGIN KEY-----\ncanary-multi-one\ncanary-multi-two\n-----END KEY-----\n"


@pytest.mark.parametrize(
    ("value", "leaked"),
    [
        ("canary-plain-1", ["canary-plain-1"]),
        ({"user": "admin", "password": "canary-map-2"}, ["canary-map-2", "admin"]),
        (["canary-list-3", "canary-list-4"], ["canary-list-3", "canary-list-4"]),
        (PEM, ["canary-multi-one", "canary-multi-two", "-----BEGIN KEY-----"]),
        ({"nested": [{"deep": "canary-deep-5"}]}, ["canary-deep-5"]),
    ],
)
def test_every_shape_of_a_secret_is_redacted_in_plain_json_and_heredoc_text(
    value: object, leaked: list[str]
) -> None:
    r = redact.Redactor.of(redact.secret_strings(value))
    texts = [
        f"input = {value!r}",
        json.dumps({"v": value}),
        json.dumps({"v": value}, indent=2, ensure_ascii=False),
        "pem = <<-EOT\n" + "".join(f"    {line}\n" for line in PEM.splitlines()) + "EOT\n",
    ]
    for text in texts:
        out = r(text)
        for canary in leaked:
            assert canary not in out, (text, out)


def test_short_and_trivial_values_are_not_redacted() -> None:
    assert redact.secret_strings({"a": "yes", "b": True, "c": 1, "d": "abc", "e": None}) == set()
    assert redact.Redactor.of({"true", "abc"})("true abc") == "true abc"


def test_a_secret_containing_another_is_masked_whole() -> None:
    r = redact.Redactor.of({"canary-long-secret", "canary"})
    assert r("x canary-long-secret y canary z") == f"x {redact.MASK} y {redact.MASK} z"


def test_secret_environment_variables_by_name() -> None:
    env = {
        "GITHUB_TOKEN": "ghp_canarytoken1",
        "TF_VAR_db_password": "canary-tfvar",
        "VAULT_TOKEN": "hvs.canary",
        "AWS_SECRET_ACCESS_KEY": "canary-aws-secret",
        "AWS_ACCESS_KEY_ID": "AKIAPUBLICID",
        "HOME": "/root",
        "PATH": "/usr/bin",
    }
    found = redact.secret_env(env)
    assert {"ghp_canarytoken1", "canary-tfvar", "hvs.canary", "canary-aws-secret"} <= found
    assert "AKIAPUBLICID" not in found and "/root" not in found


def test_sensitive_values_of_a_plan_document() -> None:
    plan = {
        "variables": {"db_password": {"value": "canary-var"}, "region": {"value": "eu-west-1"}},
        "configuration": {
            "root_module": {"variables": {"db_password": {"sensitive": True}, "region": {}}}
        },
        "planned_values": {
            "outputs": {
                "kubeconfig": {"sensitive": True, "value": "canary-out"},
                "endpoint": {"sensitive": False, "value": "https://k8s"},
            }
        },
        "prior_state": {"values": {"outputs": {"old": {"sensitive": True, "value": "canary-old"}}}},
        "resource_changes": [
            {
                "change": {
                    "after": {"input": {"pw": "canary-attr", "name": "web"}},
                    "after_sensitive": {"input": {"pw": True}},
                }
            }
        ],
    }
    found = redact.sensitive_in_plan(plan)
    assert {"canary-var", "canary-out", "canary-old", "canary-attr"} <= found
    assert not {"eu-west-1", "https://k8s", "web"} & found


def test_add_mask_lines_one_per_line_of_a_multi_line_value() -> None:
    lines = redact.mask_commands({PEM, "canary-plain"})
    assert "::add-mask::canary-multi-one" in lines and "::add-mask::canary-multi-two" in lines
    assert "::add-mask::canary-plain" in lines
    assert all("\n" not in line for line in lines)


# --------------------------------------------------------------------------- the guarded folder


def _claim(folder: Path, root: Path) -> outdir.ReportDir:
    return outdir.ReportDir.claim(folder, outdir.PLAN_LAYOUT, root=root)


def test_a_foreign_file_at_any_depth_refuses_the_folder_and_nothing_is_deleted(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    (out / "units" / "mine").mkdir(parents=True)
    (out / "summary.json").write_text("{}")
    (out / "units" / "mine" / "precious.txt").write_text("keep me")
    with pytest.raises(UsageError, match=r"units/mine/precious\.txt"):
        _claim(out, tmp_path / "repo")
    assert (out / "units" / "mine" / "precious.txt").read_text() == "keep me"
    assert (out / "summary.json").exists()


@pytest.mark.parametrize("where", ["repo", "parent", "home", "root"])
def test_the_repository_its_parents_home_and_root_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    repo = tmp_path / "work" / "repo"
    repo.mkdir(parents=True)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    folder = {"repo": repo, "parent": tmp_path / "work", "home": home, "root": Path("/")}[where]
    with pytest.raises(UsageError, match="name a new or empty folder"):
        _claim(folder, repo)


def test_a_symlink_inside_the_folder_is_foreign_and_never_followed(tmp_path: Path) -> None:
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "plan.txt").write_text("keep")
    out = tmp_path / "out"
    out.mkdir()
    (out / "units").symlink_to(precious)
    with pytest.raises(UsageError, match="units"):
        _claim(out, tmp_path / "repo")
    assert (precious / "plan.txt").read_text() == "keep"


def test_a_second_claim_refuses_while_the_first_holds_the_folder_then_succeeds(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    first = _claim(out, tmp_path / "repo")
    first.reset()
    first.write_text("comment.md", "first")
    with pytest.raises(ToolingError, match="another run is writing to this folder"):
        _claim(out, tmp_path / "repo")
    assert (out / "comment.md").read_text() == "first"
    first.close()
    with _claim(out, tmp_path / "repo") as second:
        second.reset()
    assert not (out / "comment.md").exists()


def test_reset_keeps_the_lock_and_removes_only_report_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "units" / "live" / "cloud" / "dns").mkdir(parents=True)
    (out / "units" / "live" / "cloud" / "dns" / "plan.txt").write_text("old")
    (out / "summary.json").write_text("{}")
    with _claim(out, tmp_path / "repo") as folder:
        folder.reset()
        assert sorted(p.name for p in out.iterdir()) == [outdir.LOCK_NAME]


def test_writes_are_atomic_and_redacted(tmp_path: Path) -> None:
    from tooling.commands import secrets

    secrets.register({"canary-written-secret"})
    try:
        path = outdir.write_json(
            tmp_path / "a" / "doc.json", {"x": "pre canary-written-secret post"}
        )
        assert "canary-written-secret" not in path.read_text()
        assert json.loads(path.read_text())["x"] == f"pre {redact.MASK} post"
        assert [p.name for p in path.parent.iterdir()] == ["doc.json"]  # no temporary file left
    finally:
        secrets.reset()
