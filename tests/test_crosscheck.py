"""Cross-check the repository model against Terragrunt's own `find --dependencies --reading`.

Where Terragrunt is wrong, the test documents the difference instead of hiding
it: Terragrunt 1.1.3 does not report files read with file() (nor
templatefile()/read_tfvars_file()), so a change to such a file selects nothing
in Terragrunt's git filter. Our model tracks them; the tests below assert that
this is the *only* difference.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from infra_fixtures import REPO, commit_all, git, invoke

from tooling.commands import crosscheck
from tooling.core.doctor.crosscheck import Report
from tooling.model.repo import load
from tooling.model.trees import WorkTree
from tooling.model.units import Model

sys.path.insert(0, str(REPO / "benchmarks"))
from gentree import generate

pytestmark = pytest.mark.e2e


def terragrunt_find(root: Path) -> dict[str, dict[str, set[str]]]:
    result = subprocess.run(
        [
            "terragrunt",
            "find",
            "--json",
            "--dependencies",
            "--reading",
            "--no-color",
            "--log-level",
            "error",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return {
        item["path"]: {
            "dependencies": set(item.get("dependencies") or ()),
            "reading": set(item.get("reading") or ()),
        }
        for item in json.loads(result.stdout)
        if item["type"] == "unit"
    }


def ours(root: Path) -> Model:
    return load(WorkTree(root, "."))


def test_the_example_tree_agrees_with_terragrunt(example_repo: Path) -> None:
    theirs = terragrunt_find(example_repo)
    model = ours(example_repo)
    assert set(theirs) == set(model.units)
    for path, unit in model.units.items():
        assert set(unit.dependencies) == theirs[path]["dependencies"], path
        own_file = f"{path}/terragrunt.hcl"  # Terragrunt does not list the unit's own file
        assert set(unit.reads) - {own_file} == theirs[path]["reading"], path


def test_a_generated_tree_agrees_except_for_file_reads_terragrunt_does_not_track(
    tmp_path: Path, tools: None
) -> None:
    root = tmp_path / "tree"
    generate(root, 60)
    theirs = terragrunt_find(root)
    model = ours(root)
    assert set(theirs) == set(model.units)
    missing_in_terragrunt: dict[str, set[str]] = {}
    for path, unit in model.units.items():
        assert set(unit.dependencies) == theirs[path]["dependencies"], path
        ours_reads = set(unit.reads) - {f"{path}/terragrunt.hcl"}
        assert theirs[path]["reading"] <= ours_reads, path  # everything Terragrunt sees, we see
        missing_in_terragrunt[path] = ours_reads - theirs[path]["reading"]
    # the difference is exactly the file() reads the generator wrote
    for path, missing in missing_in_terragrunt.items():
        group = path.rsplit("/", 1)[0]
        index = int(path.rsplit("/u", 1)[1])
        expected = {f"{group}/shared/settings.yaml"}
        if index % 10 == 9 or index == 5:
            expected.add(f"{group}/u0/peers.json")
        assert missing == expected, path


# --------------------------------------------------------------------------- the shared corpus


def _corpus_root() -> Path:
    """``../shared/corpus`` beside the repository (for a git worktree: beside its main checkout)."""
    common = subprocess.run(
        ["git", "rev-parse", "--path-format=absolute", "--git-common-dir"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    for base in (REPO, Path(common).parent if common else REPO):
        if (base.parent / "shared" / "corpus").is_dir():
            return base.parent / "shared" / "corpus"
    return REPO.parent / "shared" / "corpus"


CORPUS = _corpus_root()
FIXTURES = "terragrunt-v1.1.3-fixtures"


def _corpus(name: str) -> Path:
    folder = CORPUS / name
    if not folder.is_dir():
        pytest.skip(
            f"{folder} is absent: the real-world corpus is kept beside the repository, not in it"
        )
    return folder


@pytest.fixture(scope="session")
def corpus_reports(tools: None) -> dict[str, object]:
    """Terragrunt's find is slow on the corpus: run it once per folder in the session."""
    return {}


def _report(name: str, cache: dict[str, object]) -> Report:
    if name not in cache:
        cache[name] = crosscheck.check(_corpus(name))
    report = cache[name]
    assert isinstance(report, Report)
    return report


