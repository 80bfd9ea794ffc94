""" "Did you mean": the closest known names to a mistyped one (difflib). Pure."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(word: str, known: Iterable[str], *, limit: int = 3) -> list[str]:
    """The known names closest to ``word``, best first (none when nothing is close).

    A unit path is also matched on its last folder (``vm`` finds ``live/cluster/vms``) and
    on its end (``cloud/dns`` finds ``live/cloud/dns``).
    """
    names = sorted(set(known))
    # paths share long prefixes (live/cloud/...): only a near miss of the whole path counts
    cutoff = 0.85 if "/" in word else 0.6
    found = difflib.get_close_matches(word, names, n=limit, cutoff=cutoff)
    # a path given without its live folder (cloud/dns for live/cloud/dns)
    found += [n for n in names if n.endswith("/" + word.strip("/")) and n not in found]
    if len(found) < limit and "/" not in word:
        by_leaf: dict[str, list[str]] = {}
        for name in names:
            by_leaf.setdefault(name.rstrip("/").rsplit("/", 1)[-1], []).append(name)
        for leaf in difflib.get_close_matches(word, list(by_leaf), n=limit, cutoff=0.6):
            found += [n for n in by_leaf[leaf] if n not in found]
    return found[:limit]


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """`` Did you mean A or B?`` (with its leading space), or "" when nothing is close."""
    found = closest(word, known)
    if not found:
        return ""
    return f" Did you mean {' or '.join(found)}?"
