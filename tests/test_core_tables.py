"""Table tests for the pure core: affected units, gates, plan targets, git parsers, plan arguments.

No process, no file: each row is plain data in, plain data out.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tooling.core.changes import Affected, AffectedUnit, affected
from tooling.core.gates import GatePolicy, decide, parse_policy
from tooling.core.planjson import COUNT_KEYS, PlanSummary, ResourceChange
from tooling.core.targets import select_targets
from tooling.errors import ToolingError, UsageError
from tooling.io.git import parse_ls_tree, parse_name_status, parse_porcelain_paths, zsplit
from tooling.io.terragrunt import plan_args
from tooling.model.repo import Change, Model, Unit


def unit(
    path: str,
    *,
    deps: tuple[str, ...] = (),
    reads: tuple[str, ...] = (),
    executor: str = "hosted",
    gate: str = "auto",
    plan_on_pr: bool = True,
) -> Unit:
    tier = path.split("/")[1]
    own = f"{path}/terragrunt.hcl"
    return Unit(
        path,
        tier,
        executor,
        gate,
        plan_on_pr,
        f"git::https://h/{path}.git?ref=v1.0.0",
        "v1.0.0",
        deps,
        (own, "root.hcl", *reads),
        f"{path}/tofu.tfstate",
        None,
    )


def model(*units: Unit) -> Model:
    """A model whose DAG order is the order given (dependencies first)."""
    return Model({u.path: u for u in units}, tuple(u.path for u in units))


NET = unit("live/cluster/network", executor="lan", reads=("live/cluster/tier.hcl",))
VMS = unit(
    "live/cluster/vms",
    deps=("live/cluster/network",),
    executor="lan",
    gate="manual",
    reads=("live/cluster/tier.hcl", "live/cluster/vms/files/"),
)
OS = unit(
    "live/cluster/os", deps=("live/cluster/vms",), executor="lan", reads=("live/cluster/tier.hcl",)
)
DNS = unit("live/cloud/dns", reads=("live/cloud/tier.hcl",), plan_on_pr=False)
HEAD = model(DNS, NET, VMS, OS)
BASE = model(unit("live/cloud/old"), DNS, NET, VMS, OS)


def _never() -> Model:
    raise AssertionError("the base model is needed only for deletions and renames away")


# --------------------------------------------------------------------------- changes.affected

AFFECTED_CASES = [
    pytest.param([Change("M", "README.md")], [], [], id="file-nobody-reads"),
    pytest.param(
        [Change("M", "live/cloud/dns/terragrunt.hcl")],
        [("live/cloud/dns", "modified")],
        [],
        id="unit-file",
    ),
    pytest.param(
        [Change("M", "live/cluster/tier.hcl")],
        [
            ("live/cluster/network", "modified"),
            ("live/cluster/vms", "modified"),
            ("live/cluster/os", "modified"),
        ],
        [],
        id="shared-file-selects-every-reader-in-dag-order",
    ),
    pytest.param(
        [Change("M", "live/cluster/vms/files/cloud-init.yaml")],
        [("live/cluster/vms", "modified")],
        [("live/cluster/os", "live/cluster/vms")],
        id="file-under-a-read-folder-and-its-dependent",
    ),
    pytest.param(
        [Change("M", "live/cluster/network/terragrunt.hcl")],
        [("live/cluster/network", "modified")],
        [("live/cluster/vms", "live/cluster/network"), ("live/cluster/os", "live/cluster/vms")],
        id="transitive-dependents-with-via",
    ),
    pytest.param(
        [Change("A", "live/cloud/dns/terragrunt.hcl")],
        [("live/cloud/dns", "added")],
        [],
        id="added-unit",
    ),
    pytest.param(
        [Change("M", "root.hcl")],
        [(u, "modified") for u in HEAD.order],
        [],
        id="root-changes-every-unit",
    ),
]


@pytest.mark.parametrize(("changes", "units", "dependents"), AFFECTED_CASES)
def test_affected(
    changes: list[Change], units: list[tuple[str, str]], dependents: list[tuple[str, str]]
) -> None:
    result = affected(changes, HEAD, _never, base_sha="b" * 40, head_sha="h" * 40)
    assert [(u.path, u.change) for u in result.units] == units
    assert [(d.path, d.via) for d in result.dependents] == dependents
    for u in result.units:
        assert u.reasons, u


def test_affected_deleted_unit_comes_from_the_base_and_goes_last() -> None:
    changes = [
        Change("D", "live/cloud/old/terragrunt.hcl"),
        Change("M", "live/cloud/dns/terragrunt.hcl"),
    ]
    result = affected(changes, HEAD, lambda: BASE, base_sha="b" * 40, head_sha="h" * 40)
    assert [(u.path, u.change) for u in result.units] == [
        ("live/cloud/dns", "modified"),
        ("live/cloud/old", "deleted"),
    ]
    assert result.units[-1].reasons == ("live/cloud/old/terragrunt.hcl",)


def test_affected_rename_of_a_unit_is_a_move_not_a_delete() -> None:
    head = model(unit("live/cloud/zone"), NET)
    changes = [Change("R", "live/cloud/zone/terragrunt.hcl", "live/cloud/dns/terragrunt.hcl")]
    result = affected(changes, head, _never, base_sha="b" * 40, head_sha="h" * 40)
    assert [(u.path, u.change, u.moved_from) for u in result.units] == [
        ("live/cloud/zone", "moved", "live/cloud/dns")
    ]


# --------------------------------------------------------------------------- gates.decide


def summary(*changes: tuple[str, str, str]) -> PlanSummary:
    counts = dict.fromkeys(COUNT_KEYS, 0)
    items = []
    for address, rtype, action in changes:
        counts[action] += 1
        items.append(ResourceChange(address, rtype, action))
    return PlanSummary(counts, tuple(items))


NODE_POLICY = GatePolicy(node_types=("proxmox_vm_*",), node_addresses=("*.vm[*",))

GATE_CASES = [
    pytest.param(
        "no-changes",
        "auto",
        summary(),
        False,
        "none",
        "nothing to apply (no-changes)",
        id="no-changes",
    ),
    pytest.param("error", "auto", None, False, "none", "nothing to apply (error)", id="error"),
    pytest.param(
        "changes",
        "auto",
        summary(("a.b", "x_thing", "create")),
        False,
        "auto",
        "no delete",
        id="create",
    ),
    pytest.param(
        "changes",
        "manual",
        summary(("a.b", "x_thing", "update")),
        False,
        "manual",
        "gate class is manual",
        id="declared-manual",
    ),
    pytest.param(
        "changes",
        "auto",
        summary(("a.b", "x_thing", "delete")),
        False,
        "manual",
        "deletes a.b",
        id="delete",
    ),
    pytest.param(
        "changes",
        "auto",
        summary(("a.b", "x_thing", "replace")),
        False,
        "manual",
        "replaces a.b",
        id="replace",
    ),
    pytest.param(
        "changes",
        "auto",
        summary(("module.k.proxmox_vm_qemu.n1", "proxmox_vm_qemu", "update")),
        False,
        "manual",
        "touches a node/VM: module.k.proxmox_vm_qemu.n1",
        id="node-by-type",
    ),
    pytest.param(
        "changes",
        "auto",
        summary(('terraform_data.vm["node-1"]', "terraform_data", "create")),
        False,
        "manual",
        "touches a node/VM",
        id="node-by-address",
    ),
    pytest.param(
        "changes",
        "auto",
        summary(("a.b", "x_thing", "delete")),
        True,
        "manual",
        "destroy plan",
        id="deleted-unit",
    ),
]


@pytest.mark.parametrize(
    ("status", "declared", "plan", "destroy", "decision", "reason"), GATE_CASES
)
def test_decide(
    status: str, declared: str, plan: PlanSummary | None, destroy: bool, decision: str, reason: str
) -> None:
    gate = decide(
        status=status, declared=declared, summary=plan, destroy=destroy, policy=NODE_POLICY
    )
    assert gate.decision == decision
    assert any(reason in r for r in gate.reasons), gate.reasons


def test_every_rule_that_fires_adds_a_reason() -> None:
    plan = summary(
        ("a.b", "x_thing", "delete"), ("module.v.proxmox_vm_qemu.n", "proxmox_vm_qemu", "create")
    )
    gate = decide(
        status="changes", declared="auto", summary=plan, destroy=False, policy=NODE_POLICY
    )
    assert gate.reasons == ("deletes a.b", "touches a node/VM: module.v.proxmox_vm_qemu.n")


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({}, GatePolicy()),
        (
            {"gates": {"node_types": ["a_*"], "node_addresses": ["*.vm"]}},
            GatePolicy(("a_*",), ("*.vm",)),
        ),
    ],
)
def test_gate_policy_section(data: dict[str, object], expected: GatePolicy) -> None:
    assert parse_policy(data) == expected


@pytest.mark.parametrize(
    "bad", [{"gates": "x"}, {"gates": {"node_types": "a_*"}}, {"gates": {"node_addresses": [1]}}]
)
def test_gate_policy_section_rejects_wrong_types(bad: dict[str, object]) -> None:
    with pytest.raises(ToolingError, match=r"policy.toml: \[gates\]"):
        parse_policy(bad)


# --------------------------------------------------------------------------- select_targets

ROOT = Path("/repo")


def change_of(*units: tuple[str, str, str | None]) -> Affected:
    return Affected(
        "b" * 40,
        "h" * 40,
        tuple(
            AffectedUnit(
                p,
                c,
                ("x",),
                HEAD.units[p].tier if p in HEAD.units else "cloud",
                HEAD.units[p].executor if p in HEAD.units else "hosted",
                moved_from=m,
            )
            for p, c, m in units
        ),
    )


def test_all_units_in_dag_order() -> None:
    targets = select_targets(
        HEAD, root=ROOT, all_units=True, units=(), change=None, executor=None, on_pr=False
    )
    assert [(t.path, t.change, t.run_dir) for t in targets] == [
        (p, "all", ROOT / p) for p in HEAD.order
    ]
    assert [t.gate_class for t in targets] == ["auto", "auto", "manual", "auto"]


def test_named_units_follow_dag_order_not_the_command_line() -> None:
    targets = select_targets(
        HEAD,
        root=ROOT,
        all_units=False,
        units=["live/cluster/os/", "live/cluster/network"],
        change=None,
        executor=None,
        on_pr=False,
    )
    assert [(t.path, t.change) for t in targets] == [
        ("live/cluster/network", "named"),
        ("live/cluster/os", "named"),
    ]


def test_a_named_path_that_is_no_unit_is_bad_usage() -> None:
    with pytest.raises(UsageError, match="--unit live/nope: no unit at live/nope"):
        select_targets(
            HEAD,
            root=ROOT,
            all_units=False,
            units=["live/nope"],
            change=None,
            executor=None,
            on_pr=False,
        )


def test_executor_filter_and_pr_withholding() -> None:
    change = change_of(("live/cloud/dns", "modified", None), ("live/cluster/vms", "modified", None))
    lan = select_targets(
        HEAD, root=ROOT, all_units=False, units=(), change=change, executor="lan", on_pr=True
    )
    assert [(t.path, t.preset) for t in lan] == [("live/cluster/vms", None)]
    hosted = select_targets(
        HEAD, root=ROOT, all_units=False, units=(), change=change, executor="hosted", on_pr=True
    )
    assert [(t.path, t.preset) for t in hosted] == [("live/cloud/dns", "withheld")]
    assert "plan_on_pr = false" in (hosted[0].preset_reason or "")
    on_main = select_targets(
        HEAD, root=ROOT, all_units=False, units=(), change=change, executor="hosted", on_pr=False
    )
    assert [(t.path, t.preset) for t in on_main] == [("live/cloud/dns", None)]


def test_deleted_units_come_first_as_manual_destroys_from_the_base_tree() -> None:
    change = change_of(("live/cluster/os", "modified", None), ("live/cloud/old", "deleted", None))
    targets = select_targets(
        HEAD,
        root=ROOT,
        all_units=False,
        units=(),
        change=change,
        executor=None,
        on_pr=False,
        base_root=Path("/base"),
        base_model=BASE,
    )
    assert [(t.path, t.change, t.destroy, t.gate_class) for t in targets] == [
        ("live/cloud/old", "deleted", True, "manual"),
        ("live/cluster/os", "modified", False, "auto"),
    ]
    assert targets[0].run_dir == Path("/base/live/cloud/old")
    assert targets[0].source == BASE.units["live/cloud/old"].source


def test_a_moved_unit_waits_only_when_told_its_state_is_not_migrated() -> None:
    change = change_of(("live/cloud/dns", "moved", "live/cloud/zone"))
    free = select_targets(
        HEAD, root=ROOT, all_units=False, units=(), change=change, executor=None, on_pr=False
    )
    assert [(t.path, t.preset) for t in free] == [("live/cloud/dns", None)]
    held = select_targets(
        HEAD,
        root=ROOT,
        all_units=False,
        units=(),
        change=change,
        executor=None,
        on_pr=False,
        blocked_moves={"live/cloud/dns"},
    )
    assert [(t.path, t.preset) for t in held] == [("live/cloud/dns", "blocked")]
    assert "invoke move-unit live/cloud/zone live/cloud/dns" in (held[0].preset_reason or "")


# --------------------------------------------------------------------------- git parsers


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("a\0", ["a"]),
        ("a\0b", ["a", "b"]),
        ("a b\0\0", ["a b", ""]),
    ],
)
def test_zsplit(text: str, expected: list[str]) -> None:
    assert zsplit(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("M\0live/a b/terragrunt.hcl\0", [Change("M", "live/a b/terragrunt.hcl")]),
        ("A\0x\0D\0y\0", [Change("A", "x"), Change("D", "y")]),
        ("R100\0old/t.hcl\0new/t.hcl\0", [Change("R", "new/t.hcl", "old/t.hcl")]),
        ("C075\0src\0copy\0", [Change("A", "copy", "src")]),
        ("T\0link\0", [Change("M", "link")]),
        ("M\0$(touch x)\0", [Change("M", "$(touch x)")]),
    ],
)
def test_parse_name_status(text: str, expected: list[Change]) -> None:
    assert parse_name_status(text) == expected


def test_parse_ls_tree_keeps_blobs_only() -> None:
    sha = "0123456789abcdef0123456789abcdef01234567"
    text = (
        f"100644 blob {sha}\tlive/a b/terragrunt.hcl\0"
        f"160000 commit {sha}\tvendor/sub\0"
        f"100755 blob {sha}\tdev\0"
    )
    assert parse_ls_tree(text) == {"live/a b/terragrunt.hcl": sha, "dev": sha}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        (" M live/x.hcl\0", [Change("M", "live/x.hcl")]),
        ("?? new file.hcl\0", [Change("A", "new file.hcl")]),
        ("A  added\0AM both\0", [Change("A", "added"), Change("A", "both")]),
        (" D gone\0D  staged-gone\0", [Change("D", "gone"), Change("D", "staged-gone")]),
        ("R  new\0old\0", [Change("R", "new", "old")]),
    ],
)
def test_parse_porcelain_paths(text: str, expected: list[Change]) -> None:
    assert parse_porcelain_paths(text) == expected


# --------------------------------------------------------------------------- plan_args

OUT = Path("/o/u/plan.tfplan")
COMMON = [
    "terragrunt",
    "--non-interactive",
    "--no-color",
    "--log-level",
    "warn",
    "--log-format",
    "bare",
    "plan",
    "-input=false",
]


@pytest.mark.parametrize(
    ("kwargs", "tail"),
    [
        ({}, ["-lock-timeout=0s", f"-out={OUT}"]),
        ({"lock": False}, ["-lock=false", f"-out={OUT}"]),
        ({"lock_timeout": "30s"}, ["-lock-timeout=30s", f"-out={OUT}"]),
        ({"destroy": True}, ["-lock-timeout=0s", f"-out={OUT}", "-destroy"]),
        ({"detailed_exitcode": True}, ["-lock-timeout=0s", f"-out={OUT}", "-detailed-exitcode"]),
        (
            {"destroy": True, "lock": False, "detailed_exitcode": True},
            ["-lock=false", f"-out={OUT}", "-destroy", "-detailed-exitcode"],
        ),
    ],
)
def test_plan_args(kwargs: dict[str, object], tail: list[str]) -> None:
    assert plan_args(OUT, **kwargs) == [*COMMON, *tail]  # type: ignore[arg-type]


def test_plan_args_keep_a_path_with_spaces_as_one_argument() -> None:
    out = Path("/tmp/my plans/$(id)/plan.tfplan")
    assert plan_args(out)[-1] == f"-out={out}"