def test_terragrunts_own_fixtures_have_no_dangerous_miss(corpus_reports: dict[str, object]) -> None:
    report = _report(FIXTURES, corpus_reports)
    assert report.dangerous == (), crosscheck.render(report)
    # the agreement figures (docs/commands.md, "invoke crosscheck"): a change to them is a finding
    # blind: 6, 4 files giving a block Terragrunt reads once twice (model/hclstrict.py) and
    # a unit including a root file in JSON, which the model does not evaluate
    assert (report.compared, report.exact, len(report.blind)) == (990, 973, 11)
    twice = [unit for unit, why in report.blind if "is given twice" in why]
    assert len(twice) == 4, twice
    json_root = [unit for unit, why in report.blind if "a configuration in JSON" in why]
    assert json_root == ["modules/hcl-module-b/module-b-child"], json_root
    assert len(report.unparsed) == 63
    kinds: dict[str, int] = {}
    for item in report.over:
        kinds[item.kind] = kinds.get(item.kind, 0) + 1
    # read: 3, and the 112 files regressions/benchmark-parsing looks for with fileexists();
    # unit: 211, and the stack folder of a stack file the reader refuses (two locals blocks)
    assert kinds == {"unit": 212, "dependency": 8, "read": 115}


def test_the_classic_live_example_agrees_exactly(corpus_reports: dict[str, object]) -> None:
    report = _report("terragrunt-infrastructure-live-example", corpus_reports)
    assert report.disagreements == () and report.blind == ()
    assert report.compared == report.exact == 6


def test_the_stacks_example_agrees_exactly_after_generation(tmp_path: Path, tools: None) -> None:
    stacks, catalog = (
        _corpus("terragrunt-infrastructure-live-stacks-example"),
        _corpus("catalog-example"),
    )
    # without generation the model still knows the six units the stack files declare
    declared = ours(stacks)
    assert len(declared.units) == 6 and all(u.error for u in declared.units.values())
    # generate in a scratch copy, the catalog served from a local git repository (no network)
    copy = tmp_path / "live"
    shutil.copytree(stacks, copy)
    source = tmp_path / "catalog"
    shutil.copytree(catalog, source)
    git(source, "init", "--quiet", "--initial-branch=main")
    commit_all(source, "catalog")
    env = {
        **os.environ,
        "TG_NON_INTERACTIVE": "true",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": f"url.file://{source}.insteadOf",
        "GIT_CONFIG_VALUE_0": "https://github.com/gruntwork-io/terragrunt-infrastructure-catalog-example.git",
    }
    subprocess.run(
        ["terragrunt", "stack", "generate", "--no-color"],
        cwd=copy,
        env=env,
        check=True,
        capture_output=True,
    )
    report = crosscheck.check(copy)
    assert report.disagreements == () and report.blind == (), crosscheck.render(report)
    assert report.compared == report.exact == 6


def test_this_repository_agrees_exactly(tools: None) -> None:
    report = crosscheck.check(REPO, ("live",))
    assert report.disagreements == () and report.blind == ()
    assert report.compared == report.exact == 7


@pytest.mark.parametrize(
    "name",
    [
        FIXTURES,
        "terragrunt-infrastructure-live-example",
        "terragrunt-infrastructure-live-stacks-example",
        "catalog-example",
    ],
)
def test_no_command_prints_a_traceback_on_a_corpus_folder(name: str, tmp_path: Path) -> None:
    folder = _corpus(name)
    copy = tmp_path / "repo"
    shutil.copytree(folder, copy, symlinks=True)
    (copy / "policy.toml").write_text('[layout]\nlive = ["."]\nroot_file = "README.md"\n')
    (copy / "README.md").touch()
    for name in ("tasks.py", ".tool-versions"):
        shutil.copy2(REPO / name, copy / name)
    git(copy, "init", "--quiet", "--initial-branch=main")
    commit_all(copy, "corpus")
    for args in (
        ["doctor"],
        ["units", "--json"],
        ["affected", "--base", "HEAD", "--uncommitted"],
        ["graph"],
        ["check"],
        ["crosscheck"],
    ):
        ran = invoke(copy, *args)
        assert "Traceback" not in ran.stderr + ran.stdout, (args, ran.stderr[-2000:])
        assert ran.returncode in (0, 1), (args, ran.returncode, ran.stderr[-2000:])
