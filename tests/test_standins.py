"""Terratest-style tests of the sandbox stand-in modules: apply, read outputs, destroy.

pytest-terraform runs the real `tofu` (the pinned one on PATH): each fixture
applies its root module under tests/terraform/ before the test and destroys it
afterwards.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from pytest_terraform import terraform

pytestmark = pytest.mark.e2e


@terraform("standin_dns", scope="function")
def test_dns_standin_applies_and_exposes_the_zone_and_records(standin_dns: Any) -> None:
    outputs = standin_dns.outputs
    assert outputs["zone_id"]["value"] == hashlib.md5(b"cloudflare-zone:example.net").hexdigest()
    assert set(outputs["record_fqdns"]["value"]) == {"www", "api"}
    assert outputs["record_fqdns"]["value"]["www"] == "www.example.net"
    assert set(standin_dns.resources["terraform_data"]) >= {"zone", "dnssec"}


@terraform("standin_iam", scope="function")
def test_iam_standin_keeps_its_token_output_sensitive(standin_iam: Any) -> None:
    outputs = standin_iam.outputs
    assert outputs["role_arns"]["value"] == {"plan": "arn:aws:iam::000000000000:role/plan"}
    assert outputs["ci_token"]["sensitive"] is True


@terraform("standin_vm", scope="function")
def test_vm_standin_creates_one_vm_per_node(standin_vm: Any) -> None:
    assert standin_vm.outputs["node_ips"]["value"] == {
        "node-1": "10.40.0.11",
        "node-2": "10.40.0.12",
    }
    assert "vm" in standin_vm.resources["terraform_data"]
