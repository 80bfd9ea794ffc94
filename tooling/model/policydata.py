"""policy.toml as parsed, read-only, with what each of its readers made of it kept on it. Pure.

:func:`tooling.io.config.read_policy` hands out one :class:`PolicyData` per text
(and, while a task runs, per repository), never a copy. Its tables and lists refuse
to change (:class:`TypeError`), so no reader can alter what another reads, and an
interpreter of a table decorated with :func:`interpreted` runs once per
:class:`PolicyData`: the policy check, the layout, the planner and the verifier
all ask for ``[layout]``, ``[check]``, ``[gates]``... and get the first answer.

A failure is never kept: an interpreter that raises raises again, with the same
message (``policy.toml:LINE: ...``), on the next call. A plain mapping (a test's
dict) is interpreted on every call, as before.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, Concatenate, NoReturn, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


def _refuse(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise TypeError(
        "policy.toml as parsed is read-only (every reader shares it): copy it to change it"
    )


def thaw(value: Any) -> Any:
    """A plain, changeable copy of ``value`` (dicts and lists all the way down)."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list):
        return [thaw(v) for v in value]
    return value


class FrozenTable(dict[str, Any]):
    """A TOML table that refuses to change."""

    __slots__ = ()
    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _refuse
    __ior__ = _refuse

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        thawed: dict[str, Any] = thaw(self)
        return thawed

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (thaw(self),))


class FrozenList(list[Any]):
    """A TOML array that refuses to change."""

    __slots__ = ()
    __setitem__ = __delitem__ = append = extend = insert = pop = remove = _refuse
    clear = sort = reverse = __iadd__ = __imul__ = _refuse

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        thawed: list[Any] = thaw(self)
        return thawed

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (thaw(self),))


class PolicyData(FrozenTable):
    """policy.toml's top level, parsed and read-only, with its interpretations kept."""

    __slots__ = ("kept",)

    def __init__(self, parsed: Mapping[str, Any]) -> None:
        super().__init__({k: _freeze(v) for k, v in parsed.items()})
        #: what :func:`interpreted` functions returned for it, by function
        self.kept: dict[str, Any] = {}


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return FrozenTable({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return FrozenList(_freeze(v) for v in value)
    return value


def interpreted(
    fn: Callable[Concatenate[Mapping[str, Any], P], T],
) -> Callable[Concatenate[Mapping[str, Any], P], T]:
    """``fn`` (one table's interpreter) run once per :class:`PolicyData`; its answer kept.

    ``fn``'s other arguments may only change what its errors say (the file they
    name), never its answer. The body is looked up as the wrapper's ``__wrapped__``
    at each call, so a test can count how often it really runs. The answer is
    shared by every caller: interpreters return immutable values, or values their
    callers only read.
    """

    key = f"{fn.__module__}.{fn.__qualname__}"

    @functools.wraps(fn)
    def once(policy: Mapping[str, Any], /, *args: P.args, **kwargs: P.kwargs) -> T:
        body: Callable[Concatenate[Mapping[str, Any], P], T] = once.__wrapped__
        if not isinstance(policy, PolicyData):
            return body(policy, *args, **kwargs)
        if key not in policy.kept:
            policy.kept[key] = body(policy, *args, **kwargs)
        kept: T = policy.kept[key]
        return kept

    return once
