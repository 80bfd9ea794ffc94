"""The reviewer's page on a mixed plan: what it says without opening a fold, what the
folds hold, and how a report too large for one comment is split.

The mixed plan (tests/review_mixed.py) has creates, updates, a replacement with
its reason, a destroy, a manual gate, a failure, drift, a no-change unit and a
module bump. Each report is rendered as GitHub renders it (cmark-gfm and GitHub's
alerts, tests/github_markdown.py) and asserted on; the screenshots show that HTML in
headless Chromium.
"""

from __future__ import annotations

import dataclasses
import html
import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from ghserver import GitHubAPI
from github_markdown import PAGE, render
from infra_fixtures import commit_all, invoke
from markdown_it import MarkdownIt
from review_mixed import DEPENDENTS, POLICY, UPSTREAMS, many, mixed, plan, unit
from schema_check import apply_doc, apply_unit, summary_doc, summary_unit
from test_report_render import _png_pixels

from tooling.commands import ci as flow
from tooling.core.ci import steps
from tooling.core.plan.planjson import ResourceChange
from tooling.core.plan.results import with_gates
from tooling.core.plan.summary import PlannedAgainst, Summary
from tooling.core.report import comment, pages, review
from tooling.core.text import markdown
from tooling.io.forge import Forge

SHA = "0123456789abcdef" * 2 + "01234567"
LINKS = review.RunLinks("https://github.com", "example-org/infrastructure", SHA, "4242")


def _mixed_report(**extra: object) -> str:
    return comment.render(
        mixed(),
        head=SHA,
        base="b" * 40,
        links=LINKS,
        dependents=DEPENDENTS,
        upstreams=UPSTREAMS,
        **extra,  # type: ignore[arg-type]
    )


def _html(text: str) -> str:
    return render(text)


def _outside_folds(text: str) -> str:
    """The page a reviewer sees without opening a fold."""
    out, depth = [], 0
    for line in text.splitlines():
        depth += line.count("<details>")
        if depth == 0:
            out.append(line)
        depth -= line.count("</details>")
    return "\n".join(out)


def _row(text: str, path: str) -> list[str]:
    line = next(x for x in text.splitlines() if x.startswith(f"| `{path}`"))
    return [c.strip() for c in line.strip("|").split(" | ")]


# --------------------------------------------------------------------------- outside the folds


def test_the_first_line_gives_the_totals_in_words_and_the_sign_of_a_failure() -> None:
    first = _mixed_report().splitlines()[1]
    assert first.startswith(
        "❌ **Plan: 3 to add, 3 to change, 1 to replace, 1 to destroy** · 6 unit(s) planned"
    )
    assert "±" not in _mixed_report()
    safe = [r for r in mixed() if r.path == "live/cloud/registry"]
    assert comment.render(safe).splitlines()[1].startswith("✅ **Plan: 2 to add, 0 to change")
    destroys = [r for r in mixed() if r.path == "live/cloud/legacy"]
    assert comment.render(destroys).splitlines()[1].startswith("⚠️ **Plan: 0 to add")


def test_each_unit_row_shows_its_gate_with_the_reason_its_module_change_and_status() -> None:
    text = _outside_folds(_mixed_report())
    _unit, _where, add, change, repl, destroy, module, status, gate = _row(text, "live/cluster/vms")
    assert (add, change, repl, destroy) == ("1", "3", "0", "0")
    assert module == "terraform-proxmox v1.1.0 → v1.2.0"
    assert status == "changes"
    assert gate == "manual: touches 3 nodes/VMs: node-1, node-2, node-3 (terraform_data.vm)"
    assert _row(text, "live/cloud/registry")[-1] == "auto"
    html = _html(text)
    assert "<td>terraform-proxmox v1.1.0 → v1.2.0</td>" in html


def test_the_page_says_who_approves_a_manual_unit_and_how() -> None:
    text = _outside_folds(_mixed_report(plans_dir="plans"))
    waiting = next(x for x in text.splitlines() if x.startswith("**Waiting for a human"))
    for path in ("live/cloud/dns", "live/cloud/legacy", "live/cluster/vms"):
        assert f"`{path}`" in waiting
    assert "`live/cloud/registry`" not in waiting
    assert "the `infra-manual` environment's review on the apply run" in text
    assert "`invoke apply --plans plans --approve-manual`" in text
    in_ci = _outside_folds(_mixed_report(plans_dir=None))
    assert (
        "- Approve locally: download the run's plan artifact to DIR, then "
        "`invoke apply --plans DIR --approve-manual`."
    ) in in_ci.splitlines()


def test_the_terminal_table_has_a_gate_column() -> None:
    lines = comment.table(mixed()).splitlines()
    assert lines[0].split()[-1] == "gate"
    vms = next(x for x in lines if x.startswith("live/cluster/vms"))
    assert vms.split()[-2:] == ["changes", "manual"]


def test_the_dependents_replanned_after_an_apply_are_named_with_their_trigger() -> None:
    text = _outside_folds(_mixed_report())
    assert "**What happens next** (dependents re-planned after their upstream applies):" in text
    assert (
        "- after `live/cluster/vms` applies: `live/cluster/os`, "
        "`live/cluster/gitops` (reads `live/cluster/os`)"
    ) in text.splitlines()


