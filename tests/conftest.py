"""Shared pytest fixtures: real parts only.

- ``moto_server``: moto's S3/IAM/STS server on 127.0.0.1 and a random free port
  (never 0.0.0.0), one per test session.
- ``aws_env``: environment variables that point boto3/OpenTofu at it with
  throwaway credentials.

Two suites (README, "Tests"): a test that runs tofu, terragrunt or act, a Go
build, ``./dev`` or pre-commit, or a real state backend, is marked ``e2e``. Tests that use one of
:data:`E2E_FIXTURES` are marked here; modules that start the tools some other
way say so with ``pytestmark = pytest.mark.e2e``. ``pytest -m "not e2e"`` is
the fast suite.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass

import keep_bytecode  # noqa: F401  (first: the tooling's modules are cached too)
import pytest

from tooling.engine import secrets

# the one redaction step, installed as every task's preamble installs it
secrets.install()

pytest_plugins = ["infra_fixtures"]

#: fixtures that bring up the pinned tools or a state backend: a test using one is end to end
E2E_FIXTURES = frozenset(
    {"tools", "example_repo", "moto_server", "aws_env", "provider_mirror", "go_proxy"}
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if E2E_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.e2e)


# -- pytest-terraform's xdist tracker -------------------------------------------
#
# With xdist installed, pytest-terraform registers a tracker that tears down its
# module- and session-scoped fixtures once every worker is done with them; to know
# that, the main process appends each test's id to a log and fsyncs it, after every
# test of the run (1,316 fsyncs in the fast suite, where no test uses it). The
# repository's terraform fixtures are function-scoped (tests/test_standins.py), which
# the tracker never sees, so it is dropped; a wider-scoped one stops the run.


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """After every pytest_configure, pytest-terraform's (which registers it) included."""
    from pytest_terraform.xdist import XDistTerraform

    manager = session.config.pluginmanager
    for plugin in manager.get_plugins():
        if isinstance(plugin, XDistTerraform):
            manager.unregister(plugin)


def pytest_collection_finish(session: pytest.Session) -> None:
    from pytest_terraform import tf

    scoped = sorted(f.name for f in tf.terraform.get_fixtures() if f.scope != "function")
    if scoped:
        raise pytest.UsageError(
            f"terraform fixture(s) {', '.join(scoped)} are not function-scoped: tests/conftest.py "
            "drops pytest-terraform's xdist tracker, which tears those down; keep it for them"
        )


@dataclass(frozen=True)
class MotoServer:
    host: str
    port: int

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def moto_server() -> Iterator[MotoServer]:
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield MotoServer("127.0.0.1", port)
    finally:
        server.stop()


@pytest.fixture
def aws_env(moto_server: MotoServer, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": moto_server.endpoint,
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    return env


# -- GitHub API test server (tests/ghserver.py) ---------------------------------

from ghserver import GitHubAPI  # noqa: E402  (appended section)


@pytest.fixture
def github_api() -> Iterator[GitHubAPI]:
    """A local GitHub REST API for one repository (example-org/infrastructure).

    Yields an object with ``.url``, ``.requests`` (every request recorded),
    ``.state`` (in-memory issues, pull requests, comments; seed helpers) and
    ``.env(repo=..., pr=None)``: the variables that point the client at it.
    """
    with GitHubAPI() as api:
        yield api
