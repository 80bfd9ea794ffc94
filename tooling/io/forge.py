"""Thin, typed wrapper around the GitHub REST API (urllib only).

The pipeline needs a handful of calls: the sticky plan comment on a pull
request, finding/creating/updating pull requests and issues, and labels. This
module makes exactly those calls and nothing more:

- configuration comes from the standard GitHub Actions environment
  (:meth:`Forge.from_env`); ``GITHUB_API_URL`` points it at GitHub Enterprise
  or a local test server;
- every HTTP 4xx/5xx becomes :class:`ToolingError` naming the method, the path,
  the status and GitHub's ``message``, plus what to do about it;
- one retry on 502/503, and on 403/429 that carry ``Retry-After`` (never
  sleeping more than :data:`MAX_RETRY_WAIT` seconds);
- bodies over GitHub's 65,536-character limit are refused before sending;
- the token is sent only as the ``Authorization`` header, only to the API's own
  origin (dropped on a redirect elsewhere), and never appears in a message or
  a ``repr``.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import IO, Any

from tooling import __version__
from tooling.errors import ToolingError

DEFAULT_API_URL = "https://api.github.com"
API_VERSION = "2022-11-28"
#: GitHub refuses issue, pull request and comment bodies longer than this
MAX_BODY = 65_536
#: the longest a retry ever waits, whatever ``Retry-After`` says
MAX_RETRY_WAIT = 5.0
#: the wait before retrying a 502/503 that has no ``Retry-After``
DEFAULT_RETRY_WAIT = 1.0
USER_AGENT = f"iac-tooling/{__version__} (python-urllib)"
PER_PAGE = 100
#: the plan report's hidden marker (the same string as ``tooling.core.report.MARKER``;
#: this edge does not import the core)
PLAN_REPORT_MARKER = "<!-- iac-tooling:plan-report -->"

JSONObject = dict[str, Any]

_STATES = ("open", "closed")
_LIST_STATES = ("open", "closed", "all")
_LINK = re.compile(r'<([^>]*)>\s*;\s*rel="([^"]*)"')
_TOKEN_HELP = (
    "set GITHUB_TOKEN (or GH_TOKEN) to a token that may write issues and pull requests; "
    "in GitHub Actions add `env: GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}` to the step and "
    "grant the job `permissions: {pull-requests: write, issues: write}`"
)


class Forge:
    """A GitHub REST client for one repository.

    Build it with explicit arguments, or from the environment with
    :meth:`from_env`. ``pr_number`` is the pull request the run belongs to, if
    any. ``max_wait`` caps the sleep before a retry (at most
    :data:`MAX_RETRY_WAIT`).
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
        token = token.strip()
        if not token:
            raise ToolingError(f"no GitHub token: {_TOKEN_HELP}")
        if any(ch.isspace() or not ch.isprintable() for ch in token):
            # never echo it: a header error from http.client would print the value
            raise ToolingError(
                "the GitHub token contains whitespace or control characters; "
                "check how GITHUB_TOKEN (or GH_TOKEN) is set"
            )
        self._token = token
        self.owner, self.name = _split_repository(repository)
        self.api_url = _check_api_url(api_url)
        self.pr_number = pr_number
        self.timeout = timeout
        self.max_wait = max(0.0, min(max_wait, MAX_RETRY_WAIT))
        self.user_agent = user_agent
        self._opener = urllib.request.build_opener(_SameOriginRedirect())

    # -- construction ---------------------------------------------------------

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, *, origin_url: str | None = None) -> Forge:
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
            raise ToolingError(f"GITHUB_TOKEN is not set (nor GH_TOKEN): {_TOKEN_HELP}")
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

    @property
    def repository(self) -> str:
        return f"{self.owner}/{self.name}"

    # -- comments -------------------------------------------------------------

    def list_comments(self, issue_number: int) -> list[JSONObject]:
        """Every comment on an issue or pull request, oldest first (all pages)."""
        return list(self._paginate(f"{self._repo_path}/issues/{issue_number}/comments"))

    def comment(self, number: int, body: str) -> JSONObject:
        """Add a comment to an issue or pull request."""
        _check_body(body, f"comment on #{number}")
        return self._object("POST", f"{self._repo_path}/issues/{number}/comments", {"body": body})

    def update_comment(self, comment_id: int, body: str) -> JSONObject:
        _check_body(body, f"comment {comment_id}")
        return self._object("PATCH", f"{self._repo_path}/issues/comments/{comment_id}", {"body": body})

    def upsert_comment(self, issue_number: int, marker: str, body: str) -> tuple[int, bool]:
        """Create or update the one comment on ``issue_number`` that carries ``marker``.

        ``marker`` is a hidden HTML comment such as
        ``<!-- iac-tooling:plan-report -->``; it is put first in the body when
        the body lacks it, so the next call finds the comment again. The
        oldest comment with the marker is updated in place; a new one is made
        only when none exists. Returns ``(comment_id, created)``.
        """
        if not marker.strip():
            raise ToolingError("the sticky-comment marker is empty; pass a hidden marker such as <!-- name -->")
        text = body if marker in body else f"{marker}\n{body}"
        _check_body(text, f"comment on #{issue_number}")
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

    def create_pull(self, title: str, body: str, head: str, base: str, draft: bool = False) -> JSONObject:
        _check_body(body, "pull request body")
        payload = {"title": title, "body": body, "head": head, "base": base, "draft": draft}
        return self._object("POST", f"{self._repo_path}/pulls", payload)

    def update_pull(
        self, number: int, title: str | None = None, body: str | None = None, state: str | None = None
    ) -> JSONObject:
        """Change a pull request's title, body or state (``open`` | ``closed``)."""
        payload = _changes(title=title, body=body, state=state, what=f"pull request #{number}")
        return self._object("PATCH", f"{self._repo_path}/pulls/{number}", payload)

    def add_labels(self, number: int, labels: Sequence[str]) -> list[JSONObject]:
        """Add labels to an issue or pull request; returns all its labels."""
        if isinstance(labels, str):
            raise TypeError("labels must be a sequence of names, not one string")
        result = self._request("POST", f"{self._repo_path}/issues/{number}/labels", {"labels": list(labels)})
        return _objects(result, f"POST {self._repo_path}/issues/{number}/labels")

    def pulls_of_commit(self, sha: str) -> list[JSONObject]:
        """The pull requests associated with commit ``sha`` (the merged one of a merge commit)."""
        return list(self._paginate(f"{self._repo_path}/commits/{urllib.parse.quote(sha, safe='')}/pulls"))

    # -- actions --------------------------------------------------------------

    def last_successful_run_sha(self, workflow: str, branch: str) -> str | None:
        """The head commit of the newest successful run of ``workflow`` (a file
        name such as ``apply.yml``) on ``branch``, or None."""
        path = f"{self._repo_path}/actions/workflows/{urllib.parse.quote(workflow, safe='')}/runs"
        result = self._request(
            "GET", path + "?" + urllib.parse.urlencode({"branch": branch, "status": "success", "per_page": 1})
        )
        runs = result.get("workflow_runs") if isinstance(result, dict) else None
        if not runs or not isinstance(runs[0], dict):
            return None
        sha = runs[0].get("head_sha")
        return sha if isinstance(sha, str) and sha else None

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
            if marker_or_title in (issue.get("body") or "") or issue.get("title") == marker_or_title:
                return issue
        return None

    def get_issue(self, number: int) -> JSONObject:
        return self._object("GET", f"{self._repo_path}/issues/{number}")

    def create_issue(self, title: str, body: str, labels: Sequence[str] = ()) -> JSONObject:
        if isinstance(labels, str):
            raise TypeError("labels must be a sequence of names, not one string")
        _check_body(body, "issue body")
        payload: JSONObject = {"title": title, "body": body}
        if labels:
            payload["labels"] = list(labels)
        return self._object("POST", f"{self._repo_path}/issues", payload)

    def update_issue(
        self, number: int, title: str | None = None, body: str | None = None, state: str | None = None
    ) -> JSONObject:
        """Change an issue's title, body or state (``open`` | ``closed``)."""
        payload = _changes(title=title, body=body, state=state, what=f"issue #{number}")
        return self._object("PATCH", f"{self._repo_path}/issues/{number}", payload)

    # -- transport ------------------------------------------------------------

    @property
    def _repo_path(self) -> str:
        return f"/repos/{urllib.parse.quote(self.owner, safe='')}/{urllib.parse.quote(self.name, safe='')}"

    def _url(self, path: str, query: Mapping[str, str | int] | None = None) -> str:
        url = self.api_url + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        return url

    def _shown(self, url: str) -> str:
        """``url`` as it appears in messages: the path (and query) under the API base."""
        return url[len(self.api_url) :] if url.startswith(self.api_url) else url

    def _object(self, method: str, path: str, payload: JSONObject | None = None) -> JSONObject:
        result = self._request(method, path, payload)
        if not isinstance(result, dict):
            raise ToolingError(f"GitHub API {method} {path}: expected a JSON object, got {type(result).__name__}")
        return result

    def _request(self, method: str, path: str, payload: JSONObject | None = None) -> Any:
        result, _ = self._send(method, self._url(path), payload)
        return result

    def _paginate(self, path: str, query: Mapping[str, str | int] | None = None) -> Iterator[JSONObject]:
        """Every item of a list endpoint, following ``Link: rel="next"``."""
        url: str | None = self._url(path, {**(query or {}), "per_page": PER_PAGE})
        while url is not None:
            result, headers = self._send("GET", url, None)
            yield from _objects(result, f"GET {self._shown(url)}")
            url = _next_link(headers.get("link", ""))
            if url is not None and not (url + "/").startswith(self.api_url + "/"):
                raise ToolingError(
                    f"GitHub API GET {path}: the next page is outside {self.api_url}; "
                    "refusing to send the token there (check GITHUB_API_URL)"
                )

    def _send(self, method: str, url: str, payload: JSONObject | None) -> tuple[Any, Mapping[str, str]]:
        """One request (and at most one retry); returns the decoded JSON and the
        response headers with lower-case names."""
        shown = self._shown(url)
        data = None
        if payload is not None:
            body = payload.get("body")
            if isinstance(body, str):
                _check_body(body, f"{method} {shown} body")
            data = json.dumps(payload).encode("utf-8")
        for attempt in (1, 2):
            request = urllib.request.Request(url, data=data, method=method)
            request.add_header("Accept", "application/vnd.github+json")
            request.add_header("X-GitHub-Api-Version", API_VERSION)
            request.add_header("User-Agent", self.user_agent)
            if data is not None:
                request.add_header("Content-Type", "application/json; charset=utf-8")
            # unredirected: urllib would otherwise copy it to any redirect target
            request.add_unredirected_header("Authorization", f"Bearer {self._token}")
            try:
                with self._opener.open(request, timeout=self.timeout) as response:
                    raw = response.read()
                    headers = {k.lower(): v for k, v in response.headers.items()}
            except urllib.error.HTTPError as err:
                raw = err.read()
                err_headers = {k.lower(): v for k, v in err.headers.items()}
                wait = self._retry_wait(err.code, err_headers) if attempt == 1 else None
                if wait is not None:
                    time.sleep(wait)
                    continue
                raise ToolingError(self._redact(_http_message(method, shown, err.code, raw))) from None
            except (OSError, http.client.HTTPException) as exc:
                reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
                raise ToolingError(
                    self._redact(
                        f"GitHub API {method} {shown}: cannot reach {self.api_url}: {reason} "
                        "(check GITHUB_API_URL and the network)"
                    )
                ) from None
            return _decode(raw, method, shown), headers
        raise AssertionError("unreachable")  # pragma: no cover

    def _retry_wait(self, status: int, headers: Mapping[str, str]) -> float | None:
        """Seconds to wait before the one retry, or None when ``status`` is not retried."""
        retry_after = _parse_retry_after(headers.get("retry-after"))
        if status in (502, 503):
            wait = DEFAULT_RETRY_WAIT if retry_after is None else retry_after
        elif status in (403, 429) and retry_after is not None:
            wait = retry_after
        else:
            return None
        return max(0.0, min(wait, self.max_wait))

    def _redact(self, text: str) -> str:
        return text.replace(self._token, "***")


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
        raise ToolingError(f"GITHUB_EVENT_PATH names {event_path}, which cannot be read: {exc.strerror}") from exc
    except json.JSONDecodeError as exc:
        raise ToolingError(f"GITHUB_EVENT_PATH names {event_path}, which is not JSON: {exc}") from exc
    if not isinstance(event, dict):
        return None
    number: object = None
    pull = event.get("pull_request")
    issue = event.get("issue")
    if isinstance(pull, dict):
        number = pull.get("number")
    elif isinstance(issue, dict) and issue.get("pull_request"):
        number = issue.get("number")
    return number if isinstance(number, int) and not isinstance(number, bool) and number > 0 else None