def test_a_replacement_names_the_attributes_that_force_it() -> None:
    warn = [x for x in _outside_folds(_mixed_report()).splitlines() if "♻️" in x]
    assert warn == [
        '> - ♻️ **replace** in `live/cloud/dns` (1): `terraform_data.record["www"]`. Why: '
        "`input` forces replacement (an attribute that cannot be updated in place changed)"
    ]


def _alerts(page: str, kind: str) -> list[str]:
    """The bodies of the page's ``kind`` alerts (GitHub's markup), after their title."""
    opening = f'<div class="markdown-alert markdown-alert-{kind}">'
    title = f'<p class="markdown-alert-title">{kind.capitalize()}</p>\n'
    bodies = [b.split("</div>")[0] for b in page.split(opening)[1:]]
    assert all(b.startswith(title) for b in bodies), bodies
    return [b.removeprefix(title) for b in bodies]


def _alert(page: str, kind: str) -> str:
    """The body of the page's one ``kind`` alert."""
    (body,) = _alerts(page, kind)
    return body


@pytest.mark.parametrize(
    ("text", "page"),
    [
        (
            "> [!TIP]\n> one\n> two",
            '<div class="markdown-alert markdown-alert-tip"><p class="markdown-alert-title">Tip'
            "</p>\n<p>one\ntwo</p>\n</div>",
        ),
        (  # the marker alone in its paragraph leaves no empty one
            "> [!IMPORTANT]\n>\n> - a\n>   > b",
            '<div class="markdown-alert markdown-alert-important"><p class="markdown-alert-title">'
            "Important</p>\n<ul>\n<li>a\n<blockquote>\n<p>b</p>\n</blockquote>\n</li>\n</ul>\n</div>",
        ),
        ("> [!DANGER]\n> x", "<blockquote>\n<p>[!DANGER]\nx</p>\n</blockquote>"),
        ("> x\n> [!NOTE]", "<blockquote>\n<p>x\n[!NOTE]</p>\n</blockquote>"),
    ],
)
def test_the_test_renderer_makes_an_alert_only_of_a_quote_opening_with_a_known_marker(
    text: str, page: str
) -> None:
    assert _html(text).strip() == page


def test_the_destroys_warning_renders_as_githubs_alert_with_one_list_item_per_destroy() -> None:
    page = _html(_mixed_report())
    assert "[!WARNING]" not in page
    assert "<blockquote>" not in page  # the only quote in the report is the alert
    warning = _alert(page, "warning")
    assert warning.startswith("<p><strong>Destroys and replacements:</strong></p>\n<ul>\n")
    items = re.findall(r"<li>(.*?)</li>", warning, re.DOTALL)
    assert items == [
        "🗑️ <strong>destroy</strong> (unit deleted) in <code>live/cloud/legacy</code> (1): "
        "<code>terraform_data.old</code>",
        "♻️ <strong>replace</strong> in <code>live/cloud/dns</code> (1): "
        "<code>terraform_data.record[&quot;www&quot;]</code>. Why: <code>input</code> forces "
        "replacement (an attribute that cannot be updated in place changed)",
    ]

    first = pages.paginate(
        "", [("", comment.render(many(200), head=SHA, budget=10**9))], budget=65_536
    )[0]
    items = re.findall(r"<li>(.*?)</li>", _alert(_html(first), "warning"))
    assert items == [
        f"🗑️ <strong>delete</strong> in <code>live/cluster/u{i:03d}</code> (1): "
        f"<code>terraform_data.gone{i}</code>"
        for i in range(0, 200, 10)
    ]


def test_every_alert_the_report_writes_renders_as_githubs_alert_not_as_its_marker() -> None:
    results = [
        dataclasses.replace(r, mocked_dependencies=("live/cluster/network",))
        if r.path == "live/cluster/vms"
        else r
        for r in mixed()
    ]
    embedded = PlannedAgainst("sandbox", "local", embedded_default=True, description="")
    text = comment.render(results, settings=embedded, interrupted=True)
    for marker in ("[!CAUTION]", "[!NOTE]", "[!WARNING]"):
        assert f"\n> {marker}\n" in text
    page = _html(text)
    assert "[!" not in page and "<blockquote>" not in page
    assert _alert(page, "caution").startswith("<p><strong>Interrupted:</strong> the run was")
    embedded, mocked = _alerts(page, "note")
    assert embedded.startswith("<p>Planned on the <strong>embedded default</strong>:")
    assert mocked.startswith("<p><strong>Planned against mock outputs</strong>")
    assert "<li><code>live/cluster/vms</code>: mocked <code>live/cluster/network</code></li>" in (
        mocked
    )
    assert "<li>" in _alert(page, "warning")


def test_changes_outside_opentofu_have_their_own_section() -> None:
    text = _outside_folds(_mixed_report())
    block = text.split("**🔀 Changes outside OpenTofu**")[1].split("\n\n")[1]
    assert block == "- `live/cluster/vms`: update outside OpenTofu (1): `terraform_data.bridge`"
    warnings = text.split("> **Destroys and replacements:**")[1].split("\n\n")[0]
    assert "bridge" not in warnings


