"""The one redaction step (pure) and the guarded report folder's checks (files only)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tooling.core.text import redact
from tooling.errors import ToolingError, UsageError
from tooling.io import outdir
from tooling.model.policy import EnvRule, policy_from

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


def test_trivial_values_are_never_redacted_and_short_ones_only_whole_between_quotes() -> None:
    assert redact.secret_strings({"a": "yes", "b": True, "e": None, "f": "null"}) == set()
    r = redact.Redactor.of(redact.secret_strings({"d": "abc", "t": "true"}))
    assert r('true abc abcd "true" "abc" "abcd"') == f'true abc abcd "true" "{redact.MASK}" "abcd"'
    assert r(json.dumps({"pin": "abc"})) == json.dumps({"pin": redact.MASK})


def test_a_secret_containing_another_is_masked_whole() -> None:
    r = redact.Redactor.of({"canary-long-secret", "canary"})
    assert r("x canary-long-secret y canary z") == f"x {redact.MASK} y {redact.MASK} z"


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("GITHUB_TOKEN", True),
        ("VAULT_TOKEN", True),
        ("ACTIONS_ID_TOKEN_REQUEST_TOKEN", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("AWS_SESSION_TOKEN", True),
        ("ARM_CLIENT_SECRET", True),
        ("GOOGLE_CREDENTIALS", True),
        ("SOPS_AGE_KEY", True),
        ("TF_VAR_db_password", True),
        ("TF_VAR_dbpassword", True),
        ("TF_VAR_talos_secrets_yaml", True),
        ("TF_VAR_flux_ssh_private_key", True),
        ("TF_VAR_backup_passphrase", True),
        ("TF_VAR_proxmox_api_token_secret", True),
        ("TF_VAR_registry_auth", True),
        ("TF_VAR_api_key", True),
        ("TF_VAR_dns_zone_kind", False),
        ("TF_VAR_region", False),
        ("TF_VAR_FILE", False),
        ("TF_VAR_proxmox_api_token_id", False),
        ("AWS_ACCESS_KEY_ID", False),
        ("SOPS_AGE_KEY_FILE", False),
        ("GITHUB_TOKEN_URL", False),
        ("ACTIONS_ID_TOKEN_REQUEST_URL", False),
        ("GIT_AUTHOR_NAME", False),
        ("HOME", False),
        ("PATH", False),
    ],
)
def test_environment_variables_are_secret_by_their_name_never_for_being_tf_var(
    name: str, secret: bool
) -> None:
    found = redact.secret_env({name: "canary-env-value"})
    assert ("canary-env-value" in found) is secret


def test_policy_secrets_table_names_the_words_and_extra_names_and_refuses_typos() -> None:
    rule = policy_from(
        {"secrets": {"env_name_words": ["pin"], "env_names": ["TF_VAR_zone_seed"]}}
    ).secrets
    assert rule.is_secret("TF_VAR_door_pin") and rule.is_secret("TF_VAR_zone_seed")
    assert not rule.is_secret("GITHUB_TOKEN")  # the list replaces the default
    assert policy_from({}).secrets == EnvRule()
    with pytest.raises(ToolingError, match=r"\[secrets\] has unknown key\(s\) env_words"):
        policy_from({"secrets": {"env_words": ["PIN"]}})
    with pytest.raises(ToolingError, match=r"\[secrets\] env_names must be a list of names"):
        policy_from({"secrets": {"env_names": "TF_VAR_x"}})


def test_a_short_secret_environment_variable_is_named_in_one_warning_never_its_value(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    from tooling.engine import secrets

    monkeypatch.setenv("TF_VAR_door_password", "x7q")
    secrets.reset()
    try:
        assert secrets.redact('pin = "x7q"') == f'pin = "{redact.MASK}"'
        assert secrets.redact("x7q stays in words") == "x7q stays in words"
        secrets.redact("again")
    finally:
        secrets.reset()
    err = capfd.readouterr().err
    assert err.count("TF_VAR_door_password is shorter than 4 characters") == 1, err
    assert "x7q" not in err


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
    from tooling.engine import secrets

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


# --------------------------------------------------------------------------- the redaction scope

#: one canary per source of secrets (item: "redact what is secret, and nothing else")
SOURCES = {
    "sensitive output": "canary-output-3f1",
    "sensitive variable": "canary-variable-8c2",
    "sensitive attribute": "canary-attribute-4d7",
    "secret-named environment variable": "canary-env-token-9e0",
    "registered value": "canary-registered-1a5",
}


def _scope_redactor(monkeypatch: pytest.MonkeyPatch) -> None:
    from tooling.engine import secrets

    monkeypatch.setenv("VAULT_TOKEN", SOURCES["secret-named environment variable"])
    monkeypatch.setenv("TF_VAR_dns_zone_kind", "cloud")  # not secret: a plain word
    monkeypatch.setenv("TF_VAR_network", "live")
    secrets.reset()
    secrets.register(
        redact.sensitive_in_plan(
            {
                "variables": {"pw": {"value": SOURCES["sensitive variable"]}},
                "configuration": {"root_module": {"variables": {"pw": {"sensitive": True}}}},
                "planned_values": {
                    "outputs": {"o": {"sensitive": True, "value": SOURCES["sensitive output"]}}
                },
                "resource_changes": [
                    {
                        "change": {
                            "after": {"input": SOURCES["sensitive attribute"]},
                            "after_sensitive": {"input": True},
                        }
                    }
                ],
            }
        )
    )
    secrets.register(redact.secret_strings(SOURCES["registered value"]))


def _encodings(value: str) -> list[str]:
    import base64
    from urllib.parse import quote

    return [value, base64.b64encode(value.encode()).decode(), quote(f"{value}/&", safe="")]


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_redaction_scope_every_source_and_its_encodings_are_masked_names_never(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    from tooling.engine import secrets

    _scope_redactor(monkeypatch)
    try:
        forms = _encodings(SOURCES[source])
        doc = {
            "units": [
                {
                    "path": "live/cloud/dns",
                    "plan_file": "units/live/cloud/dns/plan.tfplan",
                    "dependencies": ["live/cloud/iam"],
                    "changes": [{"address": 'terraform_data.zone["cloud"]', "action": "create"}],
                    "error": " | ".join(forms),
                }
            ],
            "cloud": {"live": "kept"},  # JSON keys are names too
        }
        written = outdir.write_json(tmp_path / "summary.json", doc)
        text = written.read_text()
        comment = secrets.redact("| live/cloud/dns | " + " ".join(forms) + " |")
    finally:
        secrets.reset()
    for form in forms:
        assert form not in text and form not in comment, (source, form)
    back = json.loads(text)
    unit = back["units"][0]
    assert unit["path"] == "live/cloud/dns" and unit["dependencies"] == ["live/cloud/iam"]
    assert unit["plan_file"] == "units/live/cloud/dns/plan.tfplan"
    assert unit["changes"][0]["address"] == 'terraform_data.zone["cloud"]'
    assert back["cloud"] == {"live": "kept"}
    assert comment.startswith("| live/cloud/dns | ")
    assert unit["error"].count(redact.MASK) == 3


def test_a_secret_inside_a_unit_path_stops_the_write_and_names_the_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tooling.engine import secrets

    secrets.reset()
    secrets.register({"canary-in-a-path"})
    try:
        with pytest.raises(ToolingError, match=r"summary\.json: /units/0/path would hold a secret"):
            outdir.write_json(
                tmp_path / "summary.json", {"units": [{"path": "live/canary-in-a-path/dns"}]}
            )
    finally:
        secrets.reset()
    assert not (tmp_path / "summary.json").exists()


@pytest.mark.parametrize(
    "text",
    ["", "plain", "a&b", "<summary>x</summary>", "say \"hi\" & 'bye'", "&amp; <>\"'", "é ü 🙂"],
)
def test_the_html_form_of_a_secret_is_what_html_escape_writes(text: str) -> None:
    import html

    assert redact.html_escaped(text) == html.escape(text)
