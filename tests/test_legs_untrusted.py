"""The legs' folders, matrices and timings read back as untrusted input.

`invoke report --merge`, `invoke plan --from-matrix --leg` and `invoke matrix --timings`
read what other jobs uploaded: each document is checked (regular file, size, JSON,
schema) before anything is built from it, and a leg's folder may hold only regular
files of its own units. Every refusal is one line naming the folder or file and what
to do, and the merged folder is not touched before every leg is checked.

Real git repositories of the example tree; no tofu or terragrunt runs (every case is
refused before a plan would start), so these tests run without the pinned tools.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from infra_fixtures import GIT_ENV, Invoked, commit_all, edit, git, invoke, make_example_repo

from tooling.core.ci import legs
from tooling.core.plan.affected import Affected, AffectedUnit
from tooling.core.plan.gates import Gate
from tooling.core.plan.results import Result
from tooling.errors import ToolingError

HOSTED = {"executor": "hosted", "runs_on": ["ubuntu-latest"]}
LAN = {"executor": "lan", "runs_on": ["self-hosted", "lan"]}
#: the address space a hostile-input run gets: far more than any refusal needs, far less
#: than a reader without bounds takes before the kernel stops it
MEMORY_LIMIT = 1024 * 1024 * 1024


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Path]:
    yield make_example_repo(tmp_path / "infra")


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _limited_run(repo: Path, *args: str) -> Invoked:
    """``python ARGS`` in ``repo`` as a separate process whose memory is capped at
    :data:`MEMORY_LIMIT`: a reader without bounds fails there instead of taking the
    machine."""
    proc = subprocess.run(
        [sys.executable, *args],
        cwd=repo,
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        preexec_fn=_limited,
    )
    return Invoked(proc.returncode, proc.stdout, proc.stderr)


def invoke_limited(repo: Path, *args: str) -> Invoked:
    """``invoke ARGS`` under :data:`MEMORY_LIMIT`."""
    return _limited_run(repo, "-m", "invoke", *args)


def _unit(path: str, executor: str = "hosted", **extra: Any) -> dict[str, Any]:
    unit = Result(
        path, "cloud", executor, "modified", "no-changes", seconds=1.5, gate=Gate("none", ())
    ).to_json()
    return {**unit, **extra}


def _leg_folder(
    parent: Path,
    name: str,
    index: int,
    count: int,
    units: list[str],
    *,
    executor: str = "hosted",
    listed: list[str] | None = None,
    **extra: Any,
) -> Path:
    """A leg's folder as `invoke plan --leg` writes it: summary.json with its leg record,
    and each unit's plan text in its own folder."""
    folder = parent / name
    folder.mkdir(parents=True)
    doc = {
        "version": 1,
        "base": "b" * 40,
        "head": "a" * 40,
        "executor": executor,
        "tools": {"opentofu": "1.12.6"},
        "interrupted": False,
        "units": [_unit(u, executor, text_file=f"units/{u}/plan.txt") for u in units],
        "leg": {
            "id": f"{executor}-{index}-of-{count}",
            "index": index,
            "count": count,
            "units": units if listed is None else listed,
        },
        **extra,
    }
    for unit in units:
        (folder / "units" / unit).mkdir(parents=True)
        (folder / "units" / unit / "plan.txt").write_text(f"No changes in {unit}.\n")
    (folder / "summary.json").write_text(json.dumps(doc))
    return folder