def test_in_actions_the_page_links_the_commit_the_run_logs_and_the_artifact() -> None:
    env = {
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": "example-org/infrastructure",
        "GITHUB_RUN_ID": "4242",
        "GITHUB_SHA": "f" * 40,
    }
    links = review.RunLinks.from_env(env, SHA)
    assert links == LINKS
    html = _html(_outside_folds(_mixed_report()))
    base = "https://github.com/example-org/infrastructure"
    assert f'<a href="{base}/commit/{SHA}"><code>{SHA[:12]}</code></a>' in html
    assert f'<a href="{base}/actions/runs/4242">workflow run logs</a>' in html
    assert f'<a href="{base}/actions/runs/4242#artifacts">plan artifact</a>' in html
    assert review.RunLinks.from_env({}) is None  # outside Actions: the bare SHA
    assert f"Planned at `{SHA[:12]}`" in comment.render(mixed(), head=SHA)


def test_a_failure_is_named_with_its_first_line_outside_the_folds() -> None:
    text = _outside_folds(_mixed_report())
    assert (
        "- `live/cluster/network` (**error**): Error: Invalid value for variable"
        in text.splitlines()
    )


# --------------------------------------------------------------------------- inside the folds


def test_plan_text_is_in_diff_fences_with_the_markers_in_the_first_column() -> None:
    text = _mixed_report()
    vms = text.split("<summary><code>live/cluster/vms</code>")[1].split("</details>")[0]
    fenced = vms.split("```diff\n")[1].split("\n```")[0].splitlines()
    assert '!   resource "terraform_data" "vm" {' in fenced
    assert "!           memory = 4096 -> 8192" in fenced
    assert '+   resource "terraform_data" "extra" {' in fenced
    assert '        id     = "5f1c"' in fenced  # unchanged lines keep their place
    dns = text.split("<summary><code>live/cloud/dns</code>")[1].split("</details>")[0]
    assert '-/+ resource "terraform_data" "record" {' in dns
    assert '<pre lang="diff"><code>' in _html(vms.split("\n\n", 2)[2])  # GitHub colours it


def test_units_without_changes_are_one_line_not_a_fold() -> None:
    text = _mixed_report()
    assert "<code>live/cloud/iam</code>" not in text
    assert text.rstrip().splitlines()[-1] == "**No changes** (1): `live/cloud/iam`"


def test_the_apply_order_graph_is_a_collapsed_mermaid_block_with_gates() -> None:
    text = _mixed_report()
    graph = text.split("<summary>Apply order (graph)</summary>")[1].split("</details>")[0]
    assert "```mermaid\nflowchart LR" in graph
    order = [x.split('"')[1] for x in graph.splitlines() if '["' in x]
    assert order == [
        "1. live/cloud/dns<br/>gate: manual",
        "2. live/cloud/registry<br/>gate: auto",
        "3. live/cloud/legacy<br/>gate: manual",
        "4. live/cluster/network<br/>failed",
        "5. live/cluster/vms<br/>gate: manual",
    ]
    assert "u_live_cluster_network --> u_live_cluster_vms" in graph
    assert "Apply order" not in _outside_folds(text).replace("<summary>Apply order", "")


# --------------------------------------------------------------------------- size


def test_two_hundred_units_split_into_follow_ups_keeping_every_gate_and_destroy() -> None:
    results = many(200)
    full = comment.render(results, head=SHA, budget=10**9)
    assert len(full) > 3 * 65_536
    bodies = pages.paginate("", [("", full)], budget=65_536)
    assert len(bodies) >= 4
    assert all(len(b) <= 65_536 for b in bodies)
    first = bodies[0]
    assert first.startswith(comment.MARKER)
    for r in results:  # every row, every gate reason and every destroy on the first comment
        assert r.gate is not None
        if r.gate.decision == "manual":
            assert f"| `{r.path}` |" in first and "; ".join(r.gate.reasons) in first
    for i in range(0, 200, 10):
        assert f"`terraform_data.gone{i}`" in first.split("<details>")[0]
    assert "continues in" in first
    for n, body in enumerate(bodies[1:], 2):
        assert body.startswith(pages.PART.format(n=n))
        assert body.count("```") % 2 == 0  # no fence cut
        assert body.count("<details>") == body.count("</details>")  # no fold cut
    folds = sum(b.count("<summary><code>") for b in bodies)
    assert folds == 200  # every unit's fold, once


def test_a_fold_larger_than_a_comment_loses_its_plan_text_not_half_a_fence() -> None:
    (big,) = many(1)
    text = comment.render([big], budget=10**9).replace(
        "```diff\n", "```diff\n" + "+ filler line\n" * 8_000
    )
    bodies = pages.paginate("", [("", text)], budget=65_536)
    assert all(len(b) <= 65_536 for b in bodies)
    assert "_Plan text too large for a comment: it is in the plan artifact._" in "".join(bodies)
    assert "".join(bodies).count("```") % 2 == 0


def _forge(api: GitHubAPI, pr: int) -> Forge:
    return Forge(api.token, "example-org/infrastructure", api.url, pr_number=pr)


