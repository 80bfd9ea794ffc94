"""Table tests for the pure core: affected units, gates, the report, plan targets, git parsers,
plan arguments.

No process, no file: each row is plain data in, plain data out.
"""

from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tooling.core.plan.affected import Affected, AffectedUnit, affected
from tooling.core.plan.gates import Gate, decide, reasons_text
from tooling.core.plan.planjson import COUNT_KEYS, PlanSummary, ResourceChange, from_stream
from tooling.core.plan.results import Result, with_gates
from tooling.core.plan.targets import select_targets, waves
from tooling.core.report import comment
from tooling.errors import ToolingError, UsageError
from tooling.io.git import parse_ls_tree, parse_name_status, parse_porcelain_paths, zsplit
from tooling.io.terragrunt import plan_args
from tooling.model.policy import GatePolicy, policy_from
from tooling.model.units import Change, Model, Unit


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
        "manaul",
        summary(("a.b", "x_thing", "update")),
        False,
        "manual",
        "gate class is 'manaul', neither auto nor manual",
        id="declared-typo-fails-closed",
    ),
    pytest.param(
        "changes",
        "<unresolved>",
        summary(("a.b", "x_thing", "update")),
        False,
        "manual",
        "waits for a human",
        id="declared-unresolved-fails-closed",
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
    ("changes", "reasons"),
    [
        pytest.param(
            [
                (f'terraform_data.{r}["node-{n}"]', "terraform_data", "create")
                for r in ("vm", "disk")
                for n in (1, 2, 3)
            ],
            (
                "touches 3 nodes/VMs: node-1, node-2, node-3 (terraform_data.vm, terraform_data.disk)",
            ),
            id="six-changes-three-vms-one-line",
        ),
        pytest.param(
            [
                ('terraform_data.vm["node-1"]', "terraform_data", "update"),
                ('terraform_data.disk["node-1"]', "terraform_data", "create"),
            ],
            ("touches 1 node/VM: node-1 (terraform_data.vm, terraform_data.disk)",),
            id="one-vm-two-resources",
        ),
        pytest.param(
            [
                ("module.k.proxmox_vm_qemu.a", "proxmox_vm_qemu", "create"),
                ("module.k.proxmox_vm_qemu.b", "proxmox_vm_qemu", "create"),
            ],
            (
                "touches 2 node/VM resources: module.k.proxmox_vm_qemu.a, module.k.proxmox_vm_qemu.b",
            ),
            id="unkeyed-addresses-listed-whole",
        ),
        pytest.param(
            [
                ("terraform_data.bootstrap", "terraform_data", "create"),
                ('terraform_data.vm["node-1"]', "terraform_data", "create"),
                ('terraform_data.vm["node-2"]', "terraform_data", "create"),
            ],
            (
                "touches 2 nodes/VMs: node-1, node-2 (terraform_data.vm), and terraform_data.bootstrap",
            ),
            id="keyed-and-unkeyed",
        ),
        pytest.param(
            [
                ("a.x", "x_thing", "delete"),
                ("a.y", "x_thing", "delete"),
                ("a.z", "x_thing", "replace"),
                ('m.vm["n1"]', "proxmox_vm_qemu", "update"),
            ],
            ("deletes 2 resources: a.x, a.y", "replaces a.z", 'touches a node/VM: m.vm["n1"]'),
            id="one-line-per-action",
        ),
    ],
)
def test_gate_reasons_are_grouped_and_name_every_resource(
    changes: list[tuple[str, str, str]], reasons: tuple[str, ...]
) -> None:
    policy = GatePolicy(
        node_types=("proxmox_vm_*",),
        node_addresses=("*.vm[*", "*.disk[*", "terraform_data.bootstrap"),
    )
    gate = decide(
        status="changes", declared="auto", summary=summary(*changes), destroy=False, policy=policy
    )
    assert gate.decision == "manual"
    assert gate.reasons == reasons
    text = reasons_text(gate)
    assert all(reason in text for reason in reasons)  # every reason, none cut
    assert "…" not in text


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
    assert policy_from(data).gates == expected


@pytest.mark.parametrize(
    "bad", [{"gates": "x"}, {"gates": {"node_types": "a_*"}}, {"gates": {"node_addresses": [1]}}]
)
def test_gate_policy_section_rejects_wrong_types(bad: dict[str, object]) -> None:
    with pytest.raises(ToolingError, match=r"policy.toml: \[gates\]"):
        policy_from(bad)


