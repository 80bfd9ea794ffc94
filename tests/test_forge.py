"""tooling.io.forge against the local GitHub API server (tests/ghserver.py)."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from ghserver import GitHubAPI

from tooling.core.report import comment
from tooling.errors import ToolingError
from tooling.io import artifacts
from tooling.io import githubapi as forge_api
from tooling.io.forge import PLAN_REPORT_MARKER, Forge, post_sticky_comment, pr_number_from_env
from tooling.io.githubapi import MAX_BODY

MARKER = PLAN_REPORT_MARKER
REPO = "/repos/example-org/infrastructure"


def _client(api: GitHubAPI, *, max_wait: float = forge_api.MAX_RETRY_WAIT) -> Forge:
    """A client built from explicit arguments (``Forge.from_env`` is tested separately)."""
    return Forge(api.token, "example-org/infrastructure", api.url, max_wait=max_wait)


def _writes(api: GitHubAPI) -> list[tuple[str, str]]:
    return [(m, p) for m, p in api.calls() if m != "GET"]


# -- sticky comments ---------------------------------------------------------------


def test_sticky_comment_is_created_then_updated_in_place(github_api: GitHubAPI) -> None:
    pr = github_api.state.add_pull("feature/vpc")["number"]
    github_api.state.add_comment(pr, "LGTM, but see the plan")  # someone else's comment stays
    gh = Forge.from_env(github_api.env(pr=pr))

    first_id, created = gh.upsert_comment(pr, MARKER, f"{MARKER}\nplan: 1 to add")
    second_id, created_again = gh.upsert_comment(pr, MARKER, f"{MARKER}\nplan: 2 to add")

    assert created is True and created_again is False
    assert second_id == first_id
    sticky = [c for c in github_api.state.comments_on(pr) if MARKER in c["body"]]
    assert len(sticky) == 1
    assert sticky[0]["id"] == first_id
    assert sticky[0]["body"] == f"{MARKER}\nplan: 2 to add"
    assert sticky[0]["user"]["login"] == "github-actions[bot]"
    assert len(github_api.state.comments_on(pr)) == 2
    assert _writes(github_api) == [
        ("POST", f"{REPO}/issues/{pr}/comments"),
        ("PATCH", f"{REPO}/issues/comments/{first_id}"),
    ]
    lists = [r for r in github_api.requests if r.method == "GET"]
    assert len(lists) == 2 and all(r.param("per_page") == "100" for r in lists)


def test_sticky_comment_gets_the_marker_when_the_body_lacks_it(github_api: GitHubAPI) -> None:
    pr = github_api.state.add_pull("feature/a")["number"]
    gh = _client(github_api)
    comment_id, _ = gh.upsert_comment(pr, "<!-- other-marker -->", "no marker here")
    again, created = gh.upsert_comment(pr, "<!-- other-marker -->", "still none")
    assert (again, created) == (comment_id, False)
    (only,) = github_api.state.comments_on(pr)
    assert only["body"] == "<!-- other-marker -->\nstill none"


def test_sticky_comment_marker_on_the_last_page_is_found(github_api: GitHubAPI) -> None:
    pr = github_api.state.add_pull("feature/busy")["number"]
    github_api.state.add_comments(pr, [f"comment {i}" for i in range(149)])
    target = github_api.state.add_comment(
        pr, f"{MARKER}\nold plan", user={"login": "github-actions[bot]"}
    )
    gh = _client(github_api)

    assert len(gh.list_comments(pr)) == 150
    github_api.requests.clear()
    comment_id, created = gh.upsert_comment(pr, MARKER, f"{MARKER}\nnew plan")

    assert (comment_id, created) == (target["id"], False)
    pages = [r.param("page") for r in github_api.requests if r.method == "GET"]
    assert pages == [None, "2"]  # first page, then the Link rel="next" URL
    assert _writes(github_api) == [("PATCH", f"{REPO}/issues/comments/{target['id']}")]
    assert len(github_api.state.comments_on(pr)) == 150
    assert github_api.state.comments[target["id"]]["body"] == f"{MARKER}\nnew plan"


def test_server_pagination_honours_per_page_and_sends_link_headers(github_api: GitHubAPI) -> None:
    pr = github_api.state.add_pull("feature/pages")["number"]
    github_api.state.add_comments(pr, [str(i) for i in range(65)])

    def get(url: str) -> tuple[list[dict[str, object]], str]:
        req = urllib.request.Request(url, headers={"Authorization": f"Bearer {github_api.token}"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.load(resp), resp.headers.get("Link", "")

    items, link = get(f"{github_api.url}{REPO}/issues/{pr}/comments")  # default 30 a page
    assert len(items) == 30 and 'rel="next"' in link and "page=3" in link  # rel="last"
    items, link = get(f"{github_api.url}{REPO}/issues/{pr}/comments?per_page=50&page=2")
    assert [c["body"] for c in items] == [str(i) for i in range(50, 65)]
    assert 'rel="next"' not in link and 'rel="prev"' in link


def test_a_next_page_pointing_back_at_itself_stops_with_one_line_naming_the_endpoint(
    github_api: GitHubAPI,
) -> None:
    pr = github_api.state.add_pull("feature/loop")["number"]
    github_api.state.add_comments(pr, ["one", "two"])
    github_api.state.break_links("/comments", "self")
    with pytest.raises(ToolingError) as raised:
        _client(github_api).list_comments(pr)
    message = str(raised.value)
    assert "\n" not in message
    assert f"GitHub API GET {REPO}/issues/{pr}/comments:" in message
    assert "already read" in message and "loops" in message
    assert len(github_api.calls("GET")) == 1  # the page is never asked for twice


def test_a_list_whose_next_pages_never_end_stops_at_the_page_cap(github_api: GitHubAPI) -> None:
    pr = github_api.state.add_pull("feature/endless")["number"]
    github_api.state.add_comment(pr, "one")
    github_api.state.break_links("/comments", "endless")
    with pytest.raises(ToolingError) as raised:
        _client(github_api).list_comments(pr)
    message = str(raised.value)
    assert "\n" not in message
    assert f"GitHub API GET {REPO}/issues/{pr}/comments: more than 100 pages" in message
    assert len(github_api.calls("GET")) == forge_api.MAX_PAGES == 100


def test_an_oversized_page_is_refused_having_read_no_more_than_its_limit(
    github_api: GitHubAPI,
) -> None:
    pr = github_api.state.add_pull("feature/huge")["number"]
    limit = artifacts.API_PAGE.limit
    github_api.state.oversize("/comments", 8 * limit)  # 64 MiB, streamed without a length
    with pytest.raises(ToolingError) as raised:
        _client(github_api).list_comments(pr)
    message = str(raised.value)
    assert "\n" not in message
    assert f"GitHub API GET {REPO}/issues/{pr}/comments" in message
    assert "larger than 8 MiB" in message
    # the client hung up after its limit: the server could not send the rest (what it
    # got out went into the sockets' buffers)
    deadline = time.monotonic() + 10
    while not github_api.sent and time.monotonic() < deadline:
        time.sleep(0.05)
    assert github_api.sent and github_api.sent[0] < 2 * limit


def test_a_page_that_breaks_the_page_schema_is_refused_naming_where(
    github_api: GitHubAPI,
) -> None:
    github_api.state.add_runner("lan-1", ["lan"])
    github_api.state.answer_next(
        {"total_count": 2, "runners": [{"name": "lan-1"}, 2]}, path=f"{REPO}/actions/runners"
    )
    with pytest.raises(ToolingError) as raised:
        _client(github_api).list_runners()
    message = str(raised.value)
    assert f"GitHub API GET {REPO}/actions/runners" in message
    assert "a page of GitHub's API refused: at runners/1: expected object" in message
    assert "GITHUB_API_URL" in message and "\n" not in message


def test_post_sticky_comment_reads_the_environment(
    github_api: GitHubAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    pr = github_api.state.add_pull("feature/env")["number"]
    for name in ("GH_TOKEN", "GITHUB_EVENT_PATH"):
        monkeypatch.delenv(name, raising=False)
    for name, value in github_api.env(pr=pr).items():
        monkeypatch.setenv(name, value)

    first = post_sticky_comment(f"{comment.MARKER}\nfirst")
    second = post_sticky_comment(f"{comment.MARKER}\nsecond")

    assert first[1] is True and second == (first[0], False)
    assert [c["body"] for c in github_api.state.comments_on(pr)] == [f"{comment.MARKER}\nsecond"]


def test_post_sticky_comment_needs_a_pull_request(github_api: GitHubAPI) -> None:
    with pytest.raises(ToolingError, match="IAC_PR_NUMBER"):
        post_sticky_comment("body", environ=github_api.env(pr=None))
    assert github_api.requests == []


def test_plan_report_marker_matches_the_report() -> None:
    assert PLAN_REPORT_MARKER == comment.MARKER


# -- pull requests -----------------------------------------------------------------


def test_pull_request_create_find_update(github_api: GitHubAPI) -> None:
    github_api.state.add_issue("an older issue")  # #1: pull requests share the number space
    gh = _client(github_api)

    assert gh.find_pull("deps/bump") is None
    made = gh.create_pull("Bump modules", "body v1", "deps/bump", "main", draft=True)
    assert made["number"] == 2
    assert made["html_url"] == "https://github.com/example-org/infrastructure/pull/2"
    assert made["head"]["ref"] == "deps/bump" and made["base"]["ref"] == "main"
    assert made["draft"] is True and made["state"] == "open" and made["merged"] is False

    found = gh.find_pull("deps/bump")
    assert found is not None and found["number"] == 2
    query = github_api.requests[-1].query
    assert query["head"] == ["example-org:deps/bump"] and query["state"] == ["all"]

    updated = gh.update_pull(2, title="Bump modules (3)", body="body v2")
    assert (updated["title"], updated["body"]) == ("Bump modules (3)", "body v2")
    assert github_api.requests[-1].body == {"title": "Bump modules (3)", "body": "body v2"}

    closed = gh.update_pull(2, state="closed")
    assert closed["state"] == "closed" and closed["closed_at"]
    assert gh.find_pull("deps/bump", state="open") is None
    again = gh.find_pull("deps/bump", state="closed")
    assert again is not None and again["number"] == 2


def test_find_pull_prefers_the_open_one_over_a_closed_unmerged_one(github_api: GitHubAPI) -> None:
    old = github_api.state.add_pull("deps/bump", state="closed")
    gh = _client(github_api)
    found = gh.find_pull("deps/bump")
    assert found is not None and found["number"] == old["number"] and found["merged_at"] is None

    new = gh.create_pull("Bump again", "", "deps/bump", "main")
    found = gh.find_pull("deps/bump")
    assert found is not None and found["number"] == new["number"]
    assert gh.find_pull("other/branch") is None


def test_duplicate_pull_request_is_a_clear_error(github_api: GitHubAPI) -> None:
    gh = _client(github_api)
    gh.create_pull("One", "", "deps/bump", "main")
    with pytest.raises(ToolingError) as exc:
        gh.create_pull("Two", "", "deps/bump", "main")
    message = str(exc.value)
    assert "POST /repos/example-org/infrastructure/pulls" in message
    assert (
        "HTTP 422" in message
        and "A pull request already exists for example-org:deps/bump" in message
    )


def test_merged_pull_request_cannot_be_reopened(github_api: GitHubAPI) -> None:
    merged = github_api.state.add_pull("old/feature", merged=True)
    gh = _client(github_api)
    assert gh.get_pull(merged["number"])["merged"] is True
    with pytest.raises(ToolingError, match="HTTP 422"):
        gh.update_pull(merged["number"], state="open")


def test_labels_are_added_to_a_pull_request(github_api: GitHubAPI) -> None:
    pr = github_api.state.add_pull("deps/bump", labels=["dependencies"])["number"]
    gh = _client(github_api)
    labels = gh.add_labels(pr, ["automated", "dependencies"])
    assert [label["name"] for label in labels] == ["dependencies", "automated"]
    assert github_api.requests[-1].body == {"labels": ["automated", "dependencies"]}
    assert github_api.state.labels_on(pr) == ["dependencies", "automated"]
    assert [label["name"] for label in gh.get_pull(pr)["labels"]] == ["dependencies", "automated"]
    with pytest.raises(TypeError):
        gh.add_labels(pr, "automated")


# -- issues ------------------------------------------------------------------------


def test_issue_create_find_update_close(github_api: GitHubAPI) -> None:
    marker = "<!-- iac-tooling:drift-report -->"
    github_api.state.add_pull(
        "drift/x", body=marker
    )  # a pull request with the marker is not an issue
    gh = _client(github_api)

    assert gh.find_issue(marker) is None
    made = gh.create_issue("Drift detected", f"{marker}\n3 units drifted", labels=["drift"])
    number = made["number"]
    assert made["html_url"] == f"https://github.com/example-org/infrastructure/issues/{number}"
    assert [label["name"] for label in made["labels"]] == ["drift"]
    assert made["state"] == "open" and made["user"]["login"] == "github-actions[bot]"

    found = gh.find_issue(marker, labels=["drift"])
    assert found is not None and found["number"] == number
    assert github_api.requests[-1].query["labels"] == ["drift"]
    by_title = gh.find_issue("Drift detected")
    assert by_title is not None and by_title["number"] == number
    assert gh.find_issue(marker, labels=["drift", "other"]) is None

    updated = gh.update_issue(number, body=f"{marker}\n4 units drifted")
    assert updated["body"].endswith("4 units drifted")
    note = gh.comment(number, "Resolved by #12")
    assert note["html_url"].endswith(f"/issues/{number}#issuecomment-{note['id']}")

    closed = gh.update_issue(number, state="closed")
    assert closed["state"] == "closed" and closed["state_reason"] == "completed"
    assert gh.find_issue(marker) is None
    assert gh.find_issue(marker, state="closed") is not None
    assert [(m, p) for m, p in _writes(github_api)] == [
        ("POST", f"{REPO}/issues"),
        ("PATCH", f"{REPO}/issues/{number}"),
        ("POST", f"{REPO}/issues/{number}/comments"),
        ("PATCH", f"{REPO}/issues/{number}"),
    ]


def test_update_needs_something_to_change(github_api: GitHubAPI) -> None:
    gh = _client(github_api)
    with pytest.raises(ValueError, match="nothing to update"):
        gh.update_issue(1)
    with pytest.raises(ToolingError, match="state must be one of"):
        gh.update_pull(1, state="merged")
    assert github_api.requests == []


# -- requests, errors, retries -------------------------------------------------------


def test_requests_carry_the_github_headers(github_api: GitHubAPI) -> None:
    github_api.state.add_issue("x")
    _client(github_api).get_issue(1)
    (request,) = github_api.requests
    assert request.header("Accept") == "application/vnd.github+json"
    assert request.header("X-GitHub-Api-Version") == "2022-11-28"
    assert request.header("Authorization") == f"Bearer {github_api.token}"
    assert (request.header("User-Agent") or "").startswith("iac-tooling/")


def test_404_names_method_path_and_status(github_api: GitHubAPI) -> None:
    gh = _client(github_api)
    with pytest.raises(ToolingError) as exc:
        gh.get_issue(42)
    message = str(exc.value)
    assert "GET /repos/example-org/infrastructure/issues/42" in message
    assert "HTTP 404" in message and "Not Found" in message and "GITHUB_REPOSITORY" in message
    assert exc.value.code == 1

    other = Forge.from_env(github_api.env(repo="other-org/other"))
    with pytest.raises(
        ToolingError, match=r"GET /repos/other-org/other/pulls/1 failed with HTTP 404"
    ):
        other.get_pull(1)


def test_missing_configuration_is_actionable(github_api: GitHubAPI) -> None:
    env = github_api.env()
    del env["GITHUB_TOKEN"]
    with pytest.raises(ToolingError) as exc:
        Forge.from_env(env)
    assert "GITHUB_TOKEN is not set (nor GH_TOKEN)" in str(exc.value)
    assert "secrets.GITHUB_TOKEN" in str(exc.value)

    gh = Forge.from_env({**env, "GH_TOKEN": github_api.token})  # the gh CLI's variable works too
    assert gh.find_issue("anything") is None

    env = github_api.env()
    del env["GITHUB_REPOSITORY"]
    with pytest.raises(ToolingError, match="GITHUB_REPOSITORY is not set"):
        Forge.from_env(env)
    with pytest.raises(ToolingError, match="owner/name"):
        Forge.from_env({**env, "GITHUB_REPOSITORY": "just-a-name"})
    with pytest.raises(ToolingError, match="GITHUB_API_URL must be an http"):
        Forge.from_env({**github_api.env(), "GITHUB_API_URL": "api.github.com"})


def test_api_url_defaults_to_github_com(github_api: GitHubAPI) -> None:
    env = github_api.env()
    del env["GITHUB_API_URL"]
    assert Forge.from_env(env).api_url == "https://api.github.com"
    enterprise = Forge.from_env({**env, "GITHUB_API_URL": "https://ghe.example.com/api/v3/"})
    assert enterprise.api_url == "https://ghe.example.com/api/v3"


def test_wrong_token_is_401(github_api: GitHubAPI) -> None:
    gh = Forge.from_env({**github_api.env(), "GITHUB_TOKEN": "ghs_wrong"})
    with pytest.raises(ToolingError) as exc:
        gh.get_issue(1)
    assert "HTTP 401" in str(exc.value) and "Bad credentials" in str(exc.value)
    assert "ghs_wrong" not in str(exc.value)
    assert github_api.requests[0].status == 401


def test_server_requires_authorization(github_api: GitHubAPI) -> None:
    with pytest.raises(urllib.error.HTTPError) as exc:
        urllib.request.urlopen(f"{github_api.url}{REPO}/issues", timeout=10)
    assert exc.value.code == 401
    assert json.loads(exc.value.read())["message"] == "Requires authentication"


def test_bodies_over_the_limit_are_refused_before_sending(github_api: GitHubAPI) -> None:
    pr = github_api.state.add_pull("feature/huge")["number"]
    gh = _client(github_api)
    huge = "x" * (MAX_BODY + 1)
    for call in (
        lambda: gh.upsert_comment(pr, MARKER, huge),
        lambda: gh.comment(pr, huge),
        lambda: gh.create_issue("t", huge),
        lambda: gh.update_issue(pr, body=huge),
        lambda: gh.create_pull("t", huge, "a", "main"),
        lambda: gh.update_pull(pr, body=huge),
    ):
        with pytest.raises(ToolingError, match="characters; GitHub accepts at most 65,536"):
            call()
    assert github_api.requests == []

    exact = MARKER + "\n" + "y" * (MAX_BODY - len(MARKER) - 1)
    assert len(exact) == MAX_BODY
    gh.upsert_comment(pr, MARKER, exact)
    assert github_api.state.comments_on(pr)[0]["body"] == exact


def test_server_rejects_bodies_over_the_limit(github_api: GitHubAPI) -> None:
    pr = github_api.state.add_pull("feature/huge")["number"]
    req = urllib.request.Request(
        f"{github_api.url}{REPO}/issues/{pr}/comments",
        data=json.dumps({"body": "z" * (MAX_BODY + 1)}).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {github_api.token}", "Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as exc:
        urllib.request.urlopen(req, timeout=10)
    assert exc.value.code == 422
    assert "too long" in json.loads(exc.value.read())["errors"][0]["message"]
    assert github_api.state.comments_on(pr) == []


def test_retries_once_on_503(github_api: GitHubAPI) -> None:
    github_api.state.add_issue("x")
    gh = _client(github_api, max_wait=0.05)
    github_api.state.fail_next(503)
    assert gh.get_issue(1)["number"] == 1
    assert [r.status for r in github_api.requests] == [503, 200]

    github_api.requests.clear()
    github_api.state.fail_next(502, "Bad Gateway", times=2)
    with pytest.raises(
        ToolingError, match=r"GET /repos/example-org/infrastructure/issues/1 failed with HTTP 502"
    ):
        gh.get_issue(1)
    assert [r.status for r in github_api.requests] == [502, 502]


def test_retries_rate_limits_only_with_retry_after(github_api: GitHubAPI) -> None:
    github_api.state.add_issue("x")
    gh = _client(github_api)
    github_api.state.fail_next(429, "API rate limit exceeded", headers={"Retry-After": "0"})
    assert gh.get_issue(1)["number"] == 1
    github_api.state.fail_next(403, "secondary rate limit", headers={"Retry-After": "0"})
    assert gh.get_issue(1)["number"] == 1
    assert [r.status for r in github_api.requests] == [429, 200, 403, 200]

    github_api.requests.clear()
    github_api.state.fail_next(403, "Resource not accessible by integration")
    with pytest.raises(ToolingError) as exc:
        gh.comment(1, "hello")
    assert [r.status for r in github_api.requests] == [403]  # a plain 403 is not retried
    assert "Resource not accessible by integration" in str(exc.value)
    assert "pull-requests: write" in str(exc.value)


def test_retry_wait_is_bounded(github_api: GitHubAPI) -> None:
    assert _client(github_api).max_wait == forge_api.MAX_RETRY_WAIT == 5.0
    assert _client(github_api, max_wait=3600).max_wait == 5.0
    github_api.state.add_issue("x")
    gh = _client(github_api, max_wait=0.2)
    github_api.state.fail_next(429, headers={"Retry-After": "3600"})
    started = time.monotonic()
    gh.get_issue(1)
    assert 0.15 <= time.monotonic() - started < 3


def test_unreachable_api_is_a_tooling_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    gh = Forge("ghs_secret_value_123", "example-org/infrastructure", f"http://127.0.0.1:{port}")
    with pytest.raises(ToolingError, match="cannot reach") as exc:
        gh.get_issue(1)
    assert "ghs_secret_value_123" not in str(exc.value)


# -- the token never leaks ------------------------------------------------------------


def test_token_never_appears_in_errors_or_repr(github_api: GitHubAPI) -> None:
    token = github_api.token
    github_api.state.add_issue("x")
    gh = Forge.from_env(github_api.env(pr=1))
    assert token not in repr(gh) and token not in str(gh)
    assert "example-org/infrastructure" in repr(gh)

    messages: list[str] = []

    def capture(call: Callable[[], object]) -> None:
        with pytest.raises(ToolingError) as exc:
            call()
        messages.append(str(exc.value))
        messages.append(repr(exc.value))

    capture(lambda: gh.get_issue(404))  # 404
    capture(lambda: gh.comment(1, "x" * (MAX_BODY + 1)))  # refused locally
    github_api.state.fail_next(500, f"internal error for token {token}")  # a server echoing it
    capture(lambda: gh.get_issue(1))
    capture(lambda: Forge.from_env({**github_api.env(), "GITHUB_REPOSITORY": "bad"}))
    capture(lambda: Forge(token + "\n" + token, "example-org/infrastructure", github_api.url))
    capture(lambda: Forge.from_env({**github_api.env(), "IAC_PR_NUMBER": "abc"}))

    assert len(messages) == 12
    for message in messages:
        assert token not in message
    assert "internal error for token ***" in messages[4]


def test_token_is_not_sent_across_a_redirect_to_another_origin(github_api: GitHubAPI) -> None:
    github_api.state.add_issue("x")
    gh = _client(github_api)
    with GitHubAPI() as elsewhere:
        elsewhere.state.add_issue("y")
        github_api.state.fail_next(
            302, "Found", headers={"Location": f"{elsewhere.url}{REPO}/issues/1"}
        )
        with pytest.raises(ToolingError, match="HTTP 401"):
            gh.get_issue(1)
        (followed,) = elsewhere.requests
        assert followed.header("Authorization") is None

    # within the same origin (e.g. a renamed repository) the token goes along
    github_api.state.fail_next(
        301, "Moved Permanently", headers={"Location": f"{github_api.url}{REPO}/issues/1"}
    )
    assert gh.get_issue(1)["number"] == 1
    assert github_api.requests[-1].header("Authorization") == f"Bearer {github_api.token}"


# -- the pull request number ----------------------------------------------------------


def test_from_env_reads_the_pr_number_from_the_event_file(
    github_api: GitHubAPI, tmp_path: Path
) -> None:
    pr = github_api.state.add_pull("feature/event")["number"]
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"action": "opened", "number": pr, "pull_request": {"number": pr}}))
    env = {**github_api.env(), "GITHUB_EVENT_PATH": str(event)}

    gh = Forge.from_env(env)
    assert gh.pr_number == pr
    post_sticky_comment(f"{MARKER}\nfrom the event", environ=env)
    assert [c["body"] for c in github_api.state.comments_on(pr)] == [f"{MARKER}\nfrom the event"]


def test_pr_number_sources(tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 12}}))
    assert pr_number_from_env({"GITHUB_EVENT_PATH": str(event)}) == 12
    assert pr_number_from_env({"GITHUB_EVENT_PATH": str(event), "IAC_PR_NUMBER": "34"}) == 34
    assert pr_number_from_env({"IAC_PR_NUMBER": "56"}) == 56
    assert pr_number_from_env({}) is None

    event.write_text(
        json.dumps({"issue": {"number": 8, "pull_request": {"url": "u"}}})
    )  # issue_comment
    assert pr_number_from_env({"GITHUB_EVENT_PATH": str(event)}) == 8
    event.write_text(json.dumps({"issue": {"number": 9}}))  # a comment on a plain issue
    assert pr_number_from_env({"GITHUB_EVENT_PATH": str(event)}) is None
    event.write_text(json.dumps({"ref": "refs/heads/main"}))  # push
    assert pr_number_from_env({"GITHUB_EVENT_PATH": str(event)}) is None

    with pytest.raises(ToolingError, match="IAC_PR_NUMBER must be a pull request number"):
        pr_number_from_env({"IAC_PR_NUMBER": "#5"})
    with pytest.raises(ToolingError, match=r"GITHUB_EVENT_PATH names .* cannot be read"):
        pr_number_from_env({"GITHUB_EVENT_PATH": str(tmp_path / "missing.json")})
    event.write_text("{not json")
    with pytest.raises(ToolingError, match="not JSON"):
        pr_number_from_env({"GITHUB_EVENT_PATH": str(event)})
