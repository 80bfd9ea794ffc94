"""Which folders the verifier's ``render --all`` runs from (core/rendergroups.py)."""

from __future__ import annotations

import pytest

from tooling.core.rendergroups import render_groups

#: units below each folder of a generated tree of 11,024 units (tiers of 100)
BIG = {"/r/live": 11024, "/r/live/t1": 100, "/r/live/t2": 100}
#: the example tree: 7 units in two tiers
SMALL = {"/r/live": 7, "/r/live/cloud": 3, "/r/live/cluster": 4}


@pytest.mark.parametrize(
    ("sizes", "dirs", "expected"),
    [
        (BIG, [], {}),
        # a small tree: one render from the common folder, whatever the tiers
        (
            SMALL,
            ["/r/live/cloud/dns", "/r/live/cluster/vms"],
            {"/r/live": ["/r/live/cloud/dns", "/r/live/cluster/vms"]},
        ),
        # two tiers of a big tree: each tier's folder, never the 11,024 units of live/
        (
            BIG,
            ["/r/live/t1/a", "/r/live/t1/b", "/r/live/t2/c"],
            {"/r/live/t1": ["/r/live/t1/a", "/r/live/t1/b"], "/r/live/t2": ["/r/live/t2/c"]},
        ),
        # units of one tier of a big tree: one render from that tier
        (BIG, ["/r/live/t1/a", "/r/live/t1/b"], {"/r/live/t1": ["/r/live/t1/a", "/r/live/t1/b"]}),
        # one unit: its own folder
        (BIG, ["/r/live/t1/a"], {"/r/live/t1/a": ["/r/live/t1/a"]}),
    ],
    ids=["none", "small-tree", "two-tiers-of-a-big-tree", "one-tier-of-a-big-tree", "one-unit"],
)
def test_a_render_covers_few_units_besides_those_asked_for(
    sizes: dict[str, int], dirs: list[str], expected: dict[str, list[str]]
) -> None:
    assert render_groups(dirs, lambda folder: sizes.get(folder, 1)) == expected