@pytest.mark.parametrize(
    ("parse", "data", "where", "key"),
    [
        (policy_from, {"gates": {"node_type": ["proxmox_*"]}}, "[gates]", "node_type"),
        (policy_from, {"executors": {"x": {"runs-on": ["a"]}}}, "[executors.x]", "runs-on"),
        (policy_from, {"check": {"layer": {}}}, "[check]", "layer"),
        (
            policy_from,
            {"apps": {"allowed_resource_types": [], "gates": "manual"}},
            "[apps]",
            "gates",
        ),
        (policy_from, {"layout": {"lives": ["infra"]}}, "[layout]", "lives"),
        (policy_from, {"gate": {"node_types": []}}, "the top level", "gate"),
    ],
    ids=["gates", "executors", "check", "apps", "layout", "top-level"],
)
def test_a_misspelt_policy_key_is_refused_by_name_in_every_table(
    parse: Any, data: dict[str, Any], where: str, key: str
) -> None:
    """A typo must not silently drop a rule ([gate] for [gates] would auto-apply VM changes)."""
    with pytest.raises(ToolingError) as raised:
        parse(data)
    message = str(raised.value)
    assert message.startswith(f"policy.toml: {where} has unknown key(s) {key}; known keys: ")
    assert message.endswith("Fix the spelling")


def test_the_repository_policy_uses_only_known_tables_and_keys() -> None:
    data = tomllib.loads((Path(__file__).resolve().parents[1] / "policy.toml").read_text())
    policy = policy_from(data)  # every table, every key
    assert policy.app_tier() is policy.apps


# --------------------------------------------------------------------------- report.render


def result(
    path: str,
    status: str = "changes",
    plan: PlanSummary | None = None,
    *,
    text: str | None = None,
    gate_class: str = "auto",
    destroy: bool = False,
    error: str | None = None,
) -> Result:
    """A unit's result, its gate decided under NODE_POLICY, as the planner hands it to the report."""
    plan = (
        plan if plan is not None or status != "changes" else summary(("a.b", "x_thing", "create"))
    )
    counts = plan.counts if plan is not None else dict.fromkeys(COUNT_KEYS, 0)
    tier = path.split("/")[1] if path.count("/") >= 1 else "cloud"
    (gated,) = with_gates(
        [
            Result(
                path,
                tier,
                "hosted",
                "modified",
                status,
                counts=counts,
                summary=plan,
                plan_text=text,
                gate_class=gate_class,
                destroy=destroy,
                error=error,
            )
        ],
        NODE_POLICY,
    )
    return gated


VERDICT_CASES = [
    pytest.param(
        [result("live/a/x", "no-changes", summary())],
        "✅",
        "no resource changes** · 1 unit(s) planned, 0 with changes, 0 failed",
        id="quiet",
    ),
    pytest.param(
        [result("live/a/x")],
        "✅",
        "1 to add, 0 to change, 0 to replace, 0 to destroy** · 1 unit(s) planned, 1 with changes, 0 failed",
        id="changes-without-destroys",
    ),
    pytest.param(
        [result("live/a/x"), result("live/a/y", "error", error="boom")],
        "❌",
        "1 to add, 0 to change, 0 to replace, 0 to destroy** · 2 unit(s) planned, 1 with changes, 1 failed",
        id="an-error",
    ),
    pytest.param(
        [result("live/a/x", "withheld"), result("live/a/y", "not-planned")],
        "❌",
        "no resource changes** · 0 unit(s) planned, 0 with changes, 0 failed, 1 withheld, 1 not-planned",
        id="withheld-and-not-planned",
    ),
]


@pytest.mark.parametrize(("results", "mark", "counts"), VERDICT_CASES)
def test_render_starts_with_the_marker_and_a_verdict(
    results: list[Result], mark: str, counts: str
) -> None:
    lines = comment.render(results).splitlines()
    assert lines[0] == comment.MARKER
    assert lines[1] == f"{mark} **Plan: {counts}"


@pytest.mark.parametrize(
    ("head", "base", "line"),
    [
        ("a" * 40, "b" * 40, f"Planned at `{'a' * 12}` against merge base `{'b' * 12}`."),
        ("a" * 40, None, f"Planned at `{'a' * 12}`."),
        (None, "b" * 40, None),
    ],
)
def test_render_names_the_commits_it_planned(
    head: str | None, base: str | None, line: str | None
) -> None:
    doc = comment.render([result("live/a/x")], head=head, base=base)
    if line is None:
        assert "Planned at" not in doc
    else:
        assert line in doc.splitlines()


