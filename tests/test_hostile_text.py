"""Text from outside (unit paths, error lines, names read back) is shown, never acted on.

On a terminal: escape sequences (CSI, OSC), other control characters and the
bidirectional controls are written as their escapes (``\\x1b``, ``\\u202e``).
In the pull request's comment: the same, and an ``@user`` or ``@org/team``
outside code notifies nobody.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ghserver import GitHubAPI
from infra_fixtures import REPO, invoke, invoke_in_process, make_example_repo
from markdown_it import MarkdownIt

from tooling.core.plan.gates import Gate
from tooling.core.plan.results import Result
from tooling.core.plan.status import Status
from tooling.core.report import review
from tooling.core.report.comment import render
from tooling.core.text import markdown, terminal

ESC_TITLE = "\x1b]0;owned\x07"  # OSC: sets the terminal's title
CLEAR = "\x1b[2J"  # CSI: clears the screen
RLO = "\u202e"  # right-to-left override: 'txt.exe' shows as 'exe.txt'


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("live/cloud/dns", "live/cloud/dns"),
        ("a\tb\nc", "a\tb\nc"),
        ("✅ Plan: 1 to add — ünïcode", "✅ Plan: 1 to add — ünïcode"),
        (CLEAR, "\\x1b[2J"),
        (ESC_TITLE, "\\x1b]0;owned\\x07"),
        (f"live/{RLO}txt.exe", "live/\\u202etxt.exe"),
        ("carriage\roverwrite", "carriage\\x0doverwrite"),
        ("del\x7f", "del\\x7f"),
        ("c1\x9b31m", "c1\\x9b31m"),
        ("line\u2028sep", "line\\u2028sep"),
        ("\u2066isolate\u2069", "\\u2066isolate\\u2069"),
        ("nul\x00", "nul\\x00"),
    ],
)
def test_terminal_text_shows_control_and_bidi_characters_as_escapes(given: str, shown: str) -> None:
    assert terminal.escape(given) == shown
    assert (terminal.escape(given) != given) is (given != shown)


def _html_text_outside_code(markdown: str) -> str:
    """The text GitHub would scan for mentions: the rendered HTML without code."""
    html = MarkdownIt("commonmark").enable("table").render(markdown)
    html = re.sub(r"<code>.*?</code>|<pre>.*?</pre>", "", html, flags=re.S)
    return re.sub(r"<[^>]+>", "", html)


def test_a_mention_in_plain_text_notifies_nobody_and_still_reads_as_written() -> None:
    shown = markdown.plain("failed: ping @org/team and @someone")
    text = _html_text_outside_code(shown)
    assert not re.search(r"@\w", text), text
    assert text.replace("\u200b", "").strip() == "failed: ping @org/team and @someone"


def _unit(path: str, error: str | None = None, model_error: str | None = None) -> Result:
    return Result(
        path=path,
        tier="cloud",
        executor="hosted",
        change="modified",
        status=Status.ERROR if error else Status.CHANGES,
        error=error,
        model_error=model_error,
        gate=Gate("manual", (f"touches {path} @org/team",)),
    )


def test_the_comment_shows_hostile_paths_and_errors_without_mentions_or_controls() -> None:
    results = [
        _unit(f"live/@org/team/{RLO}dns", error=f"Error: ping @org/team {CLEAR}{ESC_TITLE}"),
        _unit("live/cloud/iam", model_error=f"locals chain too deep @org/admins {RLO}x"),
    ]

    comment = render(
        results, head="a" * 40, base="b" * 40, settings=None, interrupted=False, plans_dir=None
    )

    assert "\x1b" not in comment and "\x07" not in comment
    assert RLO not in comment
    assert "\\u202e" in comment and "\\x1b[2J" in comment
    assert not re.search(r"@\w", _html_text_outside_code(comment))
    # the names are still there, as written, for the reader
    assert "@org/team" in _html_text_outside_code(comment).replace("\u200b", "") or (
        "live/@org/team/" in comment
    )


def test_a_mermaid_label_cannot_end_early_or_add_a_line_to_the_chart() -> None:
    hostile = 'live/x"]\n  click u_x "https://evil.invalid"\n  y["@org/team'
    results = [_unit(hostile), _unit("live/cloud/iam")]
    chart = review.apply_graph(results, {"live/cloud/iam": [hostile]})
    assert chart is not None
    lines = chart.splitlines()
    assert not any(line.strip().startswith(("click", "y[")) for line in lines), chart
    # flowchart, two nodes, one edge, two class definitions, the manual class
    assert len(lines) == 7, chart
    labels = re.findall(r'\["(.*?)"\]', chart)
    assert len(labels) == 2
    assert all('"' not in label and "\n" not in label for label in labels)
    assert "@org" not in chart


def test_an_error_naming_escape_sequences_reaches_the_terminal_escaped(tmp_path: Path) -> None:
    repo = make_example_repo(tmp_path / "infra")

    ran = invoke(repo, "affected", "--base", f"main{CLEAR}{RLO}{ESC_TITLE}")

    assert ran.returncode != 0
    assert "\x1b" not in ran.stderr and RLO not in ran.stderr and "\x07" not in ran.stderr
    assert "\\x1b[2J" in ran.stderr or "\\u202e" in ran.stderr, ran.stderr


def test_a_runner_named_with_escape_sequences_is_listed_escaped(github_api: GitHubAPI) -> None:
    github_api.state.add_runner(f"lan-1{ESC_TITLE}{RLO}", ["lan"])
    env = {**github_api.env(), "GITHUB_TOKEN": "", "IAC_RUNNERS_TOKEN": github_api.token}

    ran = invoke_in_process(REPO, "runners", env=env)

    assert ran.returncode == 0, ran.output
    assert "\x1b" not in ran.output and RLO not in ran.output and "\x07" not in ran.output
    assert "lan-1\\x1b]0;owned\\x07\\u202e" in ran.stdout