def _summary(folder: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((folder / "summary.json").read_text())
    return doc


def _rewrite(folder: Path, change: Any) -> None:
    doc = _summary(folder)
    change(doc)
    (folder / "summary.json").write_text(json.dumps(doc))


def _merge(repo: Path, out: Path, *folders: Path) -> Invoked:
    args = [a for f in folders for a in ("--merge", str(f))]
    return invoke(repo, "report", *args, "--out", str(out))


def _one_line(ran: Invoked, code: int, *fragments: str) -> str:
    """The run failed with ``code`` and one error line holding every fragment."""
    assert ran.returncode == code, ran.output
    lines = [ln for ln in ran.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, ran.stderr
    assert "Traceback" not in ran.stderr and "bug" not in ran.stderr, ran.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


# --------------------------------------------------------------------------- report --merge


def test_a_leg_claiming_ten_billion_legs_is_refused_without_growing_memory(
    repo: Path, tmp_path: Path
) -> None:
    leg = _leg_folder(tmp_path, "a", 1, 2, ["live/cloud/dns"])
    _rewrite(leg, lambda d: d["leg"].update(count=10_000_000_000))
    ran = invoke_limited(repo, "report", "--merge", str(leg), "--out", str(tmp_path / "m"))
    _one_line(ran, 1, str(leg / "summary.json"), "at leg/count: more than 256")
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize(
    ("damage", "where"),
    [
        (lambda d: d.update(leg="hosted-1-of-1"), "at leg: expected object, found string"),
        (lambda d: d["units"].append(5), "at units/1: expected object, found integer"),
        (lambda d: d["units"][0].update(seconds={"s": 1}), "at units/0/seconds: expected number"),
        (lambda d: d.update(executor=["hosted"]), "at executor: expected string or null"),
        (lambda d: d["units"][0].update(text_file="/etc/passwd"), "at units/0/text_file"),
    ],
    ids=["leg", "unit", "seconds", "executor", "text_file"],
)
def test_a_leg_summary_field_of_the_wrong_type_is_refused_in_one_line_naming_it(
    repo: Path, tmp_path: Path, damage: Any, where: str
) -> None:
    leg = _leg_folder(tmp_path, "a", 1, 1, ["live/cloud/dns"])
    _rewrite(leg, damage)
    ran = _merge(repo, tmp_path / "m", leg)
    _one_line(ran, 1, str(leg / "summary.json"), where, "pass the folders the legs'")
    assert not (tmp_path / "m").exists()


def test_a_leg_reporting_a_unit_outside_its_leg_units_is_refused(
    repo: Path, tmp_path: Path
) -> None:
    """A hosted leg whose summary.json carries the cluster's vms (not in its leg.units):
    merged, it would show a plan no leg of the matrix made."""
    one = _leg_folder(tmp_path, "a", 1, 2, ["live/cloud/dns"])
    two = _leg_folder(tmp_path, "b", 2, 2, ["live/cloud/iam"])
    _rewrite(two, lambda d: d["units"].append(_unit("live/cluster/vms", "lan")))
    ran = _merge(repo, tmp_path / "m", one, two)
    _one_line(
        ran,
        1,
        f"{two} (leg hosted-2-of-2) reports unit live/cluster/vms, which its leg does not own",
        "merge the folders the legs' `invoke plan --leg` wrote",
    )
    assert not (tmp_path / "m").exists()


def test_a_leg_reporting_a_unit_of_another_executor_is_refused_even_when_listed(
    repo: Path, tmp_path: Path
) -> None:
    leg = _leg_folder(tmp_path, "a", 1, 1, ["live/cloud/dns"])
    _rewrite(
        leg,
        lambda d: (
            d["units"].append(_unit("live/cluster/vms", "lan")),
            d["leg"]["units"].append("live/cluster/vms"),
        ),
    )
    ran = _merge(repo, tmp_path / "m", leg)
    _one_line(
        ran,
        1,
        f"{leg} (leg hosted-1-of-1) reports unit live/cluster/vms of executor lan, "
        "in a leg of executor hosted",
    )


@pytest.mark.parametrize("place", ["units", "cascade/units"])
def test_a_leg_shipping_another_legs_plan_is_refused_and_the_reviewed_plan_kept(
    repo: Path, tmp_path: Path, place: str
) -> None:
    one = _leg_folder(tmp_path, "a", 1, 2, ["live/cloud/dns"])
    (one / "units/live/cloud/dns/plan.tfplan").write_bytes(b"the reviewed plan")
    two = _leg_folder(tmp_path, "b", 2, 2, ["live/cloud/iam"])
    forged = two / place / "live/cloud/dns/plan.tfplan"
    forged.parent.mkdir(parents=True, exist_ok=True)
    forged.write_bytes(b"another plan")
    out = tmp_path / "m"
    ran = _merge(repo, out, one, two)
    _one_line(
        ran,
        1,
        f"{two}: {place}/live/cloud/dns/plan.tfplan is a file of unit live/cloud/dns, "
        "not of a unit this leg planned",
    )
    assert not out.exists()
    forged.unlink()  # without it, the legs merge, and the owner's plan is the reviewed one
    ran = _merge(repo, out, one, two)
    assert ran.returncode == 0, ran.output
    assert (out / "units/live/cloud/dns/plan.tfplan").read_bytes() == b"the reviewed plan"


@pytest.mark.parametrize(
    ("place", "target"),
    [
        ("units/live/cloud/dns/plan.txt", "/etc/passwd"),
        ("units/rootlink", "/"),
        ("units/live/cloud/dns/up", ".."),
        ("cascade", "/etc"),
    ],
    ids=["plan-text", "root", "parent", "cascade"],
)
def test_a_symlink_anywhere_in_a_leg_is_refused_and_nothing_is_copied(
    repo: Path, tmp_path: Path, place: str, target: str
) -> None:
    leg = _leg_folder(tmp_path, "a", 1, 1, ["live/cloud/dns"])
    link = leg / place
    link.unlink(missing_ok=True)
    link.symlink_to(target)
    out = tmp_path / "m"
    ran = _merge(repo, out, leg)
    _one_line(ran, 1, f"{leg}: {place} is a symbolic link", "regular files only")
    assert not out.exists()


def test_a_pipe_in_a_leg_is_refused_without_opening_it(repo: Path, tmp_path: Path) -> None:
    leg = _leg_folder(tmp_path, "a", 1, 1, ["live/cloud/dns"])
    os.mkfifo(leg / "units/live/cloud/dns/plan.log")
    ran = _merge(repo, tmp_path / "m", leg)
    _one_line(ran, 1, f"{leg}: units/live/cloud/dns/plan.log is not a regular file")


def test_an_out_inside_or_holding_a_leg_folder_is_a_usage_error_that_writes_nothing(
    repo: Path, tmp_path: Path
) -> None:
    legs_dir = tmp_path / "legs"
    leg = _leg_folder(legs_dir, "a", 1, 1, ["live/cloud/dns"])
    before = sorted(p.relative_to(leg).as_posix() for p in leg.rglob("*"))
    ran = _merge(repo, leg / "merged", leg)
    _one_line(ran, 2, f"--out {leg / 'merged'}: it is inside the leg folder {leg}")
    ran = _merge(repo, leg / "units" / "x", leg)
    _one_line(ran, 2, "it is inside the leg folder")
    ran = _merge(repo, legs_dir, leg)
    _one_line(ran, 2, f"--out {legs_dir}: it holds the leg folder {leg}")
    assert sorted(p.relative_to(leg).as_posix() for p in leg.rglob("*")) == before


def test_a_refused_leg_leaves_an_earlier_merged_report_untouched_and_unclaimed(
    repo: Path, tmp_path: Path
) -> None:
    one = _leg_folder(tmp_path, "a", 1, 2, ["live/cloud/dns"])
    two = _leg_folder(tmp_path, "b", 2, 2, ["live/cloud/iam"])
    out = tmp_path / "m"
    ran = _merge(repo, out, one, two)
    assert ran.returncode == 0, ran.output
    earlier = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    (two / "units/live/cloud/dns").mkdir(parents=True)
    (two / "units/live/cloud/dns/plan.tfplan").write_bytes(b"another plan")
    (out / ".report.lock").unlink()
    ran = _merge(repo, out, one, two)
    _one_line(ran, 1, "units/live/cloud/dns/plan.tfplan is a file of unit live/cloud/dns")
    now = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert now == {k: v for k, v in earlier.items() if k != ".report.lock"}


def test_the_legs_own_files_are_merged_as_regular_files_and_their_plan_texts_shown(
    repo: Path, tmp_path: Path
) -> None:
    one = _leg_folder(tmp_path, "a", 1, 2, ["live/cloud/dns"])
    two = _leg_folder(tmp_path, "b", 2, 2, ["live/cloud/iam", "live/cloud/registry"])
    out = tmp_path / "m"
    ran = _merge(repo, out, two, one)
    assert ran.returncode == 0, ran.output
    merged = _summary(out)
    assert merged["legs"] == ["hosted-1-of-2", "hosted-2-of-2"]
    assert [u["path"] for u in merged["units"]] == [
        "live/cloud/dns",
        "live/cloud/iam",
        "live/cloud/registry",
    ]
    copied = sorted(p.relative_to(out).as_posix() for p in (out / "units").rglob("*.txt"))
    assert copied == [
        "units/live/cloud/dns/plan.txt",
        "units/live/cloud/iam/plan.txt",
        "units/live/cloud/registry/plan.txt",
    ]
    assert not any(p.is_symlink() for p in out.rglob("*"))


# --------------------------------------------------------------------------- matrix --timings


def _wide_change(repo: Path) -> None:
    """dns, iam and registry (which reads iam), and the cluster's tier: every unit."""
    git(repo, "checkout", "--quiet", "-b", "wide")
    edit(repo, "live/cloud/dns/terragrunt.hcl", "ttl = 60", "ttl = 120")
    edit(
        repo,
        "live/cloud/iam/terragrunt.hcl",
        'github_org = "example-org"',
        'github_org = "example-org" # x',
    )
    edit(repo, "live/cloud/registry/terragrunt.hcl", 'include "root"', '# registry\ninclude "root"')
    edit(repo, "live/cluster/tier.hcl", 'gate       = "auto"', 'gate       = "auto" # reviewed')
    commit_all(repo, "three cloud units and the cluster tier")


def test_timings_from_a_device_is_refused_without_reading_it(repo: Path) -> None:
    ran = invoke_limited(repo, "matrix", "--max-legs", "2", "--timings", "/dev/zero")
    _one_line(ran, 1, "--timings /dev/zero: refused, a device is not a summary.json")
    assert ran.stdout == ""


def test_timings_of_an_infinite_plan_time_are_refused_not_packed(
    repo: Path, tmp_path: Path
) -> None:
    """``1e999`` parses as infinity: packed, the matrix would carry ``Infinity``, not JSON."""
    leg = _leg_folder(tmp_path, "a", 1, 1, ["live/cloud/dns"])
    text = (leg / "summary.json").read_text().replace('"seconds": 1.5', '"seconds": 1e999')
    (leg / "summary.json").write_text(text)
    ran = invoke(repo, "matrix", "--max-legs", "2", "--timings", str(leg / "summary.json"))
    _one_line(ran, 1, f"--timings {leg / 'summary.json'}", "at units/0/seconds: more than 604800")
    assert ran.stdout == ""


def test_timings_of_an_earlier_plan_pack_the_legs(repo: Path, tmp_path: Path) -> None:
    _wide_change(repo)
    earlier = _leg_folder(tmp_path, "a", 1, 1, ["live/cloud/dns", "live/cloud/iam"])
    ran = invoke(
        repo,
        "matrix",
        "--base",
        "main",
        "--max-legs",
        "2",
        "--timings",
        str(earlier / "summary.json"),
    )
    assert ran.returncode == 0, ran.output
    hosted = [e for e in json.loads(ran.stdout)["include"] if e["executor"] == "hosted"]
    assert [e["cost"] for e in hosted] == [1.5, 3.0]


# --------------------------------------------------------------------------- plan --from-matrix


#: ``invoke plan --base main --from-matrix M --leg ID --out OUT`` without the task's check
#: of the pinned tools (every case here is refused before a Terragrunt process starts):
#: the same function, under the same error handling as the task
_PLAN_LEG = """
import sys
from pathlib import Path

from invoke.exceptions import Exit

from tooling.cli import errors
from tooling.commands.plan import plan_leg
from tooling.io.workspace import Workspace

matrix, leg, out = sys.argv[1:]
try:
    with errors():
        ws = Workspace.here(Path.cwd())
        sys.exit(plan_leg(ws, matrix=matrix, leg=leg, base="main", jobs=1, out=Path(out)))
except Exit as exc:
    sys.exit(exc.code)
"""


def _plan_leg(repo: Path, out: Path, matrix: dict[str, Any] | str, leg: str) -> Invoked:
    text = matrix if isinstance(matrix, str) else json.dumps(matrix)
    return _limited_run(repo, "-c", _PLAN_LEG, text, leg, str(out))


def test_a_leg_listing_a_unit_of_another_executor_is_refused_not_dropped(
    repo: Path, tmp_path: Path
) -> None:
    _wide_change(repo)
    cloud = ["live/cloud/dns", "live/cloud/iam", "live/cloud/registry"]
    matrix = {
        "include": [
            {**HOSTED, "units": [*cloud, "live/cluster/vms"]},
            {**LAN, "units": ["live/cluster/network", "live/cluster/os", "live/cluster/gitops"]},
        ]
    }
    ran = _plan_leg(repo, tmp_path / "out", matrix, "hosted")
    _one_line(
        ran,
        1,
        "leg hosted lists live/cluster/vms, a unit of executor lan, in a leg of executor hosted",
        "run `invoke matrix` again",
    )
    assert not (tmp_path / "out" / "summary.json").exists()


def test_a_matrix_whose_legs_leave_out_an_affected_unit_is_refused(
    repo: Path, tmp_path: Path
) -> None:
    _wide_change(repo)
    split = {
        "include": [
            {**HOSTED, "units": ["live/cloud/dns"], "leg": "hosted-1-of-2"},
            {**HOSTED, "units": ["live/cloud/iam"], "leg": "hosted-2-of-2"},
        ]
    }
    ran = _plan_leg(repo, tmp_path / "out", split, "hosted-1-of-2")
    _one_line(
        ran,
        1,
        "leg hosted-1-of-2: the matrix's hosted legs leave out live/cloud/registry, "
        "which this change affects",
    )
    unsplit = {"include": [{**HOSTED, "units": ["live/cloud/dns", "live/cloud/iam"]}]}
    ran = _plan_leg(repo, tmp_path / "out", unsplit, "hosted")
    _one_line(ran, 1, "leg hosted: the matrix's hosted legs leave out live/cloud/registry")
    assert not (tmp_path / "out" / "summary.json").exists()


def test_a_leg_without_units_is_refused(repo: Path, tmp_path: Path) -> None:
    _wide_change(repo)
    ran = _plan_leg(repo, tmp_path / "out", {"include": [{**HOSTED, "units": []}]}, "hosted")
    _one_line(ran, 1, "--leg hosted: the matrix gives the leg no units")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("matrix", "message"),
    [
        (
            '{"include": [{"executor": "hosted", "units": "live/cloud/dns"}]}',
            "at include/0/units: expected array",
        ),
        ('{"include": [{"executor": 7, "units": []}]}', "at include/0/executor: expected string"),
        ('{"include": ' + json.dumps([HOSTED] * 257) + "}", "at include: more than 256 entries"),
        ('{"include": [1e999]}', "at include/0: expected object, found number"),
    ],
    ids=["units", "executor", "entries", "entry"],
)
def test_a_matrix_of_the_wrong_shape_is_refused_in_one_line(
    repo: Path, tmp_path: Path, matrix: str, message: str
) -> None:
    ran = _plan_leg(repo, tmp_path / "o", matrix, "hosted")
    _one_line(ran, 1, f"--from-matrix: a matrix refused: {message}")


def test_a_matrix_file_that_is_a_device_is_refused_and_a_missing_one_is_a_usage_error(
    repo: Path, tmp_path: Path
) -> None:
    ran = _plan_leg(repo, tmp_path / "o", "/dev/zero", "hosted")
    _one_line(ran, 1, "--from-matrix /dev/zero: refused, a device")
    ran = _plan_leg(repo, tmp_path / "o", "no such file", "hosted")
    _one_line(ran, 2, "--from-matrix no such file: not JSON and not a readable file")


# --------------------------------------------------------------------------- pure


def _change(*units: tuple[str, str]) -> Affected:
    return Affected(
        "b" * 40,
        "a" * 40,
        tuple(AffectedUnit(p, "modified", ("x",), "cloud", e) for p, e in units),
    )


def test_a_leg_given_alone_cannot_tell_what_its_executor_covers_and_plans_its_own_units() -> None:
    """The workflow passes each leg its own matrix entry: the other legs are not there to
    check coverage with, so only the leg's own units are checked."""
    entry = {**HOSTED, "units": ["live/cloud/dns"], "leg": "hosted-2-of-3"}
    leg = legs.leg_of({"include": [entry]}, "hosted-2-of-3")
    assert (leg.executor, leg.index, leg.count, leg.together) == ("hosted", 2, 3, None)
    change = _change(("live/cloud/dns", "hosted"), ("live/cloud/iam", "hosted"))
    assert [u.path for u in legs.select(change, leg).units] == ["live/cloud/dns"]


def test_a_file_belongs_to_the_unit_whose_folder_holds_it() -> None:
    assert legs.unit_of_file("units/live/cloud/dns/plan.txt") == "live/cloud/dns"
    assert legs.unit_of_file("cascade/units/live/cloud/dns/plan.txt") == "live/cloud/dns"
    assert legs.unit_of_file("units/plan.txt") is None
    assert legs.unit_of_file("cascade/plan.txt") is None
    assert legs.files_to_copy(
        "a", {"live/cloud/dns"}, [("units", "dir"), ("units/live/cloud/dns/plan.txt", "file")]
    ) == ["units/live/cloud/dns/plan.txt"]
    with pytest.raises(ToolingError, match="a: units/x is a file of no unit"):
        legs.files_to_copy("a", {"live/cloud/dns"}, [("units/x", "file")])
