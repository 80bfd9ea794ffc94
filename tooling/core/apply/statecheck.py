"""After an apply that did not finish cleanly: what OpenTofu said it did, against what its
state records, and the state it could not save. Pure: built from OpenTofu's output,
the state's addresses and file names; reading them is :mod:`tooling.engine.apply.safety`'s.

- **Unrecorded objects.** OpenTofu killed hard (``kill -9``, a runner torn
  down) after "Creation complete" but before it saved the state: the objects
  exist, the state does not list them, and the next plan would create them
  again. The record names each one, with its ID and the import command of
  docs/runbooks.md ("OpenTofu was killed").
- **Errored state.** A backend that fails while OpenTofu saves the state
  (S3 unreachable mid-apply) makes OpenTofu write it to ``errored.tfstate`` in
  its working directory: the only copy of what it applied. The tooling copies
  it into the plan folder (the artifact) and the record says how to push it back
  (docs/runbooks.md, "The state could not be saved").
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

#: the file OpenTofu writes its state to when the backend refuses it
ERRORED_STATE = "errored.tfstate"
RUNBOOK_KILLED = 'docs/runbooks.md, "OpenTofu was killed"'
RUNBOOK_ERRORED = 'docs/runbooks.md, "The state could not be saved"'

_DONE = re.compile(
    r"^[\s│]*(?P<addr>[^\s:│][^\n]*?): (?P<what>Creation|Destruction) complete after "
    r"[^\[\n]*(?:\[id=(?P<id>[^\]\n]*)\])?",
    re.M,
)


@dataclass(frozen=True)
class Done:
    """An object OpenTofu reported done: ``created`` (with its ID) or destroyed."""

    address: str
    created: bool
    id: str = ""


def reported_done(output: str) -> list[Done]:
    """The objects OpenTofu's apply output reports created ("Creation complete … [id=…]")
    or destroyed ("Destruction complete"), the last report per address winning (a
    replacement destroys, then creates)."""
    last: dict[str, Done] = {}
    for match in _DONE.finditer(output):
        address = match.group("addr")
        if address.startswith("data."):
            continue
        last.pop(address, None)
        last[address] = Done(address, match.group("what") == "Creation", match.group("id") or "")
    return list(last.values())


def unrecorded(done: Iterable[Done], in_state: Iterable[str]) -> list[Done]:
    """Objects reported created but absent from the state, or reported destroyed and still
    in it: what OpenTofu did that its state does not record."""
    state = set(in_state)
    return [d for d in done if (d.address in state) != d.created]


def import_command(unit_path: str, done: Done) -> str:
    """The runbook's command that records a created object in the unit's state."""
    return f"cd {unit_path} && terragrunt import {shlex.quote(done.address)} {shlex.quote(done.id)}"


def unrecorded_reason(unit_path: str, missing: Sequence[Done]) -> str:
    """The record's words for objects OpenTofu made or removed that its state does not
    record (empty when there are none)."""
    if not missing:
        return ""
    created = [d for d in missing if d.created]
    destroyed = [d for d in missing if not d.created]
    parts = []
    if created:
        parts.append(
            f"{len(created)} object(s) OpenTofu reported created are not in the state "
            "(the next plan would create them again): "
            + "; ".join(
                f"{d.address} [id={d.id}]: {import_command(unit_path, d)}" if d.id else d.address
                for d in created
            )
        )
    if destroyed:
        parts.append(
            f"{len(destroyed)} object(s) OpenTofu reported destroyed are still in the state: "
            + ", ".join(d.address for d in destroyed)
        )
    return "; ".join(parts) + f" ({RUNBOOK_KILLED})"


def state_push_command(unit_path: str, copy: str) -> str:
    """The runbook's command that pushes a rescued ``errored.tfstate`` back to the
    unit's backend (``copy``: an absolute path: Terragrunt runs OpenTofu elsewhere)."""
    return f"cd {unit_path} && terragrunt state push {shlex.quote(copy)}"


def errored_state_reason(unit_path: str, copy: str | None, kept: str, output: str) -> str:
    """The record's words for a state OpenTofu could not save (``kept``: where OpenTofu
    wrote it; ``copy``: its copy in the plan folder, None when it could not be copied;
    ``output``: OpenTofu's, for the cause and whether the lock is still held)."""
    where = f"copied to {copy}" if copy else "NOT copied into the plan folder"
    lock = (
        'release the lock OpenTofu could not release (docs/runbooks.md, "A lock is stuck"), then '
        if "Error releasing the state lock" in output
        else ""
    )
    cause = first_error(output)
    return (
        f"OpenTofu could not save the state to the backend and wrote it to {kept} ({where}). "
        "Do not re-plan or re-apply before it is pushed back: once the backend answers, "
        + lock
        + "run "
        + state_push_command(unit_path, copy or kept)
        + f" ({RUNBOOK_ERRORED})."
        + (f" OpenTofu: {cause}" if cause else "")
    )


def first_error(output: str) -> str:
    """OpenTofu's first error, whole: its title and the paragraph after it, on one line."""
    lines = [line.strip("│╷╵ ").strip() for line in output.splitlines()]
    for i, line in enumerate(lines):
        if not line.startswith("Error: "):
            continue
        words = [line[len("Error: ") :]]
        j = i + 1
        while j < len(lines) and not lines[j]:
            j += 1
        while j < len(lines) and lines[j] and not lines[j].startswith("Error: "):
            words.append(lines[j])
            j += 1
        return " ".join(words[:1]) + (": " + " ".join(words[1:]) if len(words) > 1 else "")
    return ""
