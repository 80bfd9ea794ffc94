"""Token handling for module repositories over HTTPS, against a real git server.

The server is ``git http-backend`` (git's own smart-HTTP server) behind a
local TLS listener with a throwaway certificate; it answers 401 unless the
request carries the expected ``Authorization`` header, and records what it
received. ``invoke outdated`` / ``bump-module`` run as a user would.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from infra_fixtures import commit_all, git, invoke, serving

TOKEN = "iacgit_s3cr3t_0123456789abcdef"
SOURCE_PATH = "platform-modules/terraform-private.git"


@dataclass
class GitServer:
    url: str
    cafile: Path
    seen: list[tuple[str, str, str | None]] = field(default_factory=list)  # (method, path, auth)
    header_counts: list[int] = field(default_factory=list)  # Authorization headers per request

    def auths(self) -> set[str | None]:
        return {auth for _, _, auth in self.seen}


def _handler(root: Path, server: GitServer) -> type[BaseHTTPRequestHandler]:
    expected = "Basic " + base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._serve()

        def do_POST(self) -> None:
            self._serve()

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _serve(self) -> None:
            auth = self.headers.get("Authorization")
            server.seen.append((self.command, self.path, auth))
            server.header_counts.append(len(self.headers.get_all("Authorization") or []))
            if auth != expected:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="git"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            path, _, query = self.path.partition("?")
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            env = {
                "PATH": os.environ["PATH"],
                "GIT_PROJECT_ROOT": str(root),
                "GIT_HTTP_EXPORT_ALL": "1",
                "REQUEST_METHOD": self.command,
                "PATH_INFO": path,
                "QUERY_STRING": query,
                "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                "CONTENT_LENGTH": str(len(body)),
                "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
                "REMOTE_USER": "x-access-token",
                "REMOTE_ADDR": "127.0.0.1",
                "GIT_CONFIG_NOSYSTEM": "1",
            }
            out = subprocess.run(
                ["git", "http-backend"], input=body, env=env, capture_output=True, check=False
            ).stdout
            head, _, payload = out.partition(b"\r\n\r\n")
            status = 200
            headers = []
            for line in head.decode().split("\r\n"):
                name, _, value = line.partition(":")
                if name.lower() == "status":
                    status = int(value.split()[0])
                elif name:
                    headers.append((name, value.strip()))
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    return Handler


@pytest.fixture
def git_server(tmp_path: Path) -> Iterator[GitServer]:
    root = tmp_path / "git-root"
    repo = root / SOURCE_PATH
    work = tmp_path / "private-work"
    work.mkdir()
    git(work, "init", "--quiet", "--initial-branch=main")
    for tag in ("v1.0.0", "v1.1.0"):
        (work / "main.tf").write_text(f"# {tag}\n", encoding="utf-8")
        commit_all(work, f"release {tag}")
        git(work, "tag", "-a", tag, "-m", f"private module {tag}")
    git(tmp_path, "clone", "--quiet", "--bare", str(work), str(repo))

    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "2",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    server = GitServer(f"https://localhost:{httpd.server_address[1]}", cert)
    httpd.RequestHandlerClass = _handler(root, server)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    with serving(httpd):
        yield server


def _private_unit(repo: Path, url: str) -> None:
    unit = repo / "live/cloud/private"
    unit.mkdir(parents=True)
    (unit / "terragrunt.hcl").write_text(
        'include "root" {\n  path = find_in_parent_folders("root.hcl")\n}\n\n'
        f'terraform {{\n  source = "git::{url}/{SOURCE_PATH}?ref=v1.0.0"\n}}\n',
        encoding="utf-8",
    )
    commit_all(repo, "private unit")
    git(repo, "push", "--quiet", "origin", "main")


def _secret_forms() -> list[str]:
    return [TOKEN, base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()]


def test_the_token_authenticates_https_on_its_host_and_is_never_printed(
    example_repo: Path, git_server: GitServer
) -> None:
    _private_unit(example_repo, git_server.url)
    # what actions/checkout leaves in the repository's config: git must not send it too
    git(
        example_repo,
        "config",
        "--local",
        f"http.{git_server.url}/.extraheader",
        "AUTHORIZATION: basic c3RhbGU=",
    )
    env = {
        "GIT_SSL_CAINFO": str(git_server.cafile),
        "IAC_GIT_TOKEN": TOKEN,
        "IAC_GIT_TOKEN_HOST": "localhost",
        "IAC_ECHO_COMMANDS": "1",  # every command line is printed: the token must not be on it
    }
    result = invoke(example_repo, "outdated", "--json", env=env)
    assert result.returncode == 0, result.output
    private = next(
        m for m in json.loads(result.stdout)["modules"] if m["module"] == "terraform-private"
    )
    assert (private["current"], private["latest"]) == ("v1.0.0", "v1.1.0")
    assert "+ git ls-remote --tags" in result.stderr  # the echo is on
    for secret in _secret_forms():
        assert secret not in result.output
    assert git_server.seen and all(auth is not None for auth in git_server.auths())
    assert set(git_server.header_counts) == {1}

    # the changelog is fetched over the same authenticated channel
    bumped = invoke(example_repo, "bump-module", "terraform-private", "v1.1.0", env=env)
    assert bumped.returncode == 0, bumped.output
    assert "private module v1.1.0" in bumped.stdout  # the annotated tag's message
    for secret in _secret_forms():
        assert secret not in bumped.output
    assert any(method == "POST" for method, _, _ in git_server.seen)  # a real fetch happened


@pytest.mark.parametrize(
    ("env", "why"),
    [
        ({}, "no token"),
        ({"IAC_GIT_TOKEN": TOKEN, "IAC_GIT_TOKEN_HOST": "github.com"}, "token for another host"),
        ({"GITHUB_TOKEN": TOKEN}, "GITHUB_TOKEN is for github.com by default"),
    ],
)
def test_without_a_token_for_the_host_no_header_is_sent_and_the_failure_is_reported(
    example_repo: Path, git_server: GitServer, env: dict[str, str], why: str
) -> None:
    _private_unit(example_repo, git_server.url)
    result = invoke(
        example_repo, "outdated", "--json", env={"GIT_SSL_CAINFO": str(git_server.cafile), **env}
    )
    assert result.returncode == 1, why
    doc = json.loads(result.stdout)
    assert [e["module"] for e in doc["errors"]] == ["terraform-private"]
    assert doc["modules"], "the other modules are still reported"
    assert git_server.seen and git_server.auths() == {None}, why
    for secret in _secret_forms():
        assert secret not in result.output
