"""The working-copy rule: what OpenTofu reads after Terragrunt's init is the pinned module. Pure.

After Terragrunt has fetched a unit's module into ``UNIT/.terragrunt-cache/<h>/<h>/``,
copied the unit folder into the module's folder and written its generated
files, OpenTofu reads every configuration file of that folder (and of the
folders its ``module`` blocks name). Before OpenTofu plans or applies, that
checkout must hold:

- every file of the module repository's tree at the commit the pinned tag names,
  byte for byte (compared by git blob SHA, so also against a ``git ls-tree``);
- besides them, no OpenTofu file (``*.tf``, ``*.tf.json``, ``*.tofu``,
  ``*.tofu.json``, ``*.tfvars``, ``*.tfvars.json``) anywhere in the checkout,
  except in the module's folder the files ``root.hcl``'s ``generate`` blocks
  declare and the null-inputs file Terragrunt itself writes.

Everything here works on plain data: the expectation (:class:`Expected`,
carried to the Terragrunt hook in a manifest) and the checkout as ``{path: blob SHA}``.
"""

from __future__ import annotations

import marshal

TYPE_CHECKING = False  # not typing's: importing typing costs the hook more than its work
if TYPE_CHECKING:  # the hook imports this module in a process of its own, per unit: keep it lean
    from collections.abc import Mapping
    from typing import Any

    from tooling.model.hcl import Body

RULE = "working-copy"
#: the files OpenTofu reads as configuration or variable values
CODE_SUFFIXES = (".tf", ".tf.json", ".tofu", ".tofu.json", ".tfvars", ".tfvars.json")
#: written by Terragrunt itself before a command, for inputs whose value is null
TERRAGRUNT_OWN = frozenset({"terragrunt-null-vars.auto.tfvars.json"})
#: folders of a checkout that are not configuration: git's stub, OpenTofu's data folder
SKIPPED_DIRS = frozenset({".git", ".terraform"})


def blob_sha(data: bytes) -> str:
    """The git blob SHA-1 of ``data`` (:func:`tooling.model.hcl.blob_sha`, which this
    module does not import: the hook would pay for ``pathlib`` on every unit)."""
    try:  # the interpreter's own SHA-1: importing hashlib loads OpenSSL, ~7 ms CPU per hook
        from _sha1 import sha1  # type: ignore[import-not-found]
    except ImportError:  # an interpreter built without it
        from hashlib import sha1

    digest = sha1(b"blob %d\0" % len(data))
    digest.update(data)
    return str(digest.hexdigest())


def is_code(name: str) -> bool:
    """Whether OpenTofu reads a file of this name as configuration or variable values."""
    return name.endswith(CODE_SUFFIXES)


class Expected:
    """What one unit's checkout must hold (a plain class: no ``dataclasses`` import)."""

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


def manifest_bytes(expected: Mapping[str, Expected]) -> bytes:
    """The hook's manifest: unit folder (absolute) -> expectation. ``marshal``: read back
    by the same interpreter (the hook runs the tooling's own), with no import at all."""
    return marshal.dumps({k: v.to_data() for k, v in sorted(expected.items())})


def read_manifest(data: bytes) -> dict[str, Expected]:
    loaded = marshal.loads(data)
    return {
        str(k): Expected(u, p, c, s, f, frozenset(g), e)
        for k, (u, p, c, s, f, g, e) in loaded.items()
    }


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


def problems(
    expected: Expected, found: Mapping[str, str], unit_files: frozenset[str] = frozenset()
) -> list[str]:
    """Why the checkout ``found`` ({path inside the checkout: blob SHA}) is not the
    pinned module plus root.hcl's generated files; empty when it is.

    ``unit_files`` are the names of the unit folder's own files (Terragrunt copies
    them into the module's folder): a code file among them is named as the unit's.
    """
    if expected.error is not None:
        return [f"{expected.unit}: {RULE}: {expected.error}"]
    out: list[str] = []
    unit = expected.unit
    fix_cache = f"delete {unit}/.terragrunt-cache and plan again"
    for path, sha in sorted(expected.files.items()):
        got = found.get(path)
        if got is None:
            out.append(
                f"{unit}: {RULE}: {path} of {expected.pinned} is missing from the working "
                f"copy; {fix_cache}"
            )
        elif got != sha:
            out.append(
                f"{unit}: {RULE}: {path} in the working copy differs from {expected.pinned}"
                f"{_at(expected)}; {fix_cache} (Terragrunt fetches the tag again)"
            )
    allowed_here = expected.generated | TERRAGRUNT_OWN
    for path in sorted(found):
        if path in expected.files or not is_code(path.rsplit("/", 1)[-1]):
            continue
        folder, _, name = path.rpartition("/")
        if folder == expected.subdir and name in allowed_here:
            continue
        if folder == expected.subdir and name in unit_files:
            out.append(
                f"{unit}/{name}:1: {RULE}: OpenTofu code beside terragrunt.hcl is copied into "
                "the module's folder and planned; move it into the module's repository "
                "and pin the new tag (units hold configuration only)"
            )
            continue
        out.append(
            f"{unit}: {RULE}: {path} in the working copy is neither a file of "
            f"{expected.pinned} nor one root.hcl generates; OpenTofu would read it; "
            f"{fix_cache}"
        )
    return out


def _at(expected: Expected) -> str:
    return f" (commit {expected.commit})" if expected.commit else ""


def checkout_root(work_dir: str, subdir: str) -> str | None:
    """The checkout holding the module's folder ``work_dir`` (``subdir`` stripped), or
    None when ``work_dir`` does not end with ``subdir``."""
    if not subdir:
        return work_dir
    parts = work_dir.rstrip("/").split("/")
    sub = subdir.strip("/").split("/")
    if len(parts) <= len(sub) or parts[-len(sub) :] != sub:
        return None
    return "/".join(parts[: -len(sub)])


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


#: the label of root.hcl's hook that runs the check (a hook of the same label elsewhere replaces it)
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


#: root.hcl's hook, exactly (docs/rules.md): the one hook ``run-at-parse`` accepts, in
#: the root file only; any other command, label or command list is a violation
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
