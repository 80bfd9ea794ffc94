"""The GitHub REST API transport (urllib only): one client per repository.

:class:`ApiClient` sends requests and nothing else; :class:`tooling.io.forge.Forge`
adds the handful of calls the pipeline makes. Here:

- every HTTP 4xx/5xx becomes :class:`ToolingError` naming the method, the path,
  the status and GitHub's ``message``, plus what to do about it;
- one retry on 502/503, and on 403/429 that carry ``Retry-After`` (never
  sleeping more than :data:`MAX_RETRY_WAIT` seconds);
- bodies over GitHub's 65,536-character limit are refused before sending;
- a response is read up to :data:`tooling.io.artifacts.API_PAGE`'s limit (plus one
  byte, to tell a longer one) and never further; each page of a list is checked
  by :func:`tooling.io.artifacts.parse` (size, JSON, schema) before it is used;
- a list is read across at most :data:`MAX_PAGES` pages, and a next page already
  read (a ``Link`` header that points back) stops it: both are one error naming
  the endpoint, never an endless loop of requests;
- the token is sent only as the ``Authorization`` header, only to the API's own
  origin (dropped on a redirect elsewhere, and on a next page elsewhere), and
  never appears in a message or a ``repr``.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import IO, Any

from tooling import __version__
from tooling.errors import ToolingError
from tooling.io import artifacts, redacting

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
#: the most pages one list is read across: 100 pages of :data:`PER_PAGE` items are
#: 10,000 items, far more than any list the pipeline reads (a pull request's comments,
#: the pull requests of a branch, the issues of one label, a repository's runners),
#: and at most 100 requests of the 5,000 an hour a token may send. A server whose
#: ``Link: rel="next"`` never ends stops here instead of looping forever.
MAX_PAGES = 100
#: the most bytes of an error response read (its ``message`` is all that is shown)
MAX_ERROR_BODY = 65_536
#: the plan report's hidden marker (the same string as ``tooling.core.report.comment.MARKER``;
#: this edge does not import the core)
PLAN_REPORT_MARKER = "<!-- iac-tooling:plan-report -->"

JSONObject = dict[str, Any]

_STATES = ("open", "closed")
_LIST_STATES = ("open", "closed", "all")
_LINK = re.compile(r'<([^>]*)>\s*;\s*rel="([^"]*)"')
TOKEN_HELP = (
    "set GITHUB_TOKEN (or GH_TOKEN) to a token that may write issues and pull requests; "
    "in GitHub Actions add `env: GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}` to the step and "
    "grant the job `permissions: {pull-requests: write, issues: write}`"
)


class ApiClient:
    """Requests to the GitHub REST API for one repository (``owner/name``).

    ``max_wait`` caps the sleep before a retry (at most :data:`MAX_RETRY_WAIT`).
    """

    def __init__(
        self,
        token: str,
        repository: str,
        api_url: str = DEFAULT_API_URL,
        *,
        timeout: float = 30.0,
        max_wait: float = MAX_RETRY_WAIT,
        user_agent: str = USER_AGENT,
    ) -> None:
        token = token.strip()
        if not token:
            raise ToolingError(f"no GitHub token: {TOKEN_HELP}")
        if any(ch.isspace() or not ch.isprintable() for ch in token):
            # never echo it: a header error from http.client would print the value
            raise ToolingError(
                "the GitHub token contains whitespace or control characters; "
                "check how GITHUB_TOKEN (or GH_TOKEN) is set"
            )
        self._token = token
        self.owner, self.name = _split_repository(repository)
        self.api_url = _check_api_url(api_url)
        self.timeout = timeout
        self.max_wait = max(0.0, min(max_wait, MAX_RETRY_WAIT))
        self.user_agent = user_agent
        self._opener = urllib.request.build_opener(_SameOriginRedirect())

    @property
    def repository(self) -> str:
        return f"{self.owner}/{self.name}"

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
            raise ToolingError(
                f"GitHub API {method} {path}: expected a JSON object, got {type(result).__name__}"
            )
        return result

    def _request(self, method: str, path: str, payload: JSONObject | None = None) -> Any:
        result, _ = self._send(method, self._url(path), payload)
        return result

    def _paginate(
        self, path: str, query: Mapping[str, str | int] | None = None
    ) -> Iterator[JSONObject]:
        """Every item of a list endpoint, following ``Link: rel="next"``."""
        for page, shown in self._pages(path, query):
            yield from json_objects(page, f"GET {shown}")

    def _pages(
        self, path: str, query: Mapping[str, str | int] | None = None
    ) -> Iterator[tuple[Any, str]]:
        """Each page of a list endpoint (checked as :data:`artifacts.API_PAGE`) and the
        URL it came from as shown in messages, following ``Link: rel="next"``: at most
        :data:`MAX_PAGES` pages, never the same page twice, never off the API's origin."""
        url: str | None = self._url(path, {**(query or {}), "per_page": PER_PAGE})
        seen: set[str] = set()
        while url is not None:
            shown = self._shown(url)
            if _canonical(url) in seen:
                raise ToolingError(
                    f"GitHub API GET {path}: the next page ({shown}) is one already read: the "
                    f"server's Link header loops; stopped after {len(seen)} page(s) "
                    "(check GITHUB_API_URL points at GitHub's API)"
                )
            if len(seen) >= MAX_PAGES:
                raise ToolingError(
                    f"GitHub API GET {path}: more than {MAX_PAGES} pages "
                    f"({MAX_PAGES * PER_PAGE:,} items), more than any list the pipeline reads; "
                    "stopped (check GITHUB_API_URL points at GitHub's API)"
                )
            seen.add(_canonical(url))
            raw, headers = self._send_raw("GET", url, None)
            yield artifacts.parse(raw, artifacts.API_PAGE, source=f"GitHub API GET {shown}"), shown
            url = next_link(headers.get("link", ""))
            if url is not None and not (url + "/").startswith(self.api_url + "/"):
                raise ToolingError(
                    f"GitHub API GET {path}: the next page is outside {self.api_url}; "
                    "refusing to send the token there (check GITHUB_API_URL)"
                )

    def _send(
        self, method: str, url: str, payload: JSONObject | None
    ) -> tuple[Any, Mapping[str, str]]:
        """One request (and at most one retry); returns the decoded JSON and the
        response headers with lower-case names."""
        raw, headers = self._send_raw(method, url, payload)
        return _decode(raw, method, self._shown(url)), headers

    def _send_raw(
        self, method: str, url: str, payload: JSONObject | None
    ) -> tuple[bytes, Mapping[str, str]]:
        """One request (and at most one retry); returns the response's bytes (at most
        :data:`artifacts.API_PAGE`'s limit: a longer one is refused having read one byte
        more) and the response headers with lower-case names."""
        shown = self._shown(url)
        limit = artifacts.API_PAGE.limit
        data = None
        if payload is not None:
            # nothing posted to GitHub carries a secret: the one redaction step
            payload = {
                k: redacting.redact(v) if isinstance(v, str) else v for k, v in payload.items()
            }
            body = payload.get("body")
            if isinstance(body, str):
                check_body(body, f"{method} {shown} body")
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
                    raw = response.read(limit + 1)
                    headers = {k.lower(): v for k, v in response.headers.items()}
            except urllib.error.HTTPError as err:
                raw = err.read(MAX_ERROR_BODY)
                err_headers = {k.lower(): v for k, v in err.headers.items()}
                wait = self._retry_wait(err.code, err_headers) if attempt == 1 else None
                if wait is not None:
                    time.sleep(wait)
                    continue
                raise ToolingError(
                    self._redact(_http_message(method, shown, err.code, raw))
                ) from None
            except (OSError, http.client.HTTPException) as exc:
                reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
                raise ToolingError(
                    self._redact(
                        f"GitHub API {method} {shown}: cannot reach {self.api_url}: {reason} "
                        "(check GITHUB_API_URL and the network)"
                    )
                ) from None
            if len(raw) > limit:
                raise ToolingError(
                    f"GitHub API {method} {shown}: the response is larger than "
                    f"{limit // artifacts.MiB} MiB, more than any answer the pipeline reads; "
                    "refused (check GITHUB_API_URL points at GitHub's API)"
                )
            return raw, headers
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


