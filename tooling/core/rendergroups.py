"""Which folders one ``terragrunt render --all`` runs from. Pure.

``render --all`` renders every unit below the folder it runs in. Run from the folder
holding all the units to verify, it renders the units of that folder that nobody
asked for too: on a tree of 11,000 units, two affected units in two tiers made it
render all of them. :func:`render_groups` keeps one render when the common folder
holds few other units, and otherwise renders from each unit's parent folder.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence

#: a render from the common folder may render this many units besides those asked for
SLACK = 16


def render_groups(
    dirs: Sequence[str], units_below: Callable[[str], int], *, slack: int = SLACK
) -> dict[str, list[str]]:
    """The folders to render from (POSIX paths), each with the unit folders of ``dirs``
    it covers. One group, from the folders' common path, while the units below it
    (``units_below``) are at most ``len(dirs) + slack``; else one group per parent
    folder, so a render covers only the asked units' own folders."""
    if not dirs:
        return {}
    common = posixpath.commonpath(list(dirs))
    if units_below(common) <= len(dirs) + slack:
        return {common: list(dirs)}
    groups: dict[str, list[str]] = {}
    for d in dirs:
        groups.setdefault(posixpath.dirname(d) or d, []).append(d)
    return groups
