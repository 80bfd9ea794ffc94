"""Whether a unit's inputs fit in the environment of the processes Terragrunt starts.

Terragrunt passes each of a unit's ``inputs`` to OpenTofu (and to every hook) as an
environment variable ``TF_VAR_<name>=<value>``: a string as it is, anything else as
JSON. Linux refuses to start a process (``E2BIG``, "argument list too long") when one
argument or environment string is longer than ``MAX_ARG_STRLEN`` (32 pages: 128 KiB
with 4 KiB pages), or when the arguments and the environment together (their bytes,
a terminating NUL each, and a pointer each) exceed ``ARG_MAX`` (a quarter of the
stack limit: 2 MiB by default). Terragrunt then fails before OpenTofu runs, in a
hook, with a message that does not say why. :func:`problem` says it first. Pure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

#: what Terragrunt adds to the environment of what it starts (its ``TG_CTX_*``
#: variables, the hook's arguments), and what this estimate may miss
HEADROOM = 32 * 1024
#: the size of one pointer of the kernel's argument and environment arrays
POINTER = 8


def tf_var(name: str, value: Any) -> str:
    """The environment string Terragrunt makes of the input ``name`` = ``value``."""
    if isinstance(value, str):
        text = value
    else:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        # Go's encoding/json writes <, > and & as \u003c, \u003e, \u0026
        text += "_____" * sum(text.count(c) for c in "<>&")
    return f"TF_VAR_{name}={text}"


def size(text: str) -> int:
    """What one environment string costs the kernel: its bytes, its NUL, its pointer."""
    return len(text.encode("utf-8")) + 1 + POINTER


def problem(
    unit: str,
    inputs: Mapping[str, Any],
    *,
    environment: int,
    arg_max: int,
    max_strlen: int,
) -> str | None:
    """Why ``unit``'s ``inputs`` cannot be passed to a process (one line naming the unit
    and the way out), or None when they fit. ``environment``: the bytes (as :func:`size`
    counts them) of the rest of the environment Terragrunt runs with; ``arg_max`` and
    ``max_strlen``: the system's limits."""
    strings = [tf_var(str(name), value) for name, value in inputs.items()]
    if not strings:
        return None
    way_out = (
        "move large values into a file the module reads (e.g. jsondecode(file(...))), "
        "or split the input"
    )
    longest = max(strings, key=lambda s: len(s.encode("utf-8")))
    if len(longest.encode("utf-8")) + 1 > max_strlen:
        name = longest.split("=", 1)[0]
        return (
            f"{unit}: inputs too large for the process environment ({name} is "
            f"{len(longest.encode('utf-8')):,} bytes; one variable may hold at most "
            f"{max_strlen - 1:,}): {way_out}"
        )
    total = sum(size(s) for s in strings)
    if total + environment + HEADROOM > arg_max:
        return (
            f"{unit}: inputs too large for the process environment ({total:,} bytes of "
            f"TF_VAR_ values in {len(strings):,} variables, with {environment:,} of the rest of "
            f"the environment; the limit is {arg_max:,} for the whole environment and "
            f"arguments): {way_out}"
        )
    return None


#: what Linux says when a process cannot start for ``E2BIG``
E2BIG_TEXT = "argument list too long"


def from_output(unit: str, output: str) -> str | None:
    """The same refusal as :func:`problem` when a process Terragrunt started failed for
    ``E2BIG`` (read in its ``output``; the estimate may miss what Terragrunt adds), else
    None."""
    if E2BIG_TEXT not in output.lower():
        return None
    return (
        f"{unit}: inputs too large for the process environment (Terragrunt could not start "
        f"a process: {E2BIG_TEXT}; Linux allows one TF_VAR_ value of at most 128 KiB and "
        "about 2 MiB for the whole environment): move large values into a file the module "
        "reads (e.g. jsondecode(file(...))), or split the input"
    )
