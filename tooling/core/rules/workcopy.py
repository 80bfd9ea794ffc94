"""The working-copy rule: what OpenTofu reads is the pinned module. Pure.

After Terragrunt has fetched a unit's module into ``UNIT/.terragrunt-cache/<h>/<h>/``,
copied the unit folder into the module's folder and written its generated
files, OpenTofu reads every configuration file of that folder (and of the
folders its ``module`` blocks name). Before each OpenTofu command, that checkout
must hold:

- every file of the module repository's tree at the commit the pinned tag names,
  byte for byte (compared by git blob SHA, so also against a ``git ls-tree``);
- besides them, no OpenTofu file (``*.tf``, ``*.tf.json``, ``*.tofu``,
  ``*.tofu.json``, ``*.tfvars``, ``*.tfvars.json``) anywhere in the checkout,
  except in the module's folder the files the root file's ``generate`` blocks
  declare, with the contents it declares for the unit, and the null-inputs file
  Terragrunt itself writes (null values of the module's own variables only).

The guard checks it (``tooling/guard``: :mod:`tooling.core.rules.execpoint` carries it the
expectation); here: the expectation (:class:`Expected`), the file names the root file
generates, a committed working copy, and the hook label an old root file used.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tooling.model.hcl import Body

RULE = "working-copy"
#: the files OpenTofu reads as configuration or variable values
CODE_SUFFIXES = (".tf", ".tf.json", ".tofu", ".tofu.json", ".tfvars", ".tfvars.json")


def blob_sha(data: bytes) -> str:
    """The git blob SHA-1 of ``data``."""
    from tooling.model.hcl import blob_sha as sha

    return sha(data)


def is_code(name: str) -> bool:
    """Whether OpenTofu reads a file of this name as configuration or variable values."""
    return name.endswith(CODE_SUFFIXES)


class Expected:
    """What one unit's checkout must hold."""

    __slots__ = ("commit", "error", "files", "generated", "pinned", "subdir", "unit")

    def __init__(
        self,
        unit: str,
        pinned: str,
        commit: str | None,
        subdir: str,
        files: Mapping[str, str],
        generated: frozenset[str] = frozenset(),
        error: str | None = None,
    ) -> None:
        #: the unit's repository path
        self.unit = unit
        #: how the module was pinned, for messages: ``<repository>@<tag>`` or the local folder
        self.pinned = pinned
        #: the commit the tag names (None for a local source)
        self.commit = commit
        #: the module's folder inside the checkout ("" for the checkout's root)
        self.subdir = subdir
        #: every file of the module's tree the check compares: path in the checkout -> blob SHA
        self.files = dict(files)
        #: file names root.hcl's generate blocks declare (written into the module's folder)
        self.generated = frozenset(generated)
        #: why what the checkout must hold could not be worked out: the unit is refused
        self.error = error

    def to_data(self) -> tuple[Any, ...]:
        return (
            self.unit,
            self.pinned,
            self.commit,
            self.subdir,
            dict(sorted(self.files.items())),
            tuple(sorted(self.generated)),
            self.error,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Expected) and self.to_data() == other.to_data()

    def __hash__(self) -> int:
        return hash((self.unit, self.pinned, self.commit))

    def __repr__(self) -> str:
        return f"Expected{self.to_data()!r}"


def declared_generated(root: Body) -> frozenset[str]:
    """The file names the ``generate`` blocks of a parsed ``root.hcl`` declare as literals.

    A path computed at run time is not accepted here: its file is then refused
    like any other file the module does not hold.
    """
    names: set[str] = set()

    def add(expr: Any) -> None:
        if isinstance(expr, tuple | list) and len(expr) == 2 and expr[0] == "lit":
            value = expr[1]
            if isinstance(value, str) and value and "/" not in value:
                names.add(value)

    def field(expr: Any, name: str) -> Any:
        """The value of key ``name`` of an object expression (None if absent)."""
        if isinstance(expr, tuple | list) and len(expr) == 2 and expr[0] == "obj":
            for key, value in expr[1]:
                if tuple(key) == ("lit", name):
                    return value
        return None

    for block in root.get("b", []):
        kind, _labels, body, _line = block
        if kind == "generate":
            path = body.get("a", {}).get("path")
            add(path[0] if path else None)
        elif kind == "remote_state":  # remote_state { generate = { path = "backend.tf" } }
            generate = body.get("a", {}).get("generate")
            add(field(generate[0], "path") if generate else None)
    remote = root.get("a", {}).get("remote_state")  # remote_state = { generate = {...} }
    if remote:
        add(field(field(remote[0], "generate"), "path"))
    return frozenset(names)


def committed_caches(units: list[str], tracked: list[str]) -> dict[str, str]:
    """The units whose ``.terragrunt-cache`` git tracks (``tracked``: repository paths),
    each with its refusal: Terragrunt would reuse the committed copy as it is."""
    out: dict[str, str] = {}
    for unit in units:
        prefix = f"{unit}/.terragrunt-cache/"
        files = sorted(p for p in tracked if p.startswith(prefix))
        if files:
            out[unit] = (
                f"{files[0]}:1: {RULE}: {unit}/.terragrunt-cache is committed to git "
                f"({len(files)} file(s)); Terragrunt reuses a committed working copy instead "
                f"of fetching the pinned tag. Fix: git rm -r --cached {unit}/.terragrunt-cache "
                "(.gitignore lists it) and commit"
            )
    return out


#: the label of the hook root.hcl declared while the working copy was checked by a hook
#: (before the guard): a hook of the same label in a unit is still refused by its name
HOOK_LABEL = "iac_working_copy"


def hook_overrides(body: Body) -> list[int]:
    """The lines of a parsed HCL file (other than root.hcl) declaring a hook labelled
    :data:`HOOK_LABEL`: Terragrunt's include merge lets it replace root.hcl's."""
    lines: list[int] = []
    for kind, _labels, inner, _line in body.get("b", []):
        if kind != "terraform":
            continue
        for btype, labels, _i, line_no in inner.get("b", []):
            if btype.endswith("_hook") and labels and labels[0] == HOOK_LABEL:
                lines.append(int(line_no))
    return lines


#: that hook, exactly (docs/rules.md): the one hook ``run-at-parse`` accepts, in the root
#: file only, so that a root file which still declares it keeps passing; the pipeline no
#: longer sets ``IAC_WORKCOPY_HOOK``, so it runs ``true``. Any other command, label or
#: command list is a violation
CANONICAL_HOOK = f"""terraform {{
  before_hook "{HOOK_LABEL}" {{
    commands = ["init", "plan", "apply"]
    execute  = concat(jsondecode(get_env("IAC_WORKCOPY_HOOK", "[\\"true\\"]")), [get_terragrunt_dir()])
  }}
}}
"""


def _shape(body: Body) -> Any:
    """A parsed body without its line numbers."""
    return (
        sorted((k, repr(v[0])) for k, v in body.get("a", {}).items()),
        [(b[0], list(b[1]), _shape(b[2])) for b in body.get("b", [])],
    )


def is_canonical_hook(btype: str, labels: list[str], inner: Body, canonical: Body) -> bool:
    """Whether a hook block (type, labels, parsed body) is root.hcl's working-copy hook
    exactly as ``canonical`` (:data:`CANONICAL_HOOK`, parsed) declares it."""
    for _kind, _labels, tf_body, _line in canonical.get("b", []):
        for ctype, clabels, cinner, _l in tf_body.get("b", []):
            if (btype, list(labels)) == (ctype, list(clabels)):
                return bool(_shape(inner) == _shape(cinner))
    return False
