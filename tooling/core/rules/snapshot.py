"""What every rule reads and returns. Pure.

:class:`Violation` (one broken rule at ``file:line``, with its fix),
:class:`Snapshot` (the repository's files as the rules see them, HCL parsed
once), :class:`AppWorkspace` (an application's backend files), and the small
helpers the rules share to find a line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tooling.errors import ToolingError
from tooling.model import hcl
from tooling.model.exprs import locals_exprs
from tooling.model.units import UNIT_FILE, Unit


@dataclass(frozen=True, order=True)
class Violation:
    """One broken rule at one place: ``file:line: rule: message. Fix: fix``."""

    file: str
    line: int
    rule: str
    message: str
    fix: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.rule}: {self.message.rstrip('.')}. Fix: {self.fix}"

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "rule": self.rule,
            "message": self.message,
            "fix": self.fix,
        }


@dataclass
class Snapshot:
    """The repository's files as the rules see them: paths, which are executable, contents.

    ``paths`` are repository-relative (caches such as ``.terragrunt-cache`` are
    left out by whoever builds it); contents are read on demand through
    ``reader`` and kept, and HCL bodies are parsed once.
    """

    paths: tuple[str, ...]
    reader: Callable[[str], str]
    executable: frozenset[str] = frozenset()
    _texts: dict[str, str] = field(default_factory=dict, repr=False)
    _bodies: dict[str, hcl.Body] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, files: Mapping[str, str], executable: Iterable[str] = ()) -> Snapshot:
        """A snapshot of an in-memory tree (tests)."""
        return cls(tuple(sorted(files)), files.__getitem__, frozenset(executable))

    def text(self, path: str) -> str:
        if path not in self._texts:
            self._texts[path] = self.reader(path)
        return self._texts[path]

    def body(self, path: str) -> hcl.Body:
        """The parsed HCL of ``path``; raises :class:`tooling.model.hcl.HclSyntaxError` naming file:line."""
        if path not in self._bodies:
            # surrogateescape: a text read with it gives its very bytes back to the parser,
            # which refuses those that are not UTF-8 (file:line)
            self._bodies[path] = hcl.parse(self.text(path).encode("utf-8", "surrogateescape"), path)
        return self._bodies[path]

    def under(self, folder: str) -> list[str]:
        prefix = folder.rstrip("/") + "/"
        return [p for p in self.paths if p.startswith(prefix)]


@dataclass(frozen=True)
class AppWorkspace:
    """A per-application workspace: its name and its backend configuration files.

    ``files`` maps a display path (repository-relative when inside the
    repository) to the file's text: ``backend.hcl``, ``*.tfbackend`` (partial
    backend configurations) and ``*.tf`` files that may hold a ``backend`` block.
    """

    name: str
    folder: str
    files: Mapping[str, str]


def unit_file(unit: Unit) -> str:
    return f"{unit.path}/{UNIT_FILE}"


def fact_site(unit: Unit, key: str, snap: Snapshot) -> tuple[str, int, Any]:
    """Where the unit's fact ``key`` (a ``locals`` entry: tier, executor, gate,
    plan_on_pr) is written: (file, line, expression), the unit file first, then the
    files it includes, deepest first; (the unit file, 1, None) when none sets it."""
    own = unit_file(unit)
    included = sorted(
        (r for r in unit.reads if r.endswith(".hcl") and r != own and r in snap.paths),
        key=lambda p: -p.count("/"),
    )
    for path in (own, *included):
        if path not in snap.paths:
            continue
        try:
            entry = locals_exprs(snap.body(path)).get(key)
        except hcl.HclSyntaxError:
            continue
        if entry is not None:
            return path, int(entry[1]), entry[0]
    return own, 1, None


def line_of_text(text: str, needle: str) -> int:
    offset = text.find(needle)
    return text.count("\n", 0, offset) + 1 if offset >= 0 else 1


_SYNTAX_RE = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?:\d+:)? (?P<msg>.*)", re.S)


def syntax_violation(error: ToolingError, where: str = "live") -> Violation:
    """A configuration that cannot be read (HCL that does not parse, an include that
    points nowhere...) as a violation at its file:line (``where`` when it names none)."""
    text = str(error)
    syntax = isinstance(error, hcl.HclSyntaxError) and not isinstance(error, hcl.HclTooDeepError)
    rule = "hcl-syntax" if syntax else "config-invalid"
    fix = (
        "fix the syntax (`terragrunt hcl fmt --check` shows the same error)"
        if syntax
        else "flatten the expression: fewer nested lists, objects or calls"
        if isinstance(error, hcl.HclTooDeepError)
        else "fix the configuration the message names"
    )
    match = _SYNTAX_RE.match(text)
    if match is None or " " in match.group("file"):
        return Violation(where, 1, rule, text.rstrip("."), fix)
    message = match.group("msg").split(". Fix the file", 1)[0]
    return Violation(match.group("file"), int(match.group("line")), rule, message, fix)


def safe_body(snap: Snapshot, path: str, out: list[Violation]) -> hcl.Body | None:
    try:
        return snap.body(path)
    except hcl.HclSyntaxError as exc:
        out.append(syntax_violation(exc))
        return None
