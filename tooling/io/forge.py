"""Thin, typed wrapper around the GitHub REST API: the calls the pipeline makes.

The sticky plan comment on a pull request, finding/creating/updating pull
requests and issues, and labels; nothing more. Configuration comes from the
standard GitHub Actions environment (:meth:`Forge.from_env`, the one reader of
``GITHUB_TOKEN``/``GITHUB_REPOSITORY``); ``GITHUB_API_URL`` points it at GitHub
Enterprise or a local test server. Sending, retries, size limits and keeping
the token to the API's own origin are :mod:`tooling.io.githubapi`.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from collections.abc import Mapping, Sequence

from tooling.errors import ToolingError
from tooling.io.githubapi import (
    DEFAULT_API_URL,
    MAX_RETRY_WAIT,
    TOKEN_HELP,
    USER_AGENT,
    ApiClient,
    JSONObject,
    check_body,
    json_objects,
)

__all__ = [
    "PLAN_REPORT_MARKER",
    "PLAN_REPORT_PART",
    "Forge",
    "github_repository",
    "post_sticky_comment",
    "post_sticky_pages",
    "pr_number_from_env",
    "token_from_env",
]

#: the plan report's hidden marker (the same string as ``tooling.core.report.comment.MARKER``;
#: this edge does not import the core)
PLAN_REPORT_MARKER = "<!-- iac-tooling:plan-report -->"

#: a follow-up comment's marker (the same as ``tooling.core.report.pages.PART``)
PLAN_REPORT_PART = "<!-- iac-tooling:plan-report:part-{n} -->"
_PART_RE = re.compile(r"<!-- iac-tooling:plan-report:part-(\d+) -->")

_STATES = ("open", "closed")
_LIST_STATES = ("open", "closed", "all")


class Forge(ApiClient):
    """The GitHub calls the pipeline makes, for one repository.

    Build it with explicit arguments (see :class:`ApiClient`), or from the
    environment with :meth:`from_env`. ``pr_number`` is the pull request the
    run belongs to, if any.
    """

    def __init__(
        self,
        token: str,
        repository: str,
        api_url: str = DEFAULT_API_URL,
        *,
        pr_number: int | None = None,
        timeout: float = 30.0,
        max_wait: float = MAX_RETRY_WAIT,
        user_agent: str = USER_AGENT,
    ) -> None:
        super().__init__(
            token, repository, api_url, timeout=timeout, max_wait=max_wait, user_agent=user_agent
        )
        self.pr_number = pr_number

    # -- construction ---------------------------------------------------------

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, *, origin_url: str | None = None
    ) -> Forge:
        """Build a client from the GitHub Actions environment (default: ``os.environ``).

        Reads ``GITHUB_TOKEN`` (or ``GH_TOKEN``), ``GITHUB_REPOSITORY``,
        ``GITHUB_API_URL`` and the pull request number (see
        :func:`pr_number_from_env`). Outside Actions, ``origin_url`` (the
        repository's ``origin`` remote) names the repository when
        ``GITHUB_REPOSITORY`` is unset and it is a GitHub URL (on the host of
        ``GITHUB_SERVER_URL``, default github.com).
        """
        env = os.environ if environ is None else environ
        token = token_from_env(env)
        if not token:
            raise ToolingError(f"GITHUB_TOKEN is not set (nor GH_TOKEN): {TOKEN_HELP}")
        repository = env.get("GITHUB_REPOSITORY", "").strip()
        if not repository and origin_url:
            server = env.get("GITHUB_SERVER_URL", "").strip()
            host = urllib.parse.urlsplit(server).hostname if server else None
            repository = github_repository(origin_url, host or "github.com") or ""
            if not repository:
                raise ToolingError(
                    "GITHUB_REPOSITORY is not set and origin is not a GitHub URL: set it to owner/name "
                    "to open the pull request (or unset GITHUB_TOKEN to stop after the local commit)"
                )
        if not repository:
            raise ToolingError(
                "GITHUB_REPOSITORY is not set: set it to the repository as owner/name "
                "(GitHub Actions sets it for every job)"
            )
        api_url = env.get("GITHUB_API_URL", "").strip() or DEFAULT_API_URL
        return cls(token, repository, api_url, pr_number=pr_number_from_env(env))

    def __repr__(self) -> str:
        return (
            f"Forge(repository={self.repository!r}, api_url={self.api_url!r}, "
            f"pr_number={self.pr_number!r})"
        )

    # -- comments -------------------------------------------------------------

    def list_comments(self, issue_number: int) -> list[JSONObject]:
        """Every comment on an issue or pull request, oldest first (all pages)."""
        return list(self._paginate(f"{self._repo_path}/issues/{issue_number}/comments"))

    def comment(self, number: int, body: str) -> JSONObject:
        """Add a comment to an issue or pull request."""
        check_body(body, f"comment on #{number}")
        return self._object("POST", f"{self._repo_path}/issues/{number}/comments", {"body": body})

    def update_comment(self, comment_id: int, body: str) -> JSONObject:
        check_body(body, f"comment {comment_id}")
        return self._object(
            "PATCH", f"{self._repo_path}/issues/comments/{comment_id}", {"body": body}
        )

    def upsert_comment(self, issue_number: int, marker: str, body: str) -> tuple[int, bool]:
        """Create or update the one comment on ``issue_number`` that carries ``marker``.

        ``marker`` is a hidden HTML comment such as
        ``<!-- iac-tooling:plan-report -->``; it is put first in the body when
        the body lacks it, so the next call finds the comment again. The
        oldest comment with the marker is updated in place; a new one is made
        only when none exists. Returns ``(comment_id, created)``.
        """
        if not marker.strip():
            raise ToolingError(
                "the sticky-comment marker is empty; pass a hidden marker such as <!-- name -->"
            )
        text = body if marker in body else f"{marker}\n{body}"
        check_body(text, f"comment on #{issue_number}")
        for existing in self._paginate(f"{self._repo_path}/issues/{issue_number}/comments"):
            if marker in (existing.get("body") or ""):
                updated = self.update_comment(int(existing["id"]), text)
                return int(updated["id"]), False
        created = self.comment(issue_number, text)
        return int(created["id"]), True

    # -- pull requests --------------------------------------------------------

    def find_pull(self, head_branch: str, state: str = "all") -> JSONObject | None:
        """The pull request from ``head_branch`` (``branch`` or ``owner:branch``), or None.

        When several match (say a closed one and a newer open one), the open
        one wins, then the newest.
        """
        _check_state(state, _LIST_STATES)
        head = head_branch if ":" in head_branch else f"{self.owner}:{head_branch}"
        pulls = list(self._paginate(f"{self._repo_path}/pulls", {"head": head, "state": state}))
        for pull in pulls:
            if pull.get("state") == "open":
                return pull
        return pulls[0] if pulls else None

    def get_pull(self, number: int) -> JSONObject:
        return self._object("GET", f"{self._repo_path}/pulls/{number}")

    def create_pull(
        self, title: str, body: str, head: str, base: str, draft: bool = False
    ) -> JSONObject:
        check_body(body, "pull request body")
        payload = {"title": title, "body": body, "head": head, "base": base, "draft": draft}
        return self._object("POST", f"{self._repo_path}/pulls", payload)

    def update_pull(
        self,
        number: int,
        title: str | None = None,
        body: str | None = None,
        state: str | None = None,
    ) -> JSONObject:
        """Change a pull request's title, body or state (``open`` | ``closed``)."""
        payload = _changes(title=title, body=body, state=state, what=f"pull request #{number}")
        return self._object("PATCH", f"{self._repo_path}/pulls/{number}", payload)

    def add_labels(self, number: int, labels: Sequence[str]) -> list[JSONObject]:
        """Add labels to an issue or pull request; returns all its labels."""
        if isinstance(labels, str):
            raise TypeError("labels must be a sequence of names, not one string")
        result = self._request(
            "POST", f"{self._repo_path}/issues/{number}/labels", {"labels": list(labels)}
        )
        return json_objects(result, f"POST {self._repo_path}/issues/{number}/labels")

    def pulls_of_commit(self, sha: str) -> list[JSONObject]:
        """The pull requests associated with commit ``sha`` (the merged one of a merge commit)."""
        return list(
            self._paginate(f"{self._repo_path}/commits/{urllib.parse.quote(sha, safe='')}/pulls")
        )

    # -- commit statuses ------------------------------------------------------

    def set_status(
        self, sha: str, state: str, context: str, description: str, target_url: str | None = None
    ) -> JSONObject:
        """Set the commit status ``context`` on ``sha`` (``success`` | ``failure`` |
        ``pending`` | ``error``), which branch protection can require."""
        _check_state(state, ("success", "failure", "pending", "error"))
        payload: JSONObject = {"state": state, "context": context, "description": description}
        if target_url:
            payload["target_url"] = target_url
        path = f"{self._repo_path}/statuses/{urllib.parse.quote(sha, safe='')}"
        return self._object("POST", path, payload)

    # -- actions --------------------------------------------------------------

    def last_successful_run_sha(self, workflow: str, branch: str) -> str | None:
        """The head commit of the newest successful run of ``workflow`` (a file
        name such as ``apply.yml``) on ``branch``, or None."""
        path = f"{self._repo_path}/actions/workflows/{urllib.parse.quote(workflow, safe='')}/runs"
        result = self._request(
            "GET",
            path
            + "?"
            + urllib.parse.urlencode({"branch": branch, "status": "success", "per_page": 1}),
        )
        runs = result.get("workflow_runs") if isinstance(result, dict) else None
        if not runs or not isinstance(runs[0], dict):
            return None
        sha = runs[0].get("head_sha")
        return sha if isinstance(sha, str) and sha else None

    def last_successful_run_id(self, workflow: str, *, event: str, head_sha: str) -> int | None:
        """The id of the newest successful run of ``workflow`` for ``event`` at commit
        ``head_sha`` (a pull request's plan at its head, a merge group's), or None."""
        path = f"{self._repo_path}/actions/workflows/{urllib.parse.quote(workflow, safe='')}/runs"
        query = {"event": event, "head_sha": head_sha, "status": "success", "per_page": 1}
        result = self._request("GET", path + "?" + urllib.parse.urlencode(query))
        runs = result.get("workflow_runs") if isinstance(result, dict) else None
        if not runs or not isinstance(runs[0], dict):
            return None
        found = runs[0].get("id")
        return found if isinstance(found, int) and not isinstance(found, bool) else None

    # -- issues ---------------------------------------------------------------

    def find_issue(
        self, marker_or_title: str, labels: Sequence[str] = (), state: str = "open"
    ) -> JSONObject | None:
        """The newest issue (not pull request) whose body contains ``marker_or_title``
        or whose title equals it, among those with all of ``labels``; or None."""
        _check_state(state, _LIST_STATES)
        if isinstance(labels, str):
            raise TypeError("labels must be a sequence of names, not one string")
        query = {"state": state}
        if labels:
            query["labels"] = ",".join(labels)
        for issue in self._paginate(f"{self._repo_path}/issues", query):
            if "pull_request" in issue:
                continue
            if (
                marker_or_title in (issue.get("body") or "")
                or issue.get("title") == marker_or_title
            ):
                return issue
        return None

    def get_issue(self, number: int) -> JSONObject:
        return self._object("GET", f"{self._repo_path}/issues/{number}")

    def create_issue(self, title: str, body: str, labels: Sequence[str] = ()) -> JSONObject:
        if isinstance(labels, str):
            raise TypeError("labels must be a sequence of names, not one string")
        check_body(body, "issue body")
        payload: JSONObject = {"title": title, "body": body}
        if labels:
            payload["labels"] = list(labels)
        return self._object("POST", f"{self._repo_path}/issues", payload)

    def update_issue(
        self,
        number: int,
        title: str | None = None,
        body: str | None = None,
        state: str | None = None,
    ) -> JSONObject:
        """Change an issue's title, body or state (``open`` | ``closed``)."""
        payload = _changes(title=title, body=body, state=state, what=f"issue #{number}")
        return self._object("PATCH", f"{self._repo_path}/issues/{number}", payload)

    # -- runners --------------------------------------------------------------

    def list_runners(self) -> list[JSONObject]:
        """The repository's self-hosted runners (all pages): ``id``, ``name``,
        ``status``, ``busy``, ``labels``. Needs a token with Administration: read."""
        out: list[JSONObject] = []
        for page, shown in self._pages(f"{self._repo_path}/actions/runners"):
            runners = page.get("runners") if isinstance(page, dict) else None
            out.extend(json_objects(runners, f"GET {shown} (runners)"))
        return out


# -- module-level convenience ------------------------------------------------


def post_sticky_comment(
    body: str, marker: str = PLAN_REPORT_MARKER, *, environ: Mapping[str, str] | None = None
) -> tuple[int, bool]:
    """Create or update the sticky comment on this run's pull request.

    Used by ``invoke plan --comment``; ``environ`` defaults to ``os.environ``.
    Returns ``(comment_id, created)``.
    """
    forge = Forge.from_env(environ)
    if forge.pr_number is None:
        raise ToolingError(
            "--comment needs a pull request: run it from a pull_request workflow "
            "(GITHUB_EVENT_PATH names the event) or set IAC_PR_NUMBER to the pull request number"
        )
    return forge.upsert_comment(forge.pr_number, marker, body)


def post_sticky_pages(
    bodies: Sequence[str], *, environ: Mapping[str, str] | None = None
) -> list[tuple[int, bool]]:
    """:func:`post_sticky_comment` for a report split into comments (``bodies``; the
    follow-ups start with :data:`PLAN_REPORT_PART`): each is edited in place by its
    marker, and a follow-up an earlier, longer report left is edited to say it is unused."""
    forge = Forge.from_env(environ)
    if forge.pr_number is None:
        raise ToolingError(
            "--comment needs a pull request: run it from a pull_request workflow "
            "(GITHUB_EVENT_PATH names the event) or set IAC_PR_NUMBER to the pull request number"
        )
    number = forge.pr_number
    done = [forge.upsert_comment(number, PLAN_REPORT_MARKER, bodies[0])]
    for n, body in enumerate(bodies[1:], 2):
        done.append(forge.upsert_comment(number, PLAN_REPORT_PART.format(n=n), body))
    for existing in forge.list_comments(number):
        found = _PART_RE.search(existing.get("body") or "")
        if found and int(found.group(1)) > len(bodies):
            n = int(found.group(1))
            forge.update_comment(
                int(existing["id"]),
                f"{PLAN_REPORT_PART.format(n=n)}\n_Part {n} of an earlier plan report: no longer "
                "used, the current report fits in the comments above._\n",
            )
    return done


RUNNERS_TOKEN_HELP = (
    "set IAC_RUNNERS_TOKEN to a token that may read the repository's self-hosted runners "
    '(fine-grained, Administration: read; bootstrap/README.md, "The runners token"); '
    "the workflow's GITHUB_TOKEN cannot"
)


def runners_forge_from_env(environ: Mapping[str, str] | None = None) -> Forge:
    """A client whose token may list runners: ``IAC_RUNNERS_TOKEN``, else ``GITHUB_TOKEN``."""
    env = dict(os.environ if environ is None else environ)
    token = env.get("IAC_RUNNERS_TOKEN", "").strip() or token_from_env(env)
    if not token:
        raise ToolingError(f"no token to list the runners: {RUNNERS_TOKEN_HELP}")
    env["GITHUB_TOKEN"] = token
    return Forge.from_env(env)


def token_from_env(environ: Mapping[str, str] | None = None) -> str | None:
    """The API token: ``GITHUB_TOKEN``, else ``GH_TOKEN``; None when neither is set."""
    env = os.environ if environ is None else environ
    return env.get("GITHUB_TOKEN", "").strip() or env.get("GH_TOKEN", "").strip() or None


def github_repository(url: str, host: str = "github.com") -> str | None:
    """``owner/name`` from a GitHub remote URL (https or SCP/ssh); None for other hosts."""
    url = url.strip()
    scp = re.fullmatch(r"[^@/]+@([^:/]+):(.+)", url)
    if scp:
        found_host, path = scp.group(1), scp.group(2)
    else:
        parts = urllib.parse.urlsplit(url)
        found_host, path = parts.hostname or "", parts.path
    if found_host.lower() != host.lower():
        return None
    segments = [s for s in path.strip("/").removesuffix(".git").split("/") if s]
    return "/".join(segments) if len(segments) == 2 else None


def pr_number_from_env(environ: Mapping[str, str] | None = None) -> int | None:
    """The pull request this run belongs to, or None.

    ``IAC_PR_NUMBER`` wins when set (an explicit override, e.g. for
    ``workflow_dispatch``); otherwise the event payload at ``GITHUB_EVENT_PATH``:
    ``pull_request.number``, or ``issue.number`` for a comment on a pull request.
    """
    env = os.environ if environ is None else environ
    explicit = env.get("IAC_PR_NUMBER", "").strip()
    if explicit:
        if not explicit.isdigit() or int(explicit) < 1:
            raise ToolingError(f"IAC_PR_NUMBER must be a pull request number, got {explicit!r}")
        return int(explicit)
    event_path = env.get("GITHUB_EVENT_PATH", "").strip()
    if not event_path:
        return None
    try:
        with open(event_path, encoding="utf-8") as fh:
            event = json.load(fh)
    except OSError as exc:
        raise ToolingError(
            f"GITHUB_EVENT_PATH names {event_path}, which cannot be read: {exc.strerror}"
        ) from exc
    except json.JSONDecodeError as exc:
        raise ToolingError(
            f"GITHUB_EVENT_PATH names {event_path}, which is not JSON: {exc}"
        ) from exc
    if not isinstance(event, dict):
        return None
    number: object = None
    pull = event.get("pull_request")
    issue = event.get("issue")
    if isinstance(pull, dict):
        number = pull.get("number")
    elif isinstance(issue, dict) and issue.get("pull_request"):
        number = issue.get("number")
    return (
        number if isinstance(number, int) and not isinstance(number, bool) and number > 0 else None
    )


def _check_state(state: str, allowed: Sequence[str]) -> None:
    if state not in allowed:
        raise ToolingError(f"state must be one of {', '.join(allowed)}; got {state!r}", code=2)


def _changes(*, title: str | None, body: str | None, state: str | None, what: str) -> JSONObject:
    payload: JSONObject = {}
    if title is not None:
        payload["title"] = title
    if body is not None:
        check_body(body, f"{what} body")
        payload["body"] = body
    if state is not None:
        _check_state(state, _STATES)
        payload["state"] = state
    if not payload:
        raise ValueError(f"nothing to update on {what}: pass title, body or state")
    return payload
