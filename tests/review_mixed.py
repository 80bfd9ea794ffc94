"""The mixed plan a reviewer's page is judged on, as data (no tools needed to render it).

Creates, updates, a replacement with its reason, a destroy, a manual gate, a
failure, drift, a no-change unit and a module bump; and a 200-unit run.
"""

from __future__ import annotations

from tooling.core.plan.planjson import COUNT_KEYS, PlanSummary, ResourceChange
from tooling.core.plan.results import Result, with_gates
from tooling.model.policy import GatePolicy

POLICY = GatePolicy(node_addresses=("terraform_data.vm[*",))
GIT = "git::https://git.example.com/platform-modules/{name}.git//modules/{sub}?ref={ref}"
VMS_TEXT = """OpenTofu will perform the following actions:

  # terraform_data.vm["node-1"] will be updated in-place
  ~ resource "terraform_data" "vm" {
        id     = "5f1c"
      ~ input  = {
          ~ memory = 4096 -> 8192
            name   = "node-1"
        }
    }

  # terraform_data.extra will be created
  + resource "terraform_data" "extra" {
      + id = (known after apply)
    }

Plan: 1 to add, 3 to change, 0 to destroy.
"""
DNS_TEXT = """OpenTofu will perform the following actions:

  # terraform_data.record["www"] must be replaced
-/+ resource "terraform_data" "record" {
      ~ id     = "a1" -> (known after apply)
      ~ input  = "192.0.2.10" -> "192.0.2.20" # forces replacement
    }

Plan: 1 to add, 0 to change, 1 to destroy.
"""


def plan(*changes: ResourceChange, drift: tuple[ResourceChange, ...] = ()) -> PlanSummary:
    counts = dict.fromkeys(COUNT_KEYS, 0)
    for c in changes:
        counts[c.action] += 1
    return PlanSummary(counts, changes, drift)


def unit(
    path: str,
    status: str,
    summary: PlanSummary | None = None,
    change: str = "modified",
    **extra: object,
) -> Result:
    tier = path.split("/")[1]
    return Result(
        path,
        tier,
        "hosted" if tier == "cloud" else "lan",
        change,
        status,
        counts=dict(summary.counts) if summary else dict.fromkeys(COUNT_KEYS, 0),
        summary=summary,
        **extra,  # type: ignore[arg-type]
    )


def mixed() -> list[Result]:
    """The mixed plan, gated, in DAG order."""
    vm = [
        ResourceChange(f'terraform_data.vm["node-{i}"]', "terraform_data", "update")
        for i in (1, 2, 3)
    ]
    results = [
        unit("live/cloud/iam", "no-changes", plan()),
        unit(
            "live/cloud/dns",
            "changes",
            plan(
                ResourceChange(
                    'terraform_data.record["www"]',
                    "terraform_data",
                    "replace",
                    reason="replace_because_cannot_update",
                    replace_paths=("input",),
                ),
            ),
            plan_text=DNS_TEXT,
        ),
        unit(
            "live/cloud/registry",
            "changes",
            plan(
                ResourceChange("terraform_data.repo", "terraform_data", "create"),
                ResourceChange("terraform_data.policy", "terraform_data", "create"),
            ),
            plan_text='  + resource "terraform_data" "repo" {\n      + id = (known after apply)\n    }\n',
        ),
        unit(
            "live/cloud/legacy",
            "changes",
            plan(ResourceChange("terraform_data.old", "terraform_data", "delete")),
            destroy=True,
            change="deleted",
        ),
        unit(
            "live/cluster/network",
            "error",
            error="Error: Invalid value for variable\n  on main.tf line 3: cidr must be a /24",
        ),
        unit(
            "live/cluster/vms",
            "changes",
            plan(
                *vm,
                ResourceChange("terraform_data.extra", "terraform_data", "create"),
                drift=(ResourceChange("terraform_data.bridge", "terraform_data", "update"),),
            ),
            source=GIT.format(name="terraform-proxmox", sub="vm", ref="v1.2.0"),
            source_before=GIT.format(name="terraform-proxmox", sub="vm", ref="v1.1.0"),
            plan_text=VMS_TEXT,
        ),
    ]
    return with_gates(results, POLICY)


#: the dependents of the mixed plan outside it: (dependent, the upstream it reads)
DEPENDENTS = (("live/cluster/os", "live/cluster/vms"), ("live/cluster/gitops", "live/cluster/os"))
UPSTREAMS = {
    "live/cloud/registry": ("live/cloud/iam",),
    "live/cluster/vms": ("live/cluster/network",),
}


def many(n: int = 200) -> list[Result]:
    """``n`` units, each creating 12 resources with a plan text of about 2 KB; every
    tenth deletes one (a manual gate) and every seventh touches a VM."""
    results = []
    for i in range(n):
        changes = [
            ResourceChange(f'terraform_data.item["k{j:02d}"]', "terraform_data", "create")
            for j in range(12)
        ]
        if i % 10 == 0:
            changes.append(ResourceChange(f"terraform_data.gone{i}", "terraform_data", "delete"))
        if i % 7 == 0:
            changes.append(ResourceChange(f'terraform_data.vm["n{i}"]', "terraform_data", "update"))
        text = "".join(
            f'  # {c.address} will be created\n  + resource "terraform_data" "item" {{\n'
            f'      + id    = (known after apply)\n      + input = "value-{i}-{k}"\n    }}\n\n'
            for k, c in enumerate(changes)
        )
        results.append(unit(f"live/cluster/u{i:03d}", "changes", plan(*changes), plan_text=text))
    return with_gates(results, POLICY)
