"""A local GitHub REST API server for tests: one repository, in memory.

It is a real HTTP server (``http.server.ThreadingHTTPServer`` on 127.0.0.1 and
a random port, in a thread) that speaks the subset of the GitHub REST API the
tooling uses, with GitHub's response shapes:

- issues and pull requests share one number space; a pull request is also an
  issue (``GET /issues`` lists it with a ``pull_request`` key);
- issue comments (``GET``/``POST /issues/{n}/comments``,
  ``GET``/``PATCH /issues/comments/{id}``);
- pull requests (``GET``/``POST /pulls``, filtered by ``head``/``base``/``state``;
  ``GET``/``PATCH /pulls/{n}``);
- issues (``GET``/``POST /issues``, filtered by ``state``/``labels``;
  ``GET``/``PATCH /issues/{n}``) and ``POST /issues/{n}/labels``;
- a workflow's runs (``GET /actions/workflows/{file}/runs``, filtered by
  ``branch``/``status``, newest first; seed with :meth:`RepoState.add_run`) and
  the pull requests of a commit (``GET /commits/{sha}/pulls``: those whose
  ``merge_commit_sha`` is the commit);
- the repository's self-hosted runners (``GET /actions/runners``:
  ``{"total_count", "runners"}``, each with ``status`` online/offline, ``busy``
  and ``labels`` of type ``read-only`` (self-hosted, Linux, X64) or
  ``custom``; seed with :meth:`RepoState.add_runner`, change with
  :meth:`RepoState.set_runner`);
- pagination (``per_page`` up to 100, default 30, ``page``) with ``Link``
  headers; a list endpoint can be made to answer a broken ``Link`` header
  (:meth:`RepoState.break_links`: ``rel="next"`` back at the page itself, or
  at one more page for ever) or a body of a given size streamed without a
  ``Content-Length`` (:meth:`RepoState.oversize`; the bytes it managed to send
  before the client hung up are in :attr:`GitHubAPI.sent`);
- 401 without the right ``Authorization`` header, 404 for anything else
  (including another repository), 400 for bad JSON, 422 for a body over
  65,536 characters or a duplicate pull request.

Every request is recorded (method, path, query, JSON body, headers, status)
in :attr:`GitHubAPI.requests`. :class:`RepoState` has helpers to seed state
and to make the next responses fail (:meth:`RepoState.fail_next`).
"""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

DEFAULT_REPOSITORY = "example-org/infrastructure"
DEFAULT_TOKEN = "ghs_testtoken0123456789abcdefABCDEF0123"
MAX_BODY = 65_536
BOT = {"login": "github-actions[bot]", "id": 41898282, "type": "Bot", "site_admin": False}
HUMAN = {"login": "octocat", "id": 583231, "type": "User", "site_admin": False}
DOCS = "https://docs.github.com/rest"
#: the most pages with a broken ``Link`` header served (then a page ends the list)
BROKEN_LINKS_GUARD = 1_000

JSON = dict[str, Any]


@dataclass
class Recorded:
    """One request as the server saw it."""

    method: str
    path: str
    query: dict[str, list[str]]
    body: Any
    headers: dict[str, str]
    status: int = 0

    def header(self, name: str) -> str | None:
        """A request header by case-insensitive name."""
        for key, value in self.headers.items():
            if key.lower() == name.lower():
                return value
        return None

    def param(self, name: str) -> str | None:
        values = self.query.get(name)
        return values[0] if values else None