def test_render_says_the_plan_includes_the_working_trees_uncommitted_changes() -> None:
    doc = comment.render([result("live/a/x")], head="a" * 40, base="b" * 40, uncommitted=2)
    assert (
        f"Planned at `{'a' * 12}` against merge base `{'b' * 12}`, including 2 uncommitted "
        "change(s) of the working tree (not in any commit)."
    ) in doc.splitlines()


def test_render_shows_each_gate_from_the_result_and_puts_manual_units_first() -> None:
    results = [
        result("live/a/auto"),
        result("live/a/vm", plan=summary(('terraform_data.vm["n1"]', "terraform_data", "create"))),
        result("live/a/quiet", "no-changes", summary()),
    ]
    doc = comment.render(results)
    rows = {line.split("`")[1]: line for line in doc.splitlines() if line.startswith("| `")}
    assert rows["live/a/auto"].endswith("| auto |")
    assert rows["live/a/vm"].endswith('| manual: touches a node/VM: terraform_data.vm["n1"] |')
    assert rows["live/a/quiet"].endswith("| none |")
    assert "the table's gate column):** `live/a/vm`" in doc
    assert 'Gate: **manual**: touches a node/VM: terraform_data.vm["n1"]' in doc
    details = [line for line in doc.splitlines() if line.startswith("<summary><code>")]
    assert details[0].startswith("<summary><code>live/a/vm</code>")


def test_with_gates_decides_each_result_once_and_keeps_a_decided_gate() -> None:
    decided = Result("live/a/x", "a", "hosted", "modified", "error", gate=Gate("manual", ("kept",)))
    fresh = Result("live/a/y", "a", "hosted", "modified", "no-changes", summary=summary())
    assert [r.gate for r in with_gates([decided, fresh], NODE_POLICY)] == [
        Gate("manual", ("kept",)),
        Gate("none", ("nothing to apply (no-changes)",)),
    ]
    assert with_gates([fresh], NODE_POLICY)[0].to_json()["gate"] == {
        "decision": "none",
        "reasons": ["nothing to apply (no-changes)"],
    }


def test_render_without_a_decided_gate_says_none() -> None:
    ungated = Result("live/a/x", "a", "hosted", "modified", "changes", gate=None)
    doc = comment.render([ungated])
    assert "| changes | none |" in doc
    assert "Gate:" not in doc and "Waiting for a human" not in doc


def test_render_lists_destroys_first_and_replacements_with_their_reason() -> None:
    replaced = PlanSummary(
        {**dict.fromkeys(COUNT_KEYS, 0), "replace": 1},
        (ResourceChange("a.r", "x_thing", "replace", reason="replace_because_cannot_update"),),
    )
    results = [
        result("live/a/replaced", plan=replaced),
        result("live/a/gone", plan=summary(("a.d", "x_thing", "delete")), destroy=True),
    ]
    warn = [line for line in comment.render(results).splitlines() if line.startswith("> - ")]
    assert warn == [
        "> - 🗑️ **destroy** (unit deleted) in `live/a/gone` (1): `a.d`",
        "> - ♻️ **replace** in `live/a/replaced` (1): `a.r`. Why: an attribute that cannot be "
        "updated in place changed",
    ]


@pytest.mark.parametrize(
    ("text", "fence"),
    [
        pytest.param("+ resource", "```", id="plain"),
        pytest.param("a heredoc\n```\nwith a fence", "````", id="text-holding-a-fence"),
    ],
)
def test_render_fences_the_plan_text_the_result_carries(text: str, fence: str) -> None:
    doc = comment.render([result("live/a/x", text=text)])
    assert f"{fence}diff\n{text}\n{fence}" in doc


def test_render_reads_the_text_from_the_result_not_from_a_file() -> None:
    on_disk_only = replace(result("live/a/x"), text_file="units/live/a/x/plan.txt")
    doc = comment.render([on_disk_only])
    assert "```diff" not in doc


BUDGET = 6_000