def check_body(body: str, what: str) -> None:
    if len(body) > MAX_BODY:
        raise ToolingError(
            f"{what} is {len(body):,} characters; GitHub accepts at most {MAX_BODY:,}. "
            "Shorten it (link to the full text, e.g. a workflow artifact) and try again."
        )


def json_objects(result: Any, what: str) -> list[JSONObject]:
    if not isinstance(result, list) or not all(isinstance(item, dict) for item in result):
        raise ToolingError(f"GitHub API {what}: expected a JSON list of objects")
    return result


def _decode(raw: bytes, method: str, shown: str) -> Any:
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ToolingError(
            f"GitHub API {method} {shown}: the response is not JSON ({exc})"
        ) from None


def _canonical(url: str) -> str:
    """``url`` with its query's parameters in one order, and ``page=1`` when it names no
    page (GitHub's first): the same page however the server writes its address."""
    parts = urllib.parse.urlsplit(url)
    params = urllib.parse.parse_qsl(parts.query, True)
    if not any(name == "page" for name, _ in params):
        params.append(("page", "1"))
    query = urllib.parse.urlencode(sorted(params))
    return urllib.parse.urlunsplit(parts._replace(query=query, fragment=""))


def next_link(header: str) -> str | None:
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
    hint = _HINTS.get(status) or (
        "GitHub is having trouble; try again later" if status >= 500 else ""
    )
    return f"{text}. {hint[:1].upper()}{hint[1:]}." if hint else text
