"""What every task pays before its own work: the bytecode cache, and the model
`invoke affected` reads on a clean working tree (docs/benchmarks.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from infra_fixtures import commit_all, edit, git, invoke


def test_a_task_run_writes_the_bytecode_cache_of_the_tooling_modules_it_imports(
    example_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # invoke turns bytecode writing off for its whole run; without the cache every
    # run compiles each tooling module it imports again
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    prefix = tmp_path / "pycache"
    ran = invoke(
        example_repo, "affected", "--base", "main", env={"PYTHONPYCACHEPREFIX": str(prefix)}
    )
    assert ran.returncode == 0, ran.output
    # the cache mirrors the source tree: tooling/engine/plan/affected.cpython-311.pyc
    written = {p.relative_to(prefix).as_posix().rsplit(".", 2)[0] for p in prefix.rglob("*.pyc")}
    # change detection is imported only when the task runs, after invoke has set its flag
    for module in (
        "tooling/engine/plan/affected",
        "tooling/core/plan/affected",
        "tooling/model/loader",
    ):
        assert any(w.endswith(module) for w in written), sorted(written)


def test_the_interpreter_s_own_no_bytecode_setting_is_still_honoured(
    example_repo: Path, tmp_path: Path
) -> None:
    prefix = tmp_path / "pycache"
    env = {"PYTHONPYCACHEPREFIX": str(prefix), "PYTHONDONTWRITEBYTECODE": "1"}
    ran = invoke(example_repo, "affected", "--base", "main", env=env)
    assert ran.returncode == 0, ran.output
    assert not prefix.exists() or not list(prefix.rglob("*.pyc"))


def _model_caches(repo: Path) -> set[str]:
    return {p.name for p in (repo / ".iac" / "cache").glob("model-*.marshal")}


def test_affected_on_a_clean_working_tree_reads_the_head_commit_s_cached_model(
    example_repo: Path,
) -> None:
    git(example_repo, "checkout", "--quiet", "-b", "feature")
    edit(example_repo, "live/cloud/dns/terragrunt.hcl", "ttl = 60", "ttl = 120")
    commit_all(example_repo, "dns ttl")
    ran = invoke(example_repo, "affected", "--base", "main", "--json")
    assert ran.returncode == 0, ran.output
    assert '"live/cloud/dns"' in ran.stdout
    # the head's model (and the merge base's, if it was needed), each keyed by its tree
    # SHA: the working tree was neither walked nor hashed for a model of its own
    head, base = (
        git(example_repo, "rev-parse", f"{rev}^{{tree}}").strip() for rev in ("HEAD", "main")
    )
    caches = _model_caches(example_repo)
    assert f"model-{head}.marshal" in caches
    assert caches <= {f"model-{head}.marshal", f"model-{base}.marshal"}, caches


def test_affected_with_an_uncommitted_change_still_reads_the_working_tree(
    example_repo: Path,
) -> None:
    edit(example_repo, "live/cloud/dns/terragrunt.hcl", "ttl = 60", "ttl = 120")
    ran = invoke(example_repo, "affected", "--base", "main", "--json")
    assert ran.returncode == 0, ran.output
    assert '"live/cloud/dns"' in ran.stdout
    head_tree = git(example_repo, "rev-parse", "HEAD^{tree}").strip()
    # a model keyed by the working tree's own fingerprint, not the head's tree SHA
    assert _model_caches(example_repo) - {f"model-{head_tree}.marshal"}


def test_the_environment_s_bin_folder_is_the_one_sysconfig_names() -> None:
    # in a virtual environment on POSIX the folder is known without importing sysconfig
    import sysconfig

    from tooling.io.binpath import scripts_dir

    assert scripts_dir() == Path(sysconfig.get_path("scripts"))


@pytest.mark.parametrize(
    "source",
    [
        "git::https://git.example.com/platform-modules/terraform-mod-5.git?ref=v1.0.0",
        "git::https://github.com/acme/terraform-proxmox.git//modules/vm?ref=v1.1.0",
        "git::https://github.com/acme/Terraform-Proxmox.git?ref=v1.1.0",
        "git::https://github.com/acme/terraform-%70roxmox.git?ref=v1.1.0",
        "git::https://github.com/acme/x.git//terraform-proxmox?ref=v1",
        "git@github.com:acme/terraform-talos.git?ref=v2",
        "github.com/acme/terraform-flux?ref=v1",
        "tfr:///acme/terraform-proxmox/aws?version=1.0.0",
        "tfr:///acme/proxmox/aws?version=1.0.0",
        "../modules/terraform-proxmox",
        "git::https://github.com/acme/terraform-proxmox-extra.git?ref=v1",
        "",
    ],
)
def test_the_first_line_s_catalog_check_agrees_with_the_source_parser(source: str) -> None:
    # pins_any parses only the sources whose text could name a catalog repository
    from tooling.io.workspace import pins_any
    from tooling.model.sources import parse_source

    catalog = {"terraform-proxmox", "terraform-talos", "terraform-flux"}
    assert pins_any([source], catalog) is (parse_source(source).short_name in catalog)


def _cached_model_round_trip(tmp_path: Path, edit_record: Any = None) -> Any:
    import marshal

    from tooling.model import modelcache
    from tooling.model.trees import GitTree
    from tooling.model.units import Model, Unit

    unit = Unit(
        path="live/a",
        tier="cloud",
        executor="hosted",
        gate="auto",
        plan_on_pr=True,
        source="git::https://example.invalid/m.git?ref=v1",
        ref="v1",
        dependencies=("live/b",),
        reads=("live/a/terragrunt.hcl", "root.hcl"),
        state_key="live/a/terraform.tfstate",
        state_bucket=None,
        line_of={"source": 3},
        exclude={"actions": ["plan"], "exclude_dependencies": False, "where": "x:1"},
    )
    model = Model({unit.path: unit}, (unit.path,))
    path = tmp_path / "model-x.marshal"
    modelcache.save(path, model, {})
    if edit_record is not None:
        data = marshal.loads(path.read_bytes())
        edit_record(data["units"][0])
        path.write_bytes(marshal.dumps(data))
    tree = GitTree(tmp_path, "0" * 40, dict, lambda shas: {})
    return model, modelcache.read(path, tree)


def test_a_cached_model_reads_back_equal_to_the_one_saved(tmp_path: Path) -> None:
    saved, read = _cached_model_round_trip(tmp_path)
    assert read == saved
    unit = read.units["live/a"]
    assert unit.dependencies == ("live/b",) and isinstance(unit.reads, tuple)
    assert unit.line_of == {"source": 3} and unit.exclude == saved.units["live/a"].exclude
    with pytest.raises(AttributeError):  # still the frozen record
        unit.tier = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    "edit_record",
    [
        lambda record: record.pop("tier"),
        lambda record: record.update(unknown="x"),
    ],
    ids=["a field missing", "a field unknown"],
)
def test_a_cached_unit_record_of_other_fields_is_not_used(tmp_path: Path, edit_record: Any) -> None:
    _, read = _cached_model_round_trip(tmp_path, edit_record)
    assert read is None  # the model is evaluated again


def test_policy_toml_is_one_value_and_no_reader_can_change_what_the_others_read(
    tmp_path: Path,
) -> None:
    import dataclasses

    from tooling.io import config

    text = (
        '[gates]\nnode_types = ["proxmox_vm"]\n\n'
        '[check]\nlayers = { a = { path = "live/a", executor = "x" } }\n'
    )
    (tmp_path / "policy.toml").write_text(text)
    first = config.read_policy(tmp_path)
    assert first.gates.node_types == ("proxmox_vm",)
    assert [(layer.name, layer.executor) for layer in first.check.layers] == [("a", "x")]
    with pytest.raises(AttributeError):
        first.gates.node_types.append("changed")  # type: ignore[attr-defined]
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.check.layers[0].executor = "changed"  # type: ignore[misc]
    with pytest.raises(TypeError):
        first.check.allowed_roles["cloud"] = {}  # type: ignore[index]
    assert config.read_policy(tmp_path) == first


_NAMES = ["README.md", ".md", "x.MD", "a.markdown", "LICENSE", "LICENSE.txt", "LICENSE."]
_NAMES += ["LICENSEX", "CODEOWNERS", "codeowners", "a.rst", "b.adoc", "terragrunt.hcl", "", "ab"]


@pytest.mark.parametrize("pattern", ["*.md", "LICENSE.*", "CODEOWNERS", "*", "a*b", "[ab]*", "x?"])
def test_the_documentation_patterns_match_as_fnmatch_matches(pattern: str) -> None:
    import fnmatch

    from tooling.core.plan.affected import name_matches

    assert [n for n in _NAMES if name_matches(n, pattern)] == [
        n for n in _NAMES if fnmatch.fnmatchcase(n, pattern)
    ]