def test_render_under_budget_sheds_the_largest_plan_text_first() -> None:
    results = [
        result("live/a/big", text="+ big\n" * 1200),
        result("live/a/small", text="+ small\n"),
    ]
    doc = comment.render(results, budget=BUDGET, artifact_hint="the artifact")
    assert len(doc) <= BUDGET
    assert "+ small" in doc and "+ big" not in doc
    assert (
        "_Left out to stay under GitHub's 6,000-character limit: plan text of `live/a/big`." in doc
    )
    assert "The full text is in the artifact._" in doc


def test_render_under_budget_keeps_the_resource_lists_of_destroys() -> None:
    many = summary(*((f"a.r{i:03d}", "x_thing", "create") for i in range(500)))
    results = [
        result("live/a/creates", plan=many),
        result("live/a/deletes", plan=summary(("a.gone", "x_thing", "delete"))),
    ]
    doc = comment.render(results, budget=BUDGET)
    assert len(doc) <= BUDGET
    assert "resource list of `live/a/creates`" in doc and "`a.r000`" not in doc
    assert "**delete** (1):\n- `a.gone`" in doc
    assert "| `live/a/creates` |" in doc  # counts stay


def test_render_over_budget_drops_the_details_but_keeps_verdict_warnings_and_table() -> None:
    results = [
        result(f"live/a/u{i:03d}", plan=summary((f"a.d{i}", "x_thing", "delete")), error="e" * 200)
        for i in range(40)
    ]
    doc = comment.render(results, budget=BUDGET, artifact_hint="the artifact")
    assert len(doc) <= BUDGET
    assert "<details>" not in doc
    lines = doc.splitlines()
    assert lines[1] == (
        "⚠️ **Plan: 0 to add, 0 to change, 0 to replace, 40 to destroy** · "
        "40 unit(s) planned, 40 with changes, 0 failed"
    )
    assert sum(1 for line in lines if line.startswith("| `live/a/u")) == 40
    assert "> **Destroys and replacements:**" in doc


def test_render_of_many_destroys_caps_addresses_per_line_and_counts_the_rest() -> None:
    plan = summary(*((f"a.d{i:04d}", "x_thing", "delete") for i in range(400)))
    doc = comment.render([result("live/a/x", plan=plan)], budget=BUDGET)
    warn = next(line for line in doc.splitlines() if line.startswith("> - "))
    assert warn.startswith("> - 🗑️ **delete** in `live/a/x` (400): `a.d0000`")
    assert warn.endswith("more (all in the unit's plan text)")


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


def test_plan_args_ask_for_the_machine_readable_stream_last() -> None:
    stream = Path("/o/u/plan.stream.jsonl")
    assert plan_args(OUT, json_into=stream) == [
        *COMMON,
        "-lock-timeout=0s",
        f"-out={OUT}",
        f"-json-into={stream}",
    ]


def test_plan_args_keep_a_path_with_spaces_as_one_argument() -> None:
    out = Path("/tmp/my plans/$(id)/plan.tfplan")
    assert plan_args(out)[-1] == f"-out={out}"


# --------------------------------------------------------------------------- from_stream