def test_follow_up_comments_are_edited_in_place_and_retired_when_the_report_shrinks(
    github_api: GitHubAPI, tmp_path: Path
) -> None:
    pr = github_api.state.add_pull("feature")["number"]
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": pr, "head": {"sha": SHA}}}))
    env = {
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": "example-org/infrastructure",
        "GITHUB_RUN_ID": "42",
        "GITHUB_EVENT_PATH": str(event),
    }
    matrix = json.dumps({"include": [{"executor": "lan", "runs_on": ["lan"], "units": []}]})

    def post(results: list[object]) -> None:
        folder = tmp_path / "plans" / "plan-lan"
        folder.mkdir(parents=True, exist_ok=True)
        text = comment.render(results, head=SHA, budget=10**9)  # type: ignore[arg-type]
        (folder / "comment.md").write_text(text)
        flow.plan_comment(
            plans=tmp_path / "plans", matrix=matrix, forge=_forge(github_api, pr), environ=env
        )

    post(many(200))
    first = github_api.state.comments_on(pr)
    assert len(first) >= 4 and all(len(c["body"]) <= 65_536 for c in first)
    assert first[0]["body"].startswith(steps.PLAN_MARKER)
    post(many(200))  # the next push: the same comments, edited
    again = github_api.state.comments_on(pr)
    assert [c["id"] for c in again] == [c["id"] for c in first]
    post(many(3))  # a smaller report: one comment, the follow-ups say they are unused
    last = github_api.state.comments_on(pr)
    assert [c["id"] for c in last] == [c["id"] for c in first]
    assert "<summary><code>live/cluster/u002</code>" in last[0]["body"]
    for c in last[1:]:
        assert "no longer used" in c["body"] and "<details>" not in c["body"]


# --------------------------------------------------------------------------- screenshots


def _shoot(html: str, shot: Path, height: int) -> tuple[int, int, list[bytes]]:
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("chromium is not installed (./dev test installs it with apt-get as root)")
    page = shot.with_suffix(".html")
    page.write_text(PAGE.format(body=html), encoding="utf-8")
    subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--window-size=1000,{height}",
            f"--screenshot={shot}",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )
    return _png_pixels(shot.read_bytes())