class HTTPError(Exception):
    """Raised by a route to answer with an error status."""

    def __init__(self, status: int, message: str, errors: list[JSON] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.errors = errors


@dataclass
class _Failure:
    status: int
    message: str
    headers: dict[str, str]
    method: str | None
    path: str | None
    #: answered as is (a page of the wrong shape), instead of an error document
    doc: Any = None


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class RepoState:
    """The in-memory state of one repository. All helpers are thread-safe."""

    repository: str = DEFAULT_REPOSITORY
    token: str = DEFAULT_TOKEN
    api_url: str = "http://127.0.0.1"
    #: every issue and pull request by number (``is_pull`` tells them apart)
    issues: dict[int, JSON] = field(default_factory=dict)
    #: pull-request-only fields by number: head, base, draft, merged, merged_at
    pulls: dict[int, JSON] = field(default_factory=dict)
    #: every comment by id, with ``issue_number``
    comments: dict[int, JSON] = field(default_factory=dict)
    #: labels that exist in the repository, by name
    labels: dict[str, JSON] = field(default_factory=dict)
    #: workflow runs, oldest first: ``{"id", "path", "head_branch", "head_sha", "status", "conclusion"}``
    runs: list[JSON] = field(default_factory=list)
    #: commit statuses, oldest first: ``{"id", "sha", "state", "context", "description", "target_url"}``
    statuses: list[JSON] = field(default_factory=list)
    #: self-hosted runners by id
    runners: dict[int, JSON] = field(default_factory=dict)
    #: list endpoints (a path suffix) whose ``Link`` header is broken: ``self`` or ``endless``
    broken_links: dict[str, str] = field(default_factory=dict)
    #: list endpoints (a path suffix) answered with a JSON list of this many bytes, streamed
    oversized: dict[str, int] = field(default_factory=dict)
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    _failures: list[_Failure] = field(default_factory=list, repr=False)
    #: the pages with a broken ``Link`` header served so far
    broken_served: int = 0
    _next_number: int = 1
    _next_id: int = 1_000_001

    @property
    def owner(self) -> str:
        return self.repository.split("/")[0]

    @property
    def name(self) -> str:
        return self.repository.split("/")[1]

    @property
    def html_base(self) -> str:
        return f"https://github.com/{self.repository}"

    @property
    def api_base(self) -> str:
        return f"{self.api_url}/repos/{self.repository}"

    # -- seeding ---------------------------------------------------------------

    def add_issue(
        self,
        title: str,
        body: str = "",
        labels: Iterable[str] = (),
        state: str = "open",
        user: Mapping[str, Any] = HUMAN,
    ) -> JSON:
        """Create an issue directly; returns its API representation."""
        with self.lock:
            number = self._new_number()
            now = _now()
            self.issues[number] = {
                "id": self._new_id(),
                "number": number,
                "title": title,
                "body": body,
                "state": state,
                "state_reason": "completed" if state == "closed" else None,
                "labels": [],
                "user": dict(user),
                "created_at": now,
                "updated_at": now,
                "closed_at": now if state == "closed" else None,
                "is_pull": False,
            }
            self._label(number, labels)
            return self.issue_json(number)

    def add_pull(
        self,
        head: str,
        base: str = "main",
        title: str | None = None,
        body: str = "",
        state: str = "open",
        merged: bool = False,
        draft: bool = False,
        labels: Iterable[str] = (),
        user: Mapping[str, Any] = HUMAN,
        head_sha: str | None = None,
    ) -> JSON:
        """Create a pull request directly (e.g. a closed, unmerged one); returns its
        API representation. ``merged=True`` implies ``state="closed"``; ``head_sha``: its
        head commit (default: a made-up one from its number)."""
        with self.lock:
            if merged:
                state = "closed"
            number = self._new_number()
            now = _now()
            self.issues[number] = {
                "id": self._new_id(),
                "number": number,
                "title": title if title is not None else f"Update {head}",
                "body": body,
                "state": state,
                "state_reason": None,
                "labels": [],
                "user": dict(user),
                "created_at": now,
                "updated_at": now,
                "closed_at": now if state == "closed" else None,
                "is_pull": True,
            }
            self.pulls[number] = {
                "head": head.split(":", 1)[-1],
                "head_owner": head.split(":", 1)[0] if ":" in head else self.owner,
                "base": base,
                "draft": draft,
                "merged": merged,
                "merged_at": now if merged else None,
                "head_sha": head_sha,
            }
            self._label(number, labels)
            return self.pull_json(number)

    def add_run(
        self,
        workflow: str,
        head_sha: str,
        *,
        branch: str = "main",
        conclusion: str = "success",
        event: str = "push",
        run_id: int | None = None,
    ) -> JSON:
        """Record a completed run of ``workflow`` (a file name such as ``apply.yml``)
        for ``event``; ``run_id``: its id (a rehearsed run's GITHUB_RUN_ID)."""
        with self.lock:
            run = {
                "id": run_id if run_id is not None else self._new_id(),
                "event": event,
                "path": f".github/workflows/{workflow}",
                "head_branch": branch,
                "head_sha": head_sha,
                "status": "completed",
                "conclusion": conclusion,
                "created_at": _now(),
            }
            self.runs.append(run)
            return dict(run)

    def add_runner(
        self,
        name: str,
        labels: Iterable[str] = ("lan",),
        *,
        status: str = "online",
        busy: bool = False,
    ) -> JSON:
        """Register a self-hosted Linux x64 runner with ``labels`` as its custom labels."""
        with self.lock:
            runner_id = len(self.runners) + 1
            names = [("self-hosted", "read-only"), ("Linux", "read-only"), ("X64", "read-only")]
            names += [(label, "custom") for label in labels]
            self.runners[runner_id] = {
                "id": runner_id,
                "name": name,
                "os": "Linux",
                "status": status,
                "busy": busy,
                "ephemeral": False,
                "labels": [
                    {"id": i + 1, "name": label, "type": kind}
                    for i, (label, kind) in enumerate(names)
                ],
            }
            return dict(self.runners[runner_id])

    def set_runner(self, name: str, *, status: str | None = None, busy: bool | None = None) -> None:
        """Change a runner's ``status`` (online | offline) or ``busy``."""
        with self.lock:
            for runner in self.runners.values():
                if runner["name"] == name:
                    if status is not None:
                        runner["status"] = status
                    if busy is not None:
                        runner["busy"] = busy
                    return
            raise KeyError(f"no runner {name!r}")

    def merge(self, number: int, merge_commit_sha: str) -> JSON:
        """Mark pull request ``number`` merged as ``merge_commit_sha``."""
        with self.lock:
            pr = self.pulls[number]
            pr.update(merged=True, merged_at=_now(), merge_commit_sha=merge_commit_sha)
            self.issues[number].update(state="closed", closed_at=_now())
            return self.pull_json(number)

    def add_comment(self, number: int, body: str, user: Mapping[str, Any] = HUMAN) -> JSON:
        with self.lock:
            if number not in self.issues:
                raise KeyError(f"no issue or pull request #{number}")
            comment_id = self._new_id()
            now = _now()
            self.comments[comment_id] = {
                "id": comment_id,
                "issue_number": number,
                "body": body,
                "user": dict(user),
                "created_at": now,
                "updated_at": now,
            }
            return self.comment_json(comment_id)

    def add_comments(
        self, number: int, bodies: Iterable[str], user: Mapping[str, Any] = HUMAN
    ) -> list[JSON]:
        return [self.add_comment(number, body, user) for body in bodies]

    def fail_next(
        self,
        status: int,
        message: str = "Service Unavailable",
        *,
        headers: Mapping[str, str] | None = None,
        times: int = 1,
        method: str | None = None,
        path: str | None = None,
    ) -> None:
        """Answer the next ``times`` matching requests (any, or this method/path
        prefix) with ``status`` and ``headers`` instead of handling them."""
        with self.lock:
            for _ in range(times):
                self._failures.append(_Failure(status, message, dict(headers or {}), method, path))

    def break_links(self, suffix: str, how: str) -> None:
        """Make the pages of the list endpoints whose path ends with ``suffix`` point
        ``rel="next"`` back at themselves (``how="self"``) or at one more page for ever
        (``how="endless"``). The server's own guard: after :data:`BROKEN_LINKS_GUARD`
        such pages it sends no ``Link`` any more, so a client that follows them ends."""
        if how not in ("self", "endless"):
            raise ValueError(how)
        with self.lock:
            self.broken_links[suffix] = how

    def oversize(self, suffix: str, size: int) -> None:
        """Answer ``GET`` on the list endpoints whose path ends with ``suffix`` with a
        JSON list of objects of about ``size`` bytes, streamed without ``Content-Length``."""
        with self.lock:
            self.oversized[suffix] = size

    def answer_next(self, doc: Any, *, method: str = "GET", path: str | None = None) -> None:
        """Answer the next matching request with 200 and ``doc`` instead of handling it."""
        with self.lock:
            self._failures.append(_Failure(200, "", {}, method, path, doc))

    # -- reading ---------------------------------------------------------------

    def comments_on(self, number: int) -> list[JSON]:
        with self.lock:
            return [
                self.comment_json(c["id"])
                for c in self.comments.values()
                if c["issue_number"] == number
            ]

    def labels_on(self, number: int) -> list[str]:
        with self.lock:
            return list(self.issues[number]["labels"])

    def issue_json(self, number: int) -> JSON:
        with self.lock:
            rec = self.issues[number]
            kind = "pull" if rec["is_pull"] else "issues"
            out: JSON = {
                "id": rec["id"],
                "node_id": f"I_kw{rec['id']}",
                "number": number,
                "url": f"{self.api_base}/issues/{number}",
                "repository_url": self.api_base,
                "labels_url": f"{self.api_base}/issues/{number}/labels{{/name}}",
                "comments_url": f"{self.api_base}/issues/{number}/comments",
                "html_url": f"{self.html_base}/{kind}/{number}",
                "title": rec["title"],
                "body": rec["body"],
                "user": dict(rec["user"]),
                "labels": [dict(self.labels[name]) for name in rec["labels"]],
                "state": rec["state"],
                "state_reason": rec["state_reason"],
                "locked": False,
                "assignees": [],
                "comments": sum(1 for c in self.comments.values() if c["issue_number"] == number),
                "created_at": rec["created_at"],
                "updated_at": rec["updated_at"],
                "closed_at": rec["closed_at"],
                "author_association": "MEMBER",
            }
            if rec["is_pull"]:
                pr = self.pulls[number]
                out["draft"] = pr["draft"]
                out["pull_request"] = {
                    "url": f"{self.api_base}/pulls/{number}",
                    "html_url": f"{self.html_base}/pull/{number}",
                    "merged_at": pr["merged_at"],
                }
            return out

    def pull_json(self, number: int, *, full: bool = True) -> JSON:
        """A pull request as ``GET /pulls/{n}`` (``full``) or ``GET /pulls`` shows it."""
        with self.lock:
            rec = self.issues[number]
            pr = self.pulls[number]
            repo = {
                "id": 700_001,
                "name": self.name,
                "full_name": self.repository,
                "owner": {"login": self.owner, "type": "Organization"},
                "private": True,
                "html_url": self.html_base,
                "url": self.api_base,
            }
            out: JSON = {
                "id": rec["id"] + 500_000_000,
                "node_id": f"PR_kw{rec['id']}",
                "number": number,
                "url": f"{self.api_base}/pulls/{number}",
                "html_url": f"{self.html_base}/pull/{number}",
                "issue_url": f"{self.api_base}/issues/{number}",
                "state": rec["state"],
                "locked": False,
                "title": rec["title"],
                "body": rec["body"],
                "user": dict(rec["user"]),
                "labels": [dict(self.labels[name]) for name in rec["labels"]],
                "draft": pr["draft"],
                "created_at": rec["created_at"],
                "updated_at": rec["updated_at"],
                "closed_at": rec["closed_at"],
                "merged_at": pr["merged_at"],
                "merge_commit_sha": pr.get("merge_commit_sha"),
                "head": {
                    "label": f"{pr['head_owner']}:{pr['head']}",
                    "ref": pr["head"],
                    "sha": pr.get("head_sha") or f"{number:040x}",
                    "repo": repo,
                },
                "base": {
                    "label": f"{self.owner}:{pr['base']}",
                    "ref": pr["base"],
                    "sha": "0" * 40,
                    "repo": repo,
                },
                "author_association": "MEMBER",
            }
            if full:
                out["merged"] = pr["merged"]
                out["mergeable"] = None if rec["state"] == "closed" else True
                out["comments"] = sum(
                    1 for c in self.comments.values() if c["issue_number"] == number
                )
            return out

    def comment_json(self, comment_id: int) -> JSON:
        with self.lock:
            rec = self.comments[comment_id]
            number = rec["issue_number"]
            kind = "pull" if self.issues[number]["is_pull"] else "issues"
            return {
                "id": comment_id,
                "node_id": f"IC_kw{comment_id}",
                "url": f"{self.api_base}/issues/comments/{comment_id}",
                "html_url": f"{self.html_base}/{kind}/{number}#issuecomment-{comment_id}",
                "issue_url": f"{self.api_base}/issues/{number}",
                "body": rec["body"],
                "user": dict(rec["user"]),
                "created_at": rec["created_at"],
                "updated_at": rec["updated_at"],
                "author_association": "MEMBER",
            }

    # -- internals ---------------------------------------------------------------

    def _new_number(self) -> int:
        number = self._next_number
        self._next_number += 1
        return number

    def _new_id(self) -> int:
        new = self._next_id
        self._next_id += 1
        return new

    def _label(self, number: int, names: Iterable[str]) -> None:
        current: list[str] = self.issues[number]["labels"]
        for name in names:
            if name not in self.labels:
                self.labels[name] = {
                    "id": self._new_id(),
                    "node_id": f"LA_kw{len(self.labels)}",
                    "url": f"{self.api_base}/labels/{urllib.parse.quote(name)}",
                    "name": name,
                    "color": "ededed",
                    "default": False,
                    "description": None,
                }
            if name not in current:
                current.append(name)

    def _take_failure(self, method: str, path: str) -> _Failure | None:
        with self.lock:
            for i, failure in enumerate(self._failures):
                if (failure.method is None or failure.method == method) and (
                    failure.path is None or path.startswith(failure.path)
                ):
                    return self._failures.pop(i)
        return None


# -- routes ------------------------------------------------------------------------

Route = Callable[["_Call"], tuple[int, Any]]


@dataclass
class _Call:
    state: RepoState
    method: str
    path: str
    query: dict[str, list[str]]
    body: Any
    params: dict[str, str]
    base_url: str
    headers_out: dict[str, str] = field(default_factory=dict)

    def arg(self, name: str, default: str | None = None) -> str | None:
        values = self.query.get(name)
        return values[0] if values else default

    def number(self) -> int:
        return int(self.params["number"])

    def page(self, items: list[JSON]) -> tuple[int, Any]:
        """One page of ``items`` with GitHub's ``Link`` header."""
        try:
            per_page = max(1, min(100, int(self.arg("per_page", "30") or "30")))
            page = max(1, int(self.arg("page", "1") or "1"))
        except ValueError as exc:
            raise HTTPError(422, "Validation Failed") from exc
        last = max(1, -(-len(items) // per_page))
        links = []

        def link(n: int, rel: str) -> str:
            query = {k: v[0] for k, v in self.query.items()}
            query.update(per_page=str(per_page), page=str(n))
            return f'<{self.base_url}{self.path}?{urllib.parse.urlencode(query)}>; rel="{rel}"'

        if page > 1:
            links += [link(page - 1, "prev"), link(1, "first")]
        broken = next(
            (how for end, how in self.state.broken_links.items() if self.path.endswith(end)), None
        )
        if broken is not None and self.state.broken_served < BROKEN_LINKS_GUARD:
            self.state.broken_served += 1
            links = [link(page if broken == "self" else page + 1, "next")]
        elif page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        if links:
            self.headers_out["Link"] = ", ".join(links)
        return 200, items[(page - 1) * per_page : page * per_page]

    def payload(self) -> JSON:
        if self.body is None:
            return {}
        if not isinstance(self.body, dict):
            raise HTTPError(400, "Problems parsing JSON")
        return self.body


def _too_long(resource: str, body: Any) -> None:
    if isinstance(body, str) and len(body) > MAX_BODY:
        raise HTTPError(
            422,
            "Validation Failed",
            [
                {
                    "resource": resource,
                    "code": "custom",
                    "field": "body",
                    "message": f"body is too long (maximum is {MAX_BODY} characters)",
                }
            ],
        )


def _missing(resource: str, name: str) -> HTTPError:
    return HTTPError(
        422, "Validation Failed", [{"resource": resource, "code": "missing_field", "field": name}]
    )


def _existing(state: RepoState, number: int, *, pull: bool = False) -> None:
    if number not in state.issues or (pull and not state.issues[number]["is_pull"]):
        raise HTTPError(404, "Not Found")


def _set_state(state: RepoState, number: int, new: Any, resource: str) -> None:
    rec = state.issues[number]
    if new not in ("open", "closed"):
        raise HTTPError(
            422, "Validation Failed", [{"resource": resource, "code": "invalid", "field": "state"}]
        )
    if new == rec["state"]:
        return
    if rec["is_pull"] and state.pulls[number]["merged"]:
        raise HTTPError(
            422,
            "Validation Failed",
            [
                {
                    "resource": resource,
                    "code": "custom",
                    "field": "state",
                    "message": "state cannot be changed. The pull request has been merged.",
                }
            ],
        )
    rec["state"] = new
    rec["closed_at"] = _now() if new == "closed" else None
    rec["state_reason"] = (
        ("completed" if new == "closed" else "reopened") if not rec["is_pull"] else None
    )


def list_comments(call: _Call) -> tuple[int, Any]:
    _existing(call.state, call.number())
    return call.page(call.state.comments_on(call.number()))


def create_comment(call: _Call) -> tuple[int, Any]:
    _existing(call.state, call.number())
    body = call.payload().get("body")
    if not isinstance(body, str) or not body:
        raise _missing("IssueComment", "body")
    _too_long("IssueComment", body)
    made = call.state.add_comment(call.number(), body, BOT)
    call.headers_out["Location"] = made["url"]
    return 201, made


def get_comment(call: _Call) -> tuple[int, Any]:
    comment_id = int(call.params["id"])
    if comment_id not in call.state.comments:
        raise HTTPError(404, "Not Found")
    return 200, call.state.comment_json(comment_id)


def update_comment(call: _Call) -> tuple[int, Any]:
    comment_id = int(call.params["id"])
    if comment_id not in call.state.comments:
        raise HTTPError(404, "Not Found")
    body = call.payload().get("body")
    if not isinstance(body, str) or not body:
        raise _missing("IssueComment", "body")
    _too_long("IssueComment", body)
    rec = call.state.comments[comment_id]
    rec["body"] = body
    rec["updated_at"] = _now()
    return 200, call.state.comment_json(comment_id)


def list_pulls(call: _Call) -> tuple[int, Any]:
    state = call.state
    want = call.arg("state", "open")
    head = call.arg("head")
    base = call.arg("base")
    out = []
    for number in sorted(state.pulls, reverse=True):  # newest first, as GitHub sorts by default
        rec, pr = state.issues[number], state.pulls[number]
        if want != "all" and rec["state"] != want:
            continue
        if head is not None:
            owner, _, ref = head.rpartition(":")
            if ref != pr["head"] or (owner and owner != pr["head_owner"]):
                continue
        if base is not None and base != pr["base"]:
            continue
        out.append(state.pull_json(number, full=False))
    return call.page(out)


def create_pull(call: _Call) -> tuple[int, Any]:
    data = call.payload()
    for name in ("title", "head", "base"):
        if not isinstance(data.get(name), str) or not data[name]:
            raise _missing("PullRequest", name)
    _too_long("PullRequest", data.get("body"))
    state = call.state
    head = data["head"]
    owner, _, ref = head.rpartition(":")
    owner = owner or state.owner
    if ref == data["base"]:
        raise HTTPError(
            422,
            "Validation Failed",
            [
                {
                    "resource": "PullRequest",
                    "code": "custom",
                    "message": f"No commits between {data['base']} and {ref}",
                }
            ],
        )
    for number, pr in state.pulls.items():
        if (
            pr["head"] == ref
            and pr["head_owner"] == owner
            and pr["base"] == data["base"]
            and state.issues[number]["state"] == "open"
        ):
            raise HTTPError(
                422,
                "Validation Failed",
                [
                    {
                        "resource": "PullRequest",
                        "code": "custom",
                        "message": f"A pull request already exists for {owner}:{ref}.",
                    }
                ],
            )
    made = state.add_pull(
        f"{owner}:{ref}",
        data["base"],
        title=data["title"],
        body=data.get("body") or "",
        draft=bool(data.get("draft", False)),
        user=BOT,
    )
    call.headers_out["Location"] = made["url"]
    return 201, state.pull_json(made["number"])


def get_pull(call: _Call) -> tuple[int, Any]:
    _existing(call.state, call.number(), pull=True)
    return 200, call.state.pull_json(call.number())


def update_pull(call: _Call) -> tuple[int, Any]:
    state, number = call.state, call.number()
    _existing(state, number, pull=True)
    data = call.payload()
    _too_long("PullRequest", data.get("body"))
    rec = state.issues[number]
    if "state" in data:
        _set_state(state, number, data["state"], "PullRequest")
    for key in ("title", "body"):
        if key in data:
            rec[key] = data[key]
    if "base" in data:
        state.pulls[number]["base"] = data["base"]
    rec["updated_at"] = _now()
    return 200, state.pull_json(number)


def list_issues(call: _Call) -> tuple[int, Any]:
    state = call.state
    want = call.arg("state", "open")
    labels = [name for name in (call.arg("labels") or "").split(",") if name]
    out = []
    for number in sorted(state.issues, reverse=True):  # newest first
        rec = state.issues[number]
        if want != "all" and rec["state"] != want:
            continue
        if not all(name in rec["labels"] for name in labels):
            continue
        out.append(state.issue_json(number))
    return call.page(out)


def create_issue(call: _Call) -> tuple[int, Any]:
    data = call.payload()
    if not isinstance(data.get("title"), str) or not data["title"]:
        raise _missing("Issue", "title")
    _too_long("Issue", data.get("body"))
    labels = data.get("labels") or []
    if not isinstance(labels, list) or not all(isinstance(name, str) for name in labels):
        raise HTTPError(
            422, "Validation Failed", [{"resource": "Issue", "code": "invalid", "field": "labels"}]
        )
    made = call.state.add_issue(data["title"], data.get("body") or "", labels, user=BOT)
    call.headers_out["Location"] = made["url"]
    return 201, made


def get_issue(call: _Call) -> tuple[int, Any]:
    _existing(call.state, call.number())
    return 200, call.state.issue_json(call.number())


def update_issue(call: _Call) -> tuple[int, Any]:
    state, number = call.state, call.number()
    _existing(state, number)
    data = call.payload()
    _too_long("Issue", data.get("body"))
    rec = state.issues[number]
    if "state" in data:
        _set_state(state, number, data["state"], "Issue")
    for key in ("title", "body"):
        if key in data:
            rec[key] = data[key]
    if "labels" in data:
        rec["labels"] = []
        state._label(number, data["labels"])
    rec["updated_at"] = _now()
    return 200, state.issue_json(number)


def add_labels(call: _Call) -> tuple[int, Any]:
    state, number = call.state, call.number()
    _existing(state, number)
    data = call.body
    labels = data.get("labels") if isinstance(data, dict) else data
    if not isinstance(labels, list) or not all(isinstance(name, str) for name in labels):
        raise HTTPError(
            422, "Validation Failed", [{"resource": "Label", "code": "invalid", "field": "labels"}]
        )
    state._label(number, labels)
    return 200, [dict(state.labels[name]) for name in state.issues[number]["labels"]]


def list_runs(call: _Call) -> tuple[int, Any]:
    workflow = call.params["workflow"]
    branch, status = call.arg("branch"), call.arg("status")
    event, head_sha = call.arg("event"), call.arg("head_sha")
    with call.state.lock:
        runs = [
            {**r, "status": r["status"]}
            for r in reversed(call.state.runs)
            if r["path"].rsplit("/", 1)[-1] == workflow
            and (branch is None or r["head_branch"] == branch)
            and (status is None or status in (r["status"], r["conclusion"]))
            and (event is None or r["event"] == event)
            and (head_sha is None or r["head_sha"] == head_sha)
        ]
    code, page = call.page(runs)
    return code, {"total_count": len(runs), "workflow_runs": page}


def list_runners(call: _Call) -> tuple[int, Any]:
    with call.state.lock:
        runners = [dict(r) for _, r in sorted(call.state.runners.items())]
    code, page = call.page(runners)
    return code, {"total_count": len(runners), "runners": page}


def commit_pulls(call: _Call) -> tuple[int, Any]:
    sha = call.params["sha"]
    with call.state.lock:
        numbers = [n for n, pr in call.state.pulls.items() if pr.get("merge_commit_sha") == sha]
        return call.page([call.state.pull_json(n, full=False) for n in numbers])


def create_status(call: _Call) -> tuple[int, Any]:
    """POST /statuses/{sha}: GitHub's rules: a known state, a description of at most 140."""
    body = call.payload()
    state = body.get("state")
    if state not in ("error", "failure", "pending", "success"):
        raise HTTPError(422, "Validation Failed", [{"resource": "Status", "field": "state"}])
    if len(str(body.get("description") or "")) > 140:
        raise HTTPError(422, "Validation Failed", [{"resource": "Status", "field": "description"}])
    with call.state.lock:
        status = {
            "id": call.state._new_id(),
            "sha": call.params["sha"],
            "state": state,
            "context": body.get("context") or "default",
            "description": body.get("description"),
            "target_url": body.get("target_url"),
        }
        call.state.statuses.append(status)
    return 201, dict(status)


def list_statuses(call: _Call) -> tuple[int, Any]:
    """GET /commits/{ref}/statuses: newest first."""
    with call.state.lock:
        return call.page(
            [dict(s) for s in reversed(call.state.statuses) if s["sha"] == call.params["sha"]]
        )


_REPO = r"/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)"
ROUTES: list[tuple[str, re.Pattern[str], Route]] = [
    (method, re.compile(_REPO + pattern + r"/?"), handler)
    for method, pattern, handler in [
        ("GET", r"/issues/comments/(?P<id>\d+)", get_comment),
        ("PATCH", r"/issues/comments/(?P<id>\d+)", update_comment),
        ("GET", r"/issues/(?P<number>\d+)/comments", list_comments),
        ("POST", r"/issues/(?P<number>\d+)/comments", create_comment),
        ("POST", r"/issues/(?P<number>\d+)/labels", add_labels),
        ("GET", r"/issues/(?P<number>\d+)", get_issue),
        ("PATCH", r"/issues/(?P<number>\d+)", update_issue),
        ("GET", r"/issues", list_issues),
        ("POST", r"/issues", create_issue),
        ("GET", r"/pulls/(?P<number>\d+)", get_pull),
        ("PATCH", r"/pulls/(?P<number>\d+)", update_pull),
        ("GET", r"/pulls", list_pulls),
        ("POST", r"/pulls", create_pull),
        ("GET", r"/actions/workflows/(?P<workflow>[^/]+)/runs", list_runs),
        ("GET", r"/actions/runners", list_runners),
        ("GET", r"/commits/(?P<sha>[0-9a-fA-F]{7,40})/pulls", commit_pulls),
        ("POST", r"/statuses/(?P<sha>[0-9a-fA-F]{40})", create_status),
        ("GET", r"/commits/(?P<sha>[0-9a-fA-F]{40})/statuses", list_statuses),
    ]
]


# -- the server --------------------------------------------------------------------


class GitHubAPI:
    """The server, its state and its request log. Use as a context manager."""

    def __init__(self, state: RepoState | None = None) -> None:
        self.state = state or RepoState()
        self.requests: list[Recorded] = []
        #: the bytes of each oversized answer sent before the client hung up (or all)
        self.sent: list[int] = []
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    @property
    def token(self) -> str:
        return self.state.token

    def start(self) -> GitHubAPI:
        handler = _make_handler(self)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        host, port = self._httpd.server_address[:2]
        self.url = f"http://{host!s}:{port}"
        self.state.api_url = self.url
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="ghserver",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> GitHubAPI:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def env(self, repo: str = DEFAULT_REPOSITORY, pr: int | None = None) -> dict[str, str]:
        """The environment that points the client at this server."""
        env = {"GITHUB_API_URL": self.url, "GITHUB_TOKEN": self.token, "GITHUB_REPOSITORY": repo}
        if pr is not None:
            env["IAC_PR_NUMBER"] = str(pr)
        return env

    def calls(self, method: str | None = None, path: str | None = None) -> list[tuple[str, str]]:
        """``(method, path)`` of the recorded requests, optionally filtered
        (``path`` is a prefix)."""
        return [
            (r.method, r.path)
            for r in list(self.requests)
            if (method is None or r.method == method) and (path is None or r.path.startswith(path))
        ]


def _make_handler(api: GitHubAPI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "GitHub.com-test"

        def do_GET(self) -> None:
            self._handle()

        def do_POST(self) -> None:
            self._handle()

        def do_PATCH(self) -> None:
            self._handle()

        def do_PUT(self) -> None:
            self._handle()

        def do_DELETE(self) -> None:
            self._handle()

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _handle(self) -> None:
            parts = urllib.parse.urlsplit(self.path)
            query = urllib.parse.parse_qs(parts.query, keep_blank_values=True)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body: Any = None
            bad_json = False
            if raw:
                try:
                    body = json.loads(raw)
                except (json.JSONDecodeError, UnicodeDecodeError):
                    body, bad_json = raw.decode("utf-8", "replace"), True
            record = Recorded(self.command, parts.path, query, body, dict(self.headers.items()))
            with api.state.lock:
                api.requests.append(record)
            headers: dict[str, str] = {}
            size = next(
                (n for end, n in api.state.oversized.items() if parts.path.endswith(end)), None
            )
            if size is not None and self.command == "GET":
                record.status = 200
                self._stream(size)
                return
            try:
                status, doc = self._route(parts.path, query, body, bad_json, headers)
            except HTTPError as err:
                status = err.status
                doc = {"message": err.message, "documentation_url": DOCS}
                if err.errors:
                    doc["errors"] = err.errors
                doc["status"] = str(err.status)
            record.status = status
            data = b"" if doc is None else json.dumps(doc).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("X-GitHub-Media-Type", "github.v3; format=json")
            self.send_header("X-GitHub-Api-Version-Selected", "2022-11-28")
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, size: int) -> None:
            """A JSON list of about ``size`` bytes, written until done or the client hangs up."""
            item = b'{"body": "' + b"x" * 1000 + b'"},'
            self.close_connection = True
            self.send_response(200)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Connection", "close")
            self.end_headers()
            sent = 0
            try:
                self.wfile.write(b"[")
                while sent < size:
                    self.wfile.write(item * 64)
                    sent += len(item) * 64
                self.wfile.write(b"{}]")
            except OSError:  # the client read what it wanted and hung up
                pass
            api.sent.append(sent)

        def _route(
            self,
            path: str,
            query: dict[str, list[str]],
            body: Any,
            bad_json: bool,
            headers: dict[str, str],
        ) -> tuple[int, Any]:
            state = api.state
            auth = self.headers.get("Authorization")
            if not auth:
                raise HTTPError(401, "Requires authentication")
            scheme, _, given = auth.partition(" ")
            if scheme.lower() not in ("bearer", "token") or given != state.token:
                raise HTTPError(401, "Bad credentials")
            failure = state._take_failure(self.command, path)
            if failure is not None:
                headers.update(failure.headers)
                if failure.doc is not None:
                    return failure.status, failure.doc
                raise HTTPError(failure.status, failure.message)
            if bad_json:
                raise HTTPError(400, "Problems parsing JSON")
            for method, pattern, route in ROUTES:
                match = pattern.fullmatch(path)
                if match is None or method != self.command:
                    continue
                params = match.groupdict()
                if f"{params['owner']}/{params['repo']}".lower() != state.repository.lower():
                    raise HTTPError(404, "Not Found")
                call = _Call(state, self.command, path, query, body, params, api.url, headers)
                with state.lock:
                    return route(call)
            raise HTTPError(404, "Not Found")

    return Handler