# lines OpenTofu 1.12.6 wrote with `plan -json-into=FILE` (timestamps and ids shortened)
_VERSION = '{"@level":"info","@message":"OpenTofu 1.12.6","@module":"tofu.ui","tofu":"1.12.6","type":"version","ui":"1.2"}'
_REFRESH = (
    '{"@level":"info","@message":"terraform_data.a: Refresh complete [id=5405]","hook":{"resource":'
    '{"addr":"terraform_data.a","resource_type":"terraform_data"},"id_key":"id","id_value":"5405"},'
    '"type":"refresh_complete"}'
)
_ZERO = (
    '{"@level":"info","@message":"Plan: 0 to add, 0 to change, 0 to destroy.","changes":{"add":0,'
    '"change":0,"import":0,"remove":0,"forget":0,"operation":"plan"},"type":"change_summary"}'
)
_SAME_OUTPUTS = (
    '{"@level":"info","@message":"Outputs: 2","outputs":{"o":{"sensitive":false,"action":"noop"},'
    '"so":{"sensitive":true,"action":"noop"}},"type":"outputs"}'
)
_UPDATE = (
    '{"@level":"info","@message":"terraform_data.a: Plan to update","change":{"resource":{"addr":'
    '"terraform_data.a","module":"","resource":"terraform_data.a","implied_provider":"terraform",'
    '"resource_type":"terraform_data","resource_name":"a","resource_key":null},"action":"update"},'
    '"type":"planned_change"}'
)
_ONE_CHANGE = _ZERO.replace('"change":0', '"change":1')
_NEW_OUTPUT = _SAME_OUTPUTS.replace('"action":"noop"}', '"action":"create"}', 1)
_DRIFT = _UPDATE.replace("planned_change", "resource_drift")
_ERROR = '{"@level":"error","@message":"Error: boom","diagnostic":{"severity":"error","summary":"boom"},"type":"diagnostic"}'
_NO_CHANGE = PlanSummary(dict.fromkeys(COUNT_KEYS, 0))


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        ([_VERSION, _REFRESH, _ZERO, _SAME_OUTPUTS], _NO_CHANGE),
        ([_VERSION, _ZERO], _NO_CHANGE),  # no output at all
        ([_VERSION, _REFRESH, _UPDATE, _ONE_CHANGE, _SAME_OUTPUTS], None),  # a change: show
        ([_VERSION, _ZERO, _NEW_OUTPUT], None),  # an output changes
        ([_VERSION, _DRIFT, _ZERO, _SAME_OUTPUTS], None),  # drift
        ([_VERSION, _ERROR, _ZERO], None),
        ([_VERSION, _ONE_CHANGE], None),  # counts without their planned_change
        ([_VERSION, _REFRESH], None),  # cut short: no change_summary
        ([_VERSION, _ZERO.replace('"plan"', '"apply"')], None),
        ([_VERSION, "not json", _ZERO], None),
        (["[]", _ZERO], None),
        ([], None),
    ],
)
def test_a_plan_is_read_from_its_stream_only_when_it_changes_nothing(
    lines: list[str], expected: PlanSummary | None
) -> None:
    summary = from_stream("\n".join(lines) + "\n")
    assert summary == expected
    if summary is not None:
        assert not summary.has_changes and not summary.destructive


# --------------------------------------------------------------------------- waves

GITOPS = unit("live/cluster/gitops", deps=("live/cluster/os",), executor="lan")
CHAIN = model(NET, VMS, OS, GITOPS)


def test_upstream_is_every_unit_read_directly_or_through_others_in_dag_order() -> None:
    targets = select_targets(
        CHAIN, root=ROOT, all_units=True, units=(), change=None, executor=None, on_pr=False
    )
    assert {t.path: t.upstream for t in targets} == {
        "live/cluster/network": (),
        "live/cluster/vms": ("live/cluster/network",),
        "live/cluster/os": ("live/cluster/network", "live/cluster/vms"),
        "live/cluster/gitops": ("live/cluster/network", "live/cluster/vms", "live/cluster/os"),
    }


@pytest.mark.parametrize(
    ("named", "expected"),
    [
        # a chain of targets: Terragrunt orders it inside one run
        (("live/cluster/vms", "live/cluster/os"), [["live/cluster/vms", "live/cluster/os"]]),
        (
            ("live/cluster/network", "live/cluster/vms", "live/cluster/os", "live/cluster/gitops"),
            [
                [
                    "live/cluster/network",
                    "live/cluster/vms",
                    "live/cluster/os",
                    "live/cluster/gitops",
                ]
            ],
        ),
        # gitops reads vms through os, which is not planned: a later run
        (
            ("live/cluster/vms", "live/cluster/gitops"),
            [["live/cluster/vms"], ["live/cluster/gitops"]],
        ),
        (
            ("live/cluster/network", "live/cluster/os"),
            [["live/cluster/network"], ["live/cluster/os"]],
        ),
        # network -> (vms) -> os -> gitops: os waits for network, gitops follows os in its run
        (
            ("live/cluster/network", "live/cluster/os", "live/cluster/gitops"),
            [["live/cluster/network"], ["live/cluster/os", "live/cluster/gitops"]],
        ),
        # unrelated units share the one run
        (("live/cluster/network",), [["live/cluster/network"]]),
    ],
)
def test_waves_split_only_what_terragrunt_would_not_order(
    named: tuple[str, ...], expected: list[list[str]]
) -> None:
    targets = select_targets(
        CHAIN, root=ROOT, all_units=False, units=named, change=None, executor=None, on_pr=False
    )
    assert [[t.path for t in wave] for wave in waves(targets)] == expected


def test_no_targets_no_waves() -> None:
    assert waves([]) == []
