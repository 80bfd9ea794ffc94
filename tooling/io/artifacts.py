"""Every JSON document the tooling reads back, read as untrusted input.

A leg's summary.json, a matrix, an earlier run's timings, an apply record, an
audit record, a page of GitHub's API: each may come from anywhere (an
artifact another job uploaded, a bucket others can write, a server), so each
is read through one :class:`Kind`, in this order, before anything is built
from its content:

1. not a regular file (a folder, a FIFO, ``/dev/zero``, a symlink): refused
   without opening it for reading;
2. more bytes than the kind's limit: refused, having read at most the limit
   plus one byte;
3. not UTF-8 JSON, nested deeper than Python parses, ``NaN`` or
   ``Infinity``: refused;
4. the kind's JSON schema (``tooling/schemas/``), checked lazily so the first
   violation stops the check (an array's ``maxItems`` is met before its items
   are walked): refused, naming where in the document and what was expected.

Every refusal is one :class:`~tooling.errors.ToolingError` line naming the
source and what to do; no input ends in a traceback. The limits are sized so
that the largest document that passes them parses within a few hundred MB
(the property tests run every reader under a 512 MB address-space limit).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tooling.errors import ToolingError

if TYPE_CHECKING:  # jsonschema is imported on the first read: a task that reads none starts fast
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

MiB = 1024 * 1024


@dataclass(frozen=True)
class Kind:
    """One kind of document read back: its schema, its size limit, and what to do
    when a file of it is refused."""

    #: ``tooling/schemas/<schema>.schema.json``
    schema: str
    #: the most bytes a document of this kind may hold
    limit: int
    #: what the document is, in a message ("a leg's summary.json")
    what: str
    #: what to do when it is refused
    fix: str


#: a leg's plan folder, read by ``invoke report --merge``
LEG_SUMMARY = Kind(
    "summary",
    8 * MiB,
    "a leg's summary.json",
    "pass the folders the legs' `invoke plan --leg` wrote, as they wrote them",
)
#: any plan folder's summary.json read back (``--timings``, ``invoke apply``)
SUMMARY = Kind(
    "summary",
    8 * MiB,
    "a summary.json",
    "pass the summary.json of a plan folder `invoke plan --out` wrote",
)
#: ``invoke plan --from-matrix``
MATRIX = Kind(
    "matrix",
    4 * MiB,
    "a matrix",
    "pass `invoke matrix`'s output, or the workflow's matrix entry, as written",
)
#: ``apply.json`` of a plan folder
APPLY_RECORD = Kind(
    "apply",
    8 * MiB,
    "an apply record (apply.json)",
    "it is the record of earlier applies from this folder: restore it (e.g. from the "
    "workflow's artifact) rather than delete it",
)
#: one record of the audit trail
AUDIT_RECORD = Kind(
    "audit",
    1 * MiB,
    "an audit record",
    "the record is damaged: keep it for the investigation, and compare with the apply's run log",
)
#: one page of a list endpoint of GitHub's API
API_PAGE = Kind(
    "apipage",
    8 * MiB,
    "a page of GitHub's API",
    "check GITHUB_API_URL points at GitHub's API (or your GitHub Enterprise server's)",
)


def read(path: Path, kind: Kind, *, source: str | None = None) -> Any:
    """The document in ``path``, checked (see the module's docstring), or one-line
    :class:`ToolingError`. ``source`` names the file in the message (default: path)."""
    name = source or str(path)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise ToolingError(f"{name}: not found: {kind.fix}") from None
    except OSError as exc:
        raise ToolingError(f"{name}: cannot be read ({exc.strerror}): {kind.fix}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ToolingError(
            f"{name}: refused, {_file_type(info.st_mode)} is not {kind.what} (a regular file): "
            f"{kind.fix}"
        )
    if info.st_size > kind.limit:
        raise ToolingError(_too_large(name, kind))
    try:
        # O_NOFOLLOW and O_NONBLOCK: a file swapped for a symlink or a FIFO after the
        # lstat above is refused, or read without waiting for a writer
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise ToolingError(f"{name}: cannot be read ({exc.strerror}): {kind.fix}") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise ToolingError(f"{name}: refused, not a regular file: {kind.fix}")
        data = fh.read(kind.limit + 1)
    return parse(data, kind, source=name)


def parse(data: bytes | str, kind: Kind, *, source: str) -> Any:
    """``data`` (a file's or a response's bytes, or text given on the command line)
    decoded and checked against ``kind``; one-line :class:`ToolingError` otherwise."""
    if len(data) > kind.limit:
        raise ToolingError(_too_large(source, kind))
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError as exc:
        raise ToolingError(
            f"{source}: {kind.what} refused: not UTF-8 (byte {exc.start}): {kind.fix}"
        ) from None
    try:
        doc = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise ToolingError(
            f"{source}: {kind.what} refused: nested deeper than any such document: {kind.fix}"
        ) from None
    except ValueError as exc:  # JSONDecodeError, NaN/Infinity, an integer of 4,300+ digits
        raise ToolingError(
            f"{source}: {kind.what} refused: not JSON ({_short(str(exc))}): {kind.fix}"
        ) from None
    error = _first_error(kind.schema, doc)
    if error is not None:
        raise ToolingError(f"{source}: {kind.what} refused: {error}: {kind.fix}")
    return doc


@cache
def validator(schema: str) -> Draft202012Validator:
    """The validator of ``tooling/schemas/<schema>.schema.json`` (read once)."""
    from jsonschema import Draft202012Validator

    text = (
        resources.files("tooling")
        .joinpath("schemas", f"{schema}.schema.json")
        .read_text(encoding="utf-8")
    )
    return Draft202012Validator(json.loads(text))


def _first_error(schema: str, doc: Any) -> str | None:
    try:
        errors: Iterator[ValidationError] = validator(schema).iter_errors(doc)
        first = next(errors, None)
    except RecursionError:
        return "nested deeper than any such document"
    if first is None:
        return None
    # an ``anyOf`` (a matrix or one entry of it) fails as a whole: name the branch
    # that came closest (jsonschema's own relevance order)
    while first.validator in ("anyOf", "oneOf") and first.context:
        from jsonschema.exceptions import best_match

        first = best_match(first.context) or first
    where = "/".join(str(p) for p in first.absolute_path) or "the top level"
    return f"at {_short(where)}: {_expected(first)}"


def _expected(error: ValidationError) -> str:
    """What the schema wanted, without echoing the (possibly huge) value found."""
    keyword, found = str(error.validator), error.instance
    want: Any = error.validator_value
    if keyword == "type":
        return f"expected {' or '.join(want) if isinstance(want, list) else want}, found {_json_type(found)}"
    if keyword == "required":
        missing = [k for k in want if isinstance(found, dict) and k not in found]
        return "a required field is missing: " + _short(", ".join(missing))
    if keyword == "enum":
        return "not one of " + _short(", ".join(json.dumps(v) for v in want))
    if keyword == "const":
        return f"expected {_short(json.dumps(want))}"
    if keyword == "pattern":
        return f"not of the form {_short(str(want))}"
    bounds = {
        "maxItems": "more than {} entries",
        "minItems": "fewer than {} entries",
        "maxLength": "longer than {} characters",
        "minLength": "shorter than {} characters",
        "maxProperties": "more than {} fields",
        "maximum": "more than {}",
        "minimum": "less than {}",
    }
    if keyword in bounds:
        return bounds[keyword].format(want)
    if keyword == "additionalProperties":
        return "a field the format does not have"
    return f"breaks the schema's {keyword} ({_json_type(found)})"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _too_large(name: str, kind: Kind) -> str:
    return (
        f"{name}: refused, larger than {kind.limit // MiB} MiB, the most {kind.what} holds: "
        f"{kind.fix}"
    )


def _file_type(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def _short(text: str, width: int = 120) -> str:
    """One line of at most ``width`` characters, control characters escaped."""
    line = "".join(c if c.isprintable() else repr(c)[1:-1] for c in " ".join(text.splitlines()))
    return line if len(line) <= width else line[: width - 1] + "…"