@pytest.mark.parametrize(
    ("name", "text"),
    [
        pytest.param("mixed", lambda: _mixed_report(), id="mixed"),
        pytest.param(
            "200-units",
            lambda: pages.paginate(
                "", [("", comment.render(many(200), head=SHA, budget=10**9))], budget=65_536
            )[0],
            id="200-units-first-screen",
        ),
    ],
)
def test_the_reviewers_page_renders_in_headless_chromium(
    name: str, text: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = text()  # type: ignore[operator]
    html = _html(body)
    assert "<table>" in html
    shot = tmp_path / f"review-{name}.png"
    width, height, rows = _shoot(html, shot, 1400)
    assert (width, height) == (1000, 1400)
    colours = {row[i : i + 3] for row in rows[::8] for i in range(0, len(row), 48)}
    assert len(colours) > 8, "the screenshot is (nearly) uniform: nothing was rendered"
    with capsys.disabled():
        print(f"\nreviewer's page screenshot: {shot}")


#: emoji as the report writes them: astral ones, a symbol with the emoji variation
#: selector (U+FE0F), and the two that are emoji by default (✅, ❌)
_EMOJI = re.compile(r"[\U0001F000-\U0001FFFF]\uFE0F?|[\u2300-\u27BF]\uFE0F|[\u2705\u274C]")


def test_the_reports_emoji_render_in_colour_not_as_empty_boxes(tmp_path: Path) -> None:
    emoji = sorted(set(_EMOJI.findall(_mixed_report())))
    assert len(emoji) >= 3, emoji  # the mixed report's failure, destroy, replace signs...
    band = 80
    html = "".join(
        f'<div style="position:absolute;top:{i * band}px;left:0;font-size:48px;'
        f'line-height:{band}px">{e}</div>'
        for i, e in enumerate(emoji)
    )
    width, _height, rows = _shoot(html, tmp_path / "emoji.png", band * len(emoji))
    channels = len(rows[0]) // width
    for i, e in enumerate(emoji):
        coloured = sum(
            1
            for row in rows[i * band : (i + 1) * band]
            for x in range(0, len(row), channels)
            if max(row[x : x + 3]) - min(row[x : x + 3]) > 60
        )
        # an empty box (no colour emoji font) or a black glyph has no coloured pixel
        assert coloured > 100, (
            f"{e!r} (U+{ord(e[0]):04X}) renders without colour ({coloured} coloured pixels): "
            "install a colour emoji font (./dev test installs fonts-noto-color-emoji as root)"
        )


# --------------------------------------------------------------------------- declared attributes

POLICY_TOML = """
[sensitive_attributes]
docker_container = ["env"]
kubernetes_deployment = ["spec.container.env.value"]
"""
CONTAINER_PLAN = {
    "resource_changes": [
        {
            "address": "docker_container.app",
            "type": "docker_container",
            "change": {
                "actions": ["update"],
                "before": {"env": ["DB_PASSWORD=hunter2-old"], "image": "app:1"},
                "after": {"env": ["DB_PASSWORD=hunter2-new"], "image": "app:2"},
            },
        },
        {
            "address": "kubernetes_deployment.web",
            "type": "kubernetes_deployment",
            "change": {
                "actions": ["update"],
                "before": None,
                "after": {
                    "spec": [{"container": [{"env": [{"name": "K", "value": "s3cr3t-k8s"}]}]}]
                },
            },
        },
    ]
}
CONTAINER_TEXT = """  # docker_container.app will be updated in-place
  ~ resource "docker_container" "app" {
      ~ env   = [
          - "DB_PASSWORD=hunter2-old",
          + "DB_PASSWORD=hunter2-new",
        ]
      ~ image = "app:1" -> "app:2"
    }
  ~ resource "kubernetes_deployment" "web" {
              + value = "s3cr3t-k8s"
    }
"""


def test_attributes_declared_in_policy_toml_are_redacted_in_the_plan_text() -> None:
    import tomllib

    from tooling.core.plan import sensitive
    from tooling.core.text.redact import Redactor
    from tooling.model.policy import policy_from

    policy = policy_from(tomllib.loads(POLICY_TOML))
    found = sensitive.values_in_plan(CONTAINER_PLAN, policy.sensitive_attributes)
    (vms,) = [r for r in mixed() if r.path == "live/cluster/vms"]
    shown = Redactor.of(found)(CONTAINER_TEXT)
    text = comment.render([dataclasses.replace(vms, plan_text=shown)])
    fold = text.split("```diff\n")[1].split("\n```")[0]
    for secret in ("hunter2-old", "hunter2-new", "s3cr3t-k8s"):
        assert secret not in text
    assert '-           "(redacted)",' in fold.splitlines()
    assert '!       image = "app:1" -> "app:2"' in fold.splitlines()  # undeclared: shown
    assert sensitive.values_in_plan(CONTAINER_PLAN, {}) == set()


def test_a_malformed_sensitive_attributes_table_is_refused_by_name() -> None:
    from tooling.errors import ToolingError
    from tooling.model.policy import policy_from

    with pytest.raises(
        ToolingError, match=r"\[sensitive_attributes\] docker_container must be a list"
    ):
        policy_from({"sensitive_attributes": {"docker_container": "env"}})


# --------------------------------------------------------------------------- with the real tools


@pytest.mark.e2e
def test_plan_shows_the_gate_column_and_apply_says_how_to_approve_each_waiting_unit(
    example_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "plans"
    planned = invoke(example_repo, "plan", "--unit", "live/cluster/vms", "--out", str(out))
    assert planned.returncode == 0, planned.output
    header = next(x for x in planned.output.splitlines() if x.startswith("unit "))
    assert header.split()[-1] == "gate"
    row = next(x for x in planned.output.splitlines() if x.startswith("live/cluster/vms "))
    assert row.split()[-2:] == ["changes", "manual"]
    comment = (out / "comment.md").read_text(encoding="utf-8")
    assert f"`invoke apply --plans {out} --approve-manual`" in comment  # outside the repo

    applied = invoke(example_repo, "apply", "--plans", str(out))
    assert applied.returncode == 0, applied.output
    lines = applied.output.splitlines()
    assert any(
        x.startswith(
            "live/cluster/vms waits for approval: manual gate: touches 3 nodes/VMs: "
            "node-1, node-2, node-3 ("
        )
        for x in lines
    ), applied.output
    assert any("the `infra-manual` environment's review" in x for x in lines)
    assert f"Approve locally: `invoke apply --plans {out.resolve()} --approve-manual`." in lines


@pytest.mark.e2e
def test_an_attribute_declared_in_policy_toml_never_reaches_the_plan_text_log_or_report(
    example_repo: Path, tmp_path: Path
) -> None:
    secret = "cluster bridge (managed by OpenTofu)"  # terraform_data.bridge's input.comment
    policy = example_repo / "policy.toml"
    text = policy.read_text(encoding="utf-8")
    assert text.rstrip().endswith('# docker_container = ["env"]')  # the table comes last
    policy.write_text(text + 'terraform_data = ["input.comment"]\n', encoding="utf-8")
    commit_all(example_repo, "declare the bridge comment sensitive")
    out = tmp_path / "plans"
    ran = invoke(example_repo, "plan", "--unit", "live/cluster/network", "--out", str(out))
    assert ran.returncode == 0, ran.output
    plan_txt = (out / "units/live/cluster/network/plan.txt").read_text(encoding="utf-8")
    assert "comment" in plan_txt and "(redacted)" in plan_txt
    for written in out.rglob("*"):
        if written.is_file() and written.suffix in (".txt", ".log", ".md", ".json"):
            assert secret not in written.read_text(encoding="utf-8"), written
    assert secret not in ran.output


@pytest.mark.e2e
def test_the_replan_after_an_upstream_applies_redacts_the_attributes_policy_toml_declares(
    example_repo: Path, tmp_path: Path
) -> None:
    url = "000000000000.dkr.ecr.us-east-1.amazonaws.com/web"  # registry's repository input.url
    policy = example_repo / "policy.toml"
    text = policy.read_text(encoding="utf-8")
    assert text.rstrip().endswith('# docker_container = ["env"]')  # the table comes last
    policy.write_text(text + 'terraform_data = ["input.url"]\n', encoding="utf-8")
    commit_all(example_repo, "declare the repository URLs sensitive")
    out = tmp_path / "plans"
    planned = invoke(
        example_repo,
        "plan",
        "--unit",
        "live/cloud/iam",
        "--unit",
        "live/cloud/registry",
        "--out",
        str(out),
    )
    assert planned.returncode == 0, planned.output

    applied = invoke(example_repo, "apply", "--plans", str(out))
    assert applied.returncode == 0, applied.output
    record = json.loads((out / "apply.json").read_text(encoding="utf-8"))
    registry = next(u for u in record["units"] if u["path"] == "live/cloud/registry")
    assert registry["result"] == "applied" and registry["cascaded"] is True  # re-planned
    replanned = sorted((out / "cascade").rglob("plan.txt"))
    assert replanned, sorted(str(p.relative_to(out)) for p in out.rglob("*"))
    assert all("(redacted)" in p.read_text(encoding="utf-8") for p in replanned)
    for written in out.rglob("*"):
        if written.is_file() and written.suffix in (".txt", ".log", ".md", ".json"):
            assert url not in written.read_text(encoding="utf-8"), written
    assert url not in applied.output


# --------------------------------------------------------------------------- commit statuses


def _leg(folder: Path, executor: str, units: list[dict[str, object]] | None) -> None:
    leg = folder / f"plan-{executor}"
    leg.mkdir(parents=True)
    if units is not None:
        full = [summary_unit(**u) for u in units]  # type: ignore[arg-type]
        (leg / "summary.json").write_text(json.dumps(summary_doc(full)))
        (leg / "comment.md").write_text(f"{steps.PLAN_MARKER}\n{executor} report\n")


def test_each_executor_gets_a_commit_status_on_the_head_and_after_the_merge(
    github_api: GitHubAPI, tmp_path: Path
) -> None:
    pr = github_api.state.add_pull("feature")["number"]
    head, merge = "e" * 40, "d" * 40
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": pr, "head": {"sha": head}}}))
    env = {
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": "example-org/infrastructure",
        "GITHUB_RUN_ID": "42",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_SHA": merge,
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "GITHUB_OUTPUT": str(tmp_path / "out.txt"),
    }
    manual = {"decision": "manual", "reasons": ["touches 3 nodes/VMs: node-1, node-2, node-3"]}
    plans = tmp_path / "plans"
    _leg(
        plans,
        "hosted",
        [
            {
                "path": "live/cloud/dns",
                "status": "changes",
                "gate": {"decision": "auto", "reasons": []},
            }
        ],
    )
    _leg(plans, "lan", [{"path": "live/cluster/vms", "status": "changes", "gate": manual}])
    _leg(
        plans,
        "edge",
        [{"path": "live/edge/x", "status": "error", "gate": {"decision": "none", "reasons": []}}],
    )
    legs = [{"executor": e, "runs_on": [e], "units": []} for e in ("hosted", "lan", "edge")]
    matrix = json.dumps({"include": legs})

    flow.plan_comment(plans=plans, matrix=matrix, forge=_forge(github_api, pr), environ=env)
    on_head = {s["context"]: s for s in github_api.state.statuses if s["sha"] == head}
    assert {c: s["state"] for c, s in on_head.items()} == {
        "iac/plan (hosted)": "success",
        "iac/plan (lan)": "success",
        "iac/plan (edge)": "failure",
    }
    assert on_head["iac/plan (lan)"]["description"] == (
        "1 unit(s) planned, 1 with changes, 1 to approve after merge"
    )
    assert on_head["iac/plan (edge)"]["description"] == "1 unit(s) failed to plan: live/edge/x"
    assert on_head["iac/plan (hosted)"]["target_url"].endswith("/actions/runs/42")

    github_api.state.merge(pr, merge)
    flow.apply_report(
        plans=plans,
        matrix=matrix,
        apply_result="success",
        forge=_forge(github_api, pr),
        environ=env,
    )
    on_merge = {s["context"]: s for s in github_api.state.statuses if s["sha"] == merge}
    assert on_merge["iac/plan (lan)"]["state"] == "pending"
    assert on_merge["iac/plan (lan)"]["description"] == (
        "waiting for approval in infra-manual: live/cluster/vms"
    )
    assert on_merge["iac/plan (hosted)"]["state"] == "success"

    flow.apply_report(
        plans=plans,
        matrix=matrix,
        apply_result="failure",
        forge=_forge(github_api, pr),
        environ=env,
    )
    latest = {}
    for s in github_api.state.statuses:
        if s["sha"] == merge:
            latest[s["context"]] = s["state"]
    assert set(latest.values()) == {"failure"}


def test_an_executor_the_pull_request_does_not_touch_gets_success_no_units_affected(
    github_api: GitHubAPI, example_repo: Path, tmp_path: Path
) -> None:
    """Through the task, as the comment job runs it: the executors come from policy.toml."""
    pr = github_api.state.add_pull("feature")["number"]
    head = "c" * 40
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": pr, "head": {"sha": head}}}))
    env = {**github_api.env(pr=pr), "GITHUB_EVENT_PATH": str(event), "GITHUB_RUN_ID": "7"}
    plans = tmp_path / "plans"
    planned = invoke(
        example_repo, "plan", "--unit", "live/cluster/network", "--out", str(plans / "plan-lan")
    )
    assert planned.returncode == 0, planned.output
    only_lan = json.dumps({"include": [{"executor": "lan", "runs_on": ["lan"], "units": []}]})

    ran = invoke(example_repo, "plan-comment", "--plans", str(plans), "--matrix", only_lan, env=env)
    assert ran.returncode == 0, ran.output
    on_head = {s["context"]: s for s in github_api.state.statuses if s["sha"] == head}
    assert {c: (s["state"], s["description"]) for c, s in on_head.items()} == {
        "iac/plan (hosted)": ("success", "no units affected"),
        "iac/plan (lan)": ("success", "1 unit(s) planned, 1 with changes"),
    }

    # a pull request that affects no unit at all: no plan leg, every executor still answered
    head = "a" * 40
    event.write_text(json.dumps({"pull_request": {"number": pr, "head": {"sha": head}}}))
    empty = tmp_path / "empty"
    empty.mkdir()
    none = json.dumps({"include": []})
    ran = invoke(example_repo, "plan-comment", "--plans", str(empty), "--matrix", none, env=env)
    assert ran.returncode == 0, ran.output
    assert sorted(
        (s["context"], s["state"], s["description"])
        for s in github_api.state.statuses
        if s["sha"] == head
    ) == [
        ("iac/plan (hosted)", "success", "no units affected"),
        ("iac/plan (lan)", "success", "no units affected"),
    ]


def _record(folder: Path, executor: str, units: list[tuple[str, str]]) -> None:
    leg = folder / f"apply-manual-{executor}"
    leg.mkdir(parents=True)
    doc = apply_doc([apply_unit(p, r) for p, r in units])
    (leg / "apply.json").write_text(json.dumps(doc))


def test_after_the_approval_job_the_merge_commit_leaves_waiting_for_approval(
    github_api: GitHubAPI, tmp_path: Path
) -> None:
    pr = github_api.state.add_pull("feature")["number"]
    merge = "d" * 40
    env = {
        "GITHUB_REPOSITORY": "example-org/infrastructure",
        "GITHUB_RUN_ID": "43",
        "GITHUB_SHA": merge,
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "GITHUB_OUTPUT": str(tmp_path / "out.txt"),
    }
    manual = {"decision": "manual", "reasons": ["touches 3 nodes/VMs: node-1, node-2, node-3"]}
    plans = tmp_path / "plans"
    _leg(plans, "hosted", [{"path": "live/cloud/legacy", "status": "changes", "gate": manual}])
    _leg(plans, "lan", [{"path": "live/cluster/vms", "status": "changes", "gate": manual}])
    legs = [{"executor": e, "runs_on": [e], "units": []} for e in ("hosted", "lan")]
    matrix = json.dumps({"include": legs})
    github_api.state.merge(pr, merge)
    flow.apply_report(
        plans=plans,
        matrix=matrix,
        apply_result="success",
        forge=_forge(github_api, pr),
        environ=env,
    )
    manual_matrix = (tmp_path / "out.txt").read_text().split("manual_matrix=")[1].splitlines()[0]
    offered = json.loads(manual_matrix)["include"]
    assert [leg["executor"] for leg in offered] == ["hosted", "lan"]  # both wait for approval

    def latest() -> dict[str, tuple[str, str]]:
        return {
            s["context"]: (s["state"], s["description"])
            for s in github_api.state.statuses
            if s["sha"] == merge
        }

    assert {c: s[0] for c, s in latest().items()} == {
        "iac/plan (hosted)": "pending",
        "iac/plan (lan)": "pending",
    }

    # approved: lan applied; hosted's unit failed to apply
    records = tmp_path / "records"
    _record(
        records, "lan", [("live/cluster/network", "no-changes"), ("live/cluster/vms", "applied")]
    )
    _record(records, "hosted", [("live/cloud/legacy", "failed")])
    flow.manual_status(
        records=records,
        matrix=manual_matrix,
        result="failure",
        forge=_forge(github_api, pr),
        environ=env,
    )
    assert latest() == {
        "iac/plan (hosted)": ("failure", "not applied after approval: live/cloud/legacy failed"),
        "iac/plan (lan)": ("success", "applied after approval: 1 unit(s)"),
    }

    # rejected (the legs never ran, so they left no record): failure, never pending
    flow.manual_status(
        records=tmp_path / "nothing",
        matrix=manual_matrix,
        result="failure",
        forge=_forge(github_api, pr),
        environ=env,
    )
    assert {c: s[0] for c, s in latest().items()} == {
        "iac/plan (hosted)": "failure",
        "iac/plan (lan)": "failure",
    }
    assert latest()["iac/plan (lan)"][1].startswith(
        "the approval job left no apply record (failure)"
    )


def test_a_fold_title_uses_html_emphasis_since_markdown_is_not_rendered_in_summary() -> None:
    titles = [line for line in _mixed_report().splitlines() if line.startswith("<summary>")]
    network = next(line for line in titles if "live/cluster/network" in line)
    assert network == "<summary><code>live/cluster/network</code>: <b>error</b></summary>"
    assert not any("**" in line for line in titles)


def test_a_plan_text_quoting_the_part_marker_never_makes_the_sticky_comment_a_follow_up(
    github_api: GitHubAPI, tmp_path: Path
) -> None:
    pr = github_api.state.add_pull("feature")["number"]
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": pr, "head": {"sha": SHA}}}))
    env = {
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": "example-org/infrastructure",
        "GITHUB_RUN_ID": "42",
        "GITHUB_EVENT_PATH": str(event),
    }
    matrix = json.dumps({"include": [{"executor": "lan", "runs_on": ["lan"], "units": []}]})
    folder = tmp_path / "plans" / "plan-lan"
    folder.mkdir(parents=True)
    hostile = dataclasses.replace(
        many(1)[0], plan_text="  + input = <<EOT\n<!-- iac-tooling:plan-report:part-2 -->\nEOT\n"
    )
    text = comment.render([hostile], head=SHA, budget=10**9)
    assert pages.PART.format(n=2) in text
    assert [pages.part_number(b) for b in pages.paginate("", [("", text)], budget=65_536)] == [None]
    (folder / "comment.md").write_text(text)
    for _ in range(2):  # the second push finds the first one's comment holding the marker
        flow.plan_comment(
            plans=tmp_path / "plans", matrix=matrix, forge=_forge(github_api, pr), environ=env
        )
    (only,) = github_api.state.comments_on(pr)
    assert only["body"].startswith(steps.PLAN_MARKER)
    assert "no longer used" not in only["body"]
    assert "<summary><code>live/cluster/u000</code>" in only["body"]


HOSTILE_ADDRESS = 'terraform_data.x["a`</details><!--`b|c"]'


def test_a_hostile_unit_path_and_address_stay_text_and_never_break_the_page() -> None:
    doomed = unit(
        "live/cluster/a|b`c<i>",
        "changes",
        plan(ResourceChange(HOSTILE_ADDRESS, "terraform_data", "delete")),
        plan_text="  - resource x\n</details>\n<!--\n",
    )
    failed = dataclasses.replace(
        unit("live/cluster/e", "error", None), error="Error: bad value <!-- `x` </details>"
    )
    text = comment.render(with_gates([doomed, failed], POLICY), budget=10**9)
    page = MarkdownIt("commonmark").enable("table").render(text)  # as GitHub parses it
    assert page.count("<!--") == 1  # the report's own marker: nothing opens a comment
    assert page.count("<details>") == page.count("</details>") == text.count("\n<details>\n")
    assert "<i>" not in page
    row = next(x for x in page.split("<tr>") if "<td" in x and "live/cluster/a" in x)
    assert row.count("<td") == 9  # the | inside the path and the reason split no cell
    code_spans = re.findall(r"<code>(.*?)</code>", page, re.DOTALL)
    assert html.escape(HOSTILE_ADDRESS) in code_spans  # the address, whole, in one code span
    assert "Error: bad value &lt;!-- `x` &lt;/details&gt;" in page


def test_a_head_listing_thousands_of_destroys_is_cut_so_the_first_comment_still_posts() -> None:
    doomed = [
        ResourceChange(
            f'terraform_data.record["host-{i:05d}.example.com"]', "terraform_data", "delete"
        )
        for i in range(3_000)
    ]
    results = with_gates([unit("live/cloud/dns", "changes", plan(*doomed), plan_text="x")], POLICY)
    full = comment.render(results, head=SHA, budget=10**9)
    assert len(pages.split_report(full)[0]) > 65_536  # the head alone
    bodies = pages.paginate("", [("", full)], budget=65_536)
    assert all(len(b) <= 65_536 for b in bodies)
    first = bodies[0]
    assert first.startswith(comment.MARKER) and comment.verdict(results) in first
    assert "summary is too long for a comment: it is in the plan artifact" in first
    assert all(b.count("<details>") == b.count("</details>") for b in bodies)


def test_a_secret_with_markdown_characters_in_an_error_is_redacted_as_the_page_escapes_it() -> None:
    from tooling.core.text import redact

    secret = "s3cr<e>t|`x&y\\z"
    failed = dataclasses.replace(
        unit("live/cluster/e", "error", None), error=f"Error: login refused for {secret}"
    )
    text = comment.render([failed], budget=10**9)
    assert markdown.plain(secret) in text  # the first line, outside the fold, is escaped
    shown = redact.Redactor.of(redact.secret_strings(secret))(text)
    assert markdown.plain(secret) not in shown and secret not in shown
    assert "Error: login refused for (redacted)" in shown


def test_a_plan_text_holding_a_long_run_of_backticks_is_fenced_in_one_pass() -> None:
    (big,) = many(1)
    run = "`" * 200_000
    started = time.monotonic()
    text = comment.render(
        [dataclasses.replace(big, plan_text=f"  + input = {run}\n")], budget=10**9
    )
    assert time.monotonic() - started < 10  # the fence grew one backtick per scan: minutes
    fence = "`" * 200_001
    assert f"\n{fence}diff\n" in text and f"\n{fence}\n" in text


def test_an_apply_error_holding_html_stays_text_in_the_apply_report() -> None:
    from tooling.core.apply import record

    run = record.ApplyRun(
        [
            record.UnitApply("live/cloud/a|b", "failed", "Error: <!-- x `y` </details> | z"),
            record.UnitApply("live/cloud/iam", "applied", ""),
        ]
    )
    page = MarkdownIt("commonmark").enable("table").render(record.report_md(run, Summary(head=SHA)))
    assert page.count("<!--") == 1  # the report's own marker
    assert "</details>" not in page
    rows = [x for x in page.split("<tr>") if "<td" in x]
    assert [r.count("<td") for r in rows] == [4, 4]
    assert "Error: &lt;!-- x `y` &lt;/details&gt; | z" in rows[0]
    assert "live/cloud/iam" in rows[1]


def test_a_replacement_forced_by_a_map_key_holding_backticks_names_it_in_one_code_span() -> None:
    key = 'tags["a`</details>`b"]'
    change = ResourceChange("terraform_data.x", "terraform_data", "replace", replace_paths=(key,))
    why = review.replace_why(change)
    assert why is not None
    page = MarkdownIt("commonmark").render(why)
    assert re.findall(r"<code>(.*?)</code>", page) == [html.escape(key)]
    assert "</details>" not in page
