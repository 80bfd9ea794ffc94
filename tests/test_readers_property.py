"""Every reader of a document read back ends in success or one line, within 512 MB.

Property-based (hypothesis): each kind of :mod:`tooling.io.artifacts` is fed
any bytes, any JSON value, and valid documents with one field replaced by any
JSON value. Each run ends in the document or one :class:`ToolingError` line,
never another exception, under an address-space limit of 512 MB above what
the test process already holds. The largest documents the limits let through,
shaped to cost the most memory per byte, are read under the same limit.
"""

from __future__ import annotations

import json
import os
import resource
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schema_check import apply_doc, apply_unit, summary_doc, summary_unit

from tooling.core.apply import audit
from tooling.core.plan.summary import Summary
from tooling.errors import ToolingError
from tooling.io import artifacts

LIMIT = 512 * 1024 * 1024

KINDS = {name: kind for name, kind in vars(artifacts).items() if isinstance(kind, artifacts.Kind)}

#: one valid document per schema, as the tooling writes it
VALID: dict[str, Any] = {
    "summary": summary_doc(
        [summary_unit("live/cloud/dns", seconds=1.5)],
        leg={"id": "hosted-1-of-2", "index": 1, "count": 2, "units": ["live/cloud/dns"]},
    ),
    "matrix": {
        "include": [
            {"executor": "hosted", "runs_on": ["ubuntu-latest"], "units": ["live/cloud/dns"]}
        ]
    },
    "apply": apply_doc([apply_unit("live/cloud/dns", "applied")]),
    "apipage": {"total_count": 1, "runners": [{"id": 1, "name": "lan-1", "status": "online"}]},
    "audit": audit.started(
        Summary.from_json(
            summary_doc([summary_unit("live/cloud/dns", plan_sha256="0" * 64)], head="a" * 40)
        ),
        apply_id="0123abcd",
        head="a" * 40,
        approve_manual=True,
        at=datetime(2026, 12, 6, tzinfo=UTC),
        env={"GITHUB_RUN_ID": "42", "GITHUB_ACTOR": "octocat"},
        previous=audit.link("audit/2026/12/05/x.json", b"{}"),
    ),
}


def _vm_size() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmSize in /proc/self/status")