# -- helpers -------------------------------------------------------------------


class _SameOriginRedirect(urllib.request.HTTPRedirectHandler):
    """Follow redirects, carrying the Authorization header only within the same origin."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: http.client.HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        auth = req.unredirected_hdrs.get("Authorization")
        if new is not None and auth and _origin(new.full_url) == _origin(req.full_url):
            new.add_unredirected_header("Authorization", auth)
        return new


def _origin(url: str) -> tuple[str, str]:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


def _split_repository(repository: str) -> tuple[str, str]:
    owner, sep, name = repository.strip().partition("/")
    if not sep or not owner or not name or "/" in name:
        raise ToolingError(
            f"GITHUB_REPOSITORY must be owner/name (e.g. example-org/infrastructure), got {repository!r}"
        )
    return owner, name


def _check_api_url(api_url: str) -> str:
    parts = urllib.parse.urlsplit(api_url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise ToolingError(
            f"GITHUB_API_URL must be an http(s) URL such as {DEFAULT_API_URL} "
            f"(GitHub Enterprise: https://HOST/api/v3), got {api_url!r}"
        )
    return api_url.strip().rstrip("/")


def _check_state(state: str, allowed: Sequence[str]) -> None:
    if state not in allowed:
        raise ToolingError(f"state must be one of {', '.join(allowed)}; got {state!r}", code=2)


def _check_body(body: str, what: str) -> None:
    if len(body) > MAX_BODY:
        raise ToolingError(
            f"{what} is {len(body):,} characters; GitHub accepts at most {MAX_BODY:,}. "
            "Shorten it (link to the full text, e.g. a workflow artifact) and try again."
        )


def _changes(*, title: str | None, body: str | None, state: str | None, what: str) -> JSONObject:
    payload: JSONObject = {}
    if title is not None:
        payload["title"] = title
    if body is not None:
        _check_body(body, f"{what} body")
        payload["body"] = body
    if state is not None:
        _check_state(state, _STATES)
        payload["state"] = state
    if not payload:
        raise ValueError(f"nothing to update on {what}: pass title, body or state")
    return payload


def _objects(result: Any, what: str) -> list[JSONObject]:
    if not isinstance(result, list) or not all(isinstance(item, dict) for item in result):
        raise ToolingError(f"GitHub API {what}: expected a JSON list of objects")
    return result


def _decode(raw: bytes, method: str, shown: str) -> Any:
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ToolingError(f"GitHub API {method} {shown}: the response is not JSON ({exc})") from None


def _next_link(header: str) -> str | None:
    for url, rels in _LINK.findall(header):
        if "next" in rels.split():
            return str(url)
    return None


def _parse_retry_after(value: str | None) -> float | None:
    if value is None or not value.strip():
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


_HINTS = {
    401: "the token was refused: check that GITHUB_TOKEN (or GH_TOKEN) holds a valid, unexpired token",
    403: "the token may not do this: grant the job `permissions: {pull-requests: write, issues: write}` "
    "(or use a token with those scopes), or wait for the rate limit to reset",
    404: "check GITHUB_REPOSITORY and the number, and that the token can see the repository",
    410: "the resource is gone (issues may be disabled on the repository)",
    422: "GitHub rejected the request as invalid",
    429: "rate limited: wait and try again",
}


def _http_message(method: str, shown: str, status: int, raw: bytes) -> str:
    message = ""
    details: list[str] = []
    try:
        doc = json.loads(raw) if raw.strip() else None
    except (json.JSONDecodeError, UnicodeDecodeError):
        doc = None
        message = raw.decode("utf-8", "replace").strip()[:200]
    if isinstance(doc, dict):
        message = str(doc.get("message") or "")
        for error in doc.get("errors") or []:
            if isinstance(error, dict):
                text = error.get("message") or " ".join(
                    str(error[k]) for k in ("resource", "field", "code") if error.get(k)
                )
                details.append(str(text))
            else:
                details.append(str(error))
    text = f"GitHub API {method} {shown} failed with HTTP {status}"
    if message:
        text += f": {message}"
    if details:
        text += " (" + "; ".join(details) + ")"
    hint = _HINTS.get(status) or ("GitHub is having trouble; try again later" if status >= 500 else "")
    return f"{text}. {hint[:1].upper()}{hint[1:]}." if hint else text