@pytest.fixture
def memory_limit() -> Iterator[None]:
    """At most 512 MB more address space than the process holds now, for the test."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (_vm_size() + LIMIT, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _ends_well(read: Callable[[], Any]) -> None:
    """``read`` returns, or raises one ToolingError line: anything else fails the test."""
    try:
        read()
    except ToolingError as exc:
        message = str(exc)
        assert message and "\n" not in message, message
        assert "Traceback" not in message


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=12), inner, max_size=6)
    ),
    max_leaves=40,
)


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from _paths(value, (*prefix, i))


def _replaced(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    copy = json.loads(json.dumps(doc))
    node = copy
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return copy


@pytest.mark.parametrize("name", sorted(KINDS))
@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.binary(max_size=2048))
def test_any_bytes_end_in_a_document_or_one_line(
    name: str, data: bytes, memory_limit: None
) -> None:
    _ends_well(lambda: artifacts.parse(data, KINDS[name], source="input"))


@pytest.mark.parametrize("name", sorted(KINDS))
@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=json_values)
def test_any_json_value_ends_in_a_document_or_one_line(
    name: str, value: Any, memory_limit: None
) -> None:
    _ends_well(lambda: artifacts.parse(json.dumps(value), KINDS[name], source="input"))


@pytest.mark.parametrize("name", sorted(KINDS))
@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data(), value=json_values)
def test_a_valid_document_with_any_field_replaced_ends_in_a_document_or_one_line(
    name: str, data: st.DataObject, value: Any, memory_limit: None
) -> None:
    kind = KINDS[name]
    valid = VALID.get(kind.schema)
    if valid is None:
        pytest.skip(f"no valid {kind.schema} document here")
    artifacts.parse(json.dumps(valid), kind, source="valid")  # the base case holds
    path = data.draw(st.sampled_from(list(_paths(valid))))
    doc = _replaced(valid, path, value)
    _ends_well(lambda: artifacts.parse(json.dumps(doc), kind, source="input"))


def test_every_kind_has_a_schema_a_limit_and_a_valid_example() -> None:
    for name, kind in KINDS.items():
        assert artifacts.validator(kind.schema) is not None, name
        assert 0 < kind.limit <= 16 * artifacts.MiB, name
        assert kind.what and kind.fix, name
    assert {k.schema for k in KINDS.values()} == set(VALID)


def _costliest(limit: int, unit: bytes, head: bytes = b"[", tail: bytes = b"[]]") -> bytes:
    """A JSON array filling ``limit`` bytes with ``unit`` items: the most objects per byte."""
    count = (limit - len(head) - len(tail)) // len(unit)
    return head + unit * count + tail


#: one kind per schema and limit (a leg's summary.json and any summary.json read alike)
DISTINCT = sorted({(k.schema, k.limit): n for n, k in sorted(KINDS.items())}.values())


@pytest.mark.parametrize("name", DISTINCT)
@pytest.mark.parametrize(
    "shape",
    # the shapes that cost the most memory per byte: an empty object or array (56 to 64
    # bytes each), a float (24 bytes, never shared); small ints and one-character
    # strings are shared objects, cheaper than these
    [b"{},", b"[],", b"1e308,"],
    ids=["objects", "arrays", "floats"],
)
def test_the_largest_document_a_limit_lets_through_is_read_within_512_mb(
    name: str, shape: bytes, tmp_path: Path, memory_limit: None
) -> None:
    kind = KINDS[name]
    path = tmp_path / "doc.json"
    path.write_bytes(_costliest(kind.limit, shape))
    assert path.stat().st_size <= kind.limit
    _ends_well(lambda: artifacts.read(path, kind))
    # the same inside an object, where a schema walks into it
    path.write_bytes(_costliest(kind.limit, shape, head=b'{"include": [', tail=b"[]]}"))
    _ends_well(lambda: artifacts.read(path, kind))


@pytest.mark.parametrize("name", sorted(KINDS))
def test_a_file_over_its_limit_is_refused_having_read_at_most_the_limit(
    name: str, tmp_path: Path, memory_limit: None
) -> None:
    kind = KINDS[name]
    path = tmp_path / "big.json"
    with path.open("wb") as fh:
        fh.truncate(kind.limit * 4)  # sparse: no disk, 4x the limit
    with pytest.raises(ToolingError, match=f"larger than {kind.limit // artifacts.MiB} MiB"):
        artifacts.read(path, kind)


@pytest.mark.parametrize(
    "make",
    ["folder", "fifo", "device", "symlink", "dangling"],
)
def test_anything_but_a_regular_file_is_refused_in_one_line(make: str, tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    if make == "folder":
        path.mkdir()
    elif make == "fifo":
        os.mkfifo(path)  # a read would wait for a writer forever
    elif make == "device":
        path.symlink_to("/dev/zero")
        path = Path("/dev/zero")
    elif make == "symlink":
        (tmp_path / "real.json").write_text(json.dumps(VALID["summary"]))
        path.symlink_to(tmp_path / "real.json")
    else:
        path.symlink_to(tmp_path / "missing.json")
    with pytest.raises(ToolingError, match=r"refused|not found") as refused:
        artifacts.read(path, artifacts.SUMMARY)
    assert "\n" not in str(refused.value)


def test_a_deep_nesting_and_a_huge_number_are_refused_in_one_line() -> None:
    for data in (b"[" * 200_000, b'{"a":' * 100_000, b"1" * 5000, b"[NaN]", b"[-Infinity]"):
        with pytest.raises(ToolingError) as refused:
            artifacts.parse(data, artifacts.SUMMARY, source="input")
        assert "\n" not in str(refused.value)


# ------------------------------------------------- what is built from a document that passed
#
# A document its schema accepts may still be odd (any string where a name stands, a
# unit listed twice, fields absent that a writer always writes). What each reader's
# user builds from it ends in a result or one line too.


def _mutated(doc: Any, data: st.DataObject) -> Any:
    """``doc`` with one change drawn by ``data``: a string leaf any text, a key dropped,
    a list item given twice, or a leaf any JSON value."""
    paths = [p for p in _paths(doc) if p]
    if not paths:  # everything dropped already: nothing left to change
        return doc
    path = data.draw(st.sampled_from(paths))
    node = doc
    for key in path[:-1]:
        node = node[key]
    leaf = node[path[-1]]
    how = data.draw(st.sampled_from(["text", "drop", "twice", "any"]))
    copy = json.loads(json.dumps(doc))
    parent = copy
    for key in path[:-1]:
        parent = parent[key]
    if how == "text" and isinstance(leaf, str):
        parent[path[-1]] = data.draw(st.text(max_size=30))
    elif how == "drop" and isinstance(parent, dict):
        del parent[path[-1]]
    elif how == "twice" and isinstance(leaf, list) and leaf:
        leaf_copy = parent[path[-1]]
        leaf_copy.append(leaf_copy[0])
    else:
        parent[path[-1]] = data.draw(json_values)
    return copy


def _valid(name: str) -> st.SearchStrategy[Any]:
    """Documents the ``name`` schema accepts, grown from :data:`VALID` by up to three
    changes that keep them valid: odd names, absent optional fields, units twice."""

    @st.composite
    def grown(draw: st.DrawFn) -> Any:
        doc = VALID[name]
        data = draw(st.data())
        for _ in range(draw(st.integers(min_value=1, max_value=3))):
            for _attempt in range(8):  # most changes break the schema: try a few
                candidate = _mutated(doc, data)
                if artifacts.validator(name).is_valid(candidate):
                    doc = candidate
                    break
        return doc

    return grown()


def _ends_well_on(build: Callable[[], Any]) -> None:
    try:
        build()
    except ToolingError as exc:
        assert str(exc) and "\n" not in str(exc)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(doc=_valid("summary"))
def test_a_leg_summary_its_schema_accepts_merges_or_is_refused_in_one_line(
    doc: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from tooling.engine.ci import legs

    base = tmp_path_factory.mktemp("leg")
    leg = base / "plan-hosted-1-of-1"
    leg.mkdir()
    (leg / "summary.json").write_text(json.dumps(doc))
    _ends_well_on(lambda: legs.merge(base, [leg], base / "merged"))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(doc=_valid("summary"))
def test_a_summary_its_schema_accepts_gives_planned_units_or_one_line(
    doc: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from tooling.engine.plan import planfolder

    artifacts.parse(json.dumps(doc), artifacts.SUMMARY, source="summary.json")
    path = tmp_path_factory.mktemp("plans") / "summary.json"
    path.write_text(json.dumps(doc))
    _ends_well_on(lambda: planfolder.read_summary(path).units)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(doc=_valid("matrix"), leg=st.text(max_size=20))
def test_a_matrix_its_schema_accepts_gives_a_leg_or_one_line(doc: Any, leg: str) -> None:
    from tooling.core.ci import legs

    names = [str(e.get("leg") or e["executor"]) for e in doc.get("include", [doc])]
    for name in [*names, leg]:
        _ends_well_on(lambda name=name: legs.leg_of(doc, name))  # type: ignore[misc]


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(doc=_valid("apply"))
def test_an_apply_record_its_schema_accepts_settles_every_unit_or_is_refused(
    doc: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from tooling.core.apply.decision import earlier_applied
    from tooling.engine.plan import planfolder

    path = tmp_path_factory.mktemp("plans") / "apply.json"
    path.write_text(json.dumps(doc))
    _ends_well_on(
        lambda: [earlier_applied(unit, "auto") for unit in planfolder.read_record(path).units]
    )


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(docs=st.lists(_valid("audit"), max_size=4))
def test_audit_records_their_schema_accepts_are_listed_and_checked_in_lines(
    docs: list[Any],
) -> None:
    from tooling.core.text import terminal

    entries = [
        audit.Entry(
            f"audit/2026/12/06/2026120{i}T000000.000000Z-x-{i}.json",
            audit.digest(audit.encode(d)),
            d,
        )
        for i, d in enumerate(docs)
    ]
    keys = [e.key for e in entries]
    digests = {e.key: e.sha256 for e in entries}
    for line in [audit.render(d) for d in audit.applies(entries)]:
        assert terminal.escape(line) == line and "\n" not in line and "\t" not in line, line
    for problem in audit.chain_problems(entries, keys, digests):
        assert problem and "\n" not in terminal.escape_line(problem)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(page=_valid("apipage"))
def test_runners_from_a_page_its_schema_accepts_are_listed_in_escaped_lines(page: Any) -> None:
    from tooling.core.ci import runners
    from tooling.model.policy import Executor

    listed = page if isinstance(page, list) else page.get("runners") or []
    if not isinstance(listed, list):
        listed = []
    executors = {
        "lan": Executor("lan", ("self-hosted", "lan")),
        "hosted": Executor("hosted", ("ubuntu-latest",)),
    }
    _ends_well_on(lambda: runners.render(runners.report(executors, listed)))


@pytest.mark.parametrize(
    ("doc", "leg"),
    [
        # an entry named by a line feed that lists no units
        ({"include": [{"executor": "\n", "leg": "\n"}]}, "\n"),
        # a leg id of the form EXECUTOR-N-of-COUNT whose executor holds a line feed
        ({"include": [{"executor": "a\nb", "leg": "a\nb-3-of-2", "units": ["u"]}]}, "a\nb-3-of-2"),
        (
            {"include": [{"executor": "a\nb", "leg": "a\nb-1-of-1x", "units": ["u"]}]},
            "a\nb-1-of-1x",
        ),
    ],
)
def test_a_leg_named_with_a_line_feed_is_refused_on_one_line(doc: Any, leg: str) -> None:
    from tooling.core.ci import legs

    with pytest.raises(ToolingError) as caught:
        legs.leg_of(doc, leg)
    assert "\n" not in str(caught.value), str(caught.value)


def test_a_leg_summary_whose_leg_id_holds_a_line_feed_is_refused_on_one_line(
    tmp_path: Path,
) -> None:
    """The example the property test drew: a leg folder's summary.json (an artifact read
    back) names its leg ``"\\n"`` and no executor."""
    from tooling.engine.ci import legs

    doc = json.loads(json.dumps(VALID["summary"]))
    doc["executor"] = None
    doc["leg"] = {"id": "\n", "index": 1, "count": 2, "units": ["live/cloud/dns"]}
    leg = tmp_path / "plan-hosted-1-of-1"
    leg.mkdir()
    (leg / "summary.json").write_text(json.dumps(doc))
    with pytest.raises(ToolingError) as caught:
        legs.merge(tmp_path, [leg], tmp_path / "merged")
    assert "a leg without an executor" in str(caught.value)
    assert "\n" not in str(caught.value), str(caught.value)
