"""The working-copy check, run by Terragrunt right before OpenTofu plans or applies.

``root.hcl`` declares it as a ``before_hook`` on ``init``, ``plan`` and ``apply``; the
pipeline arms it through ``IAC_WORKCOPY_HOOK`` (the interpreter, this file and
the manifest of what each unit's checkout must hold, see
:mod:`tooling.engine.workcopies`). Terragrunt runs it in the unit's working
copy after writing the generated files, before OpenTofu's init and again before
the plan or apply, so what it verifies is what OpenTofu reads next (a plan right
after the init of the same Terragrunt process is not checked twice: see
:data:`MARK_ENV`). A problem is printed (one line each) and the exit
code is 1: Terragrunt then runs no OpenTofu command for the unit, and the
pipeline reports the unit as refused; other units go on.

It runs as a script (``python -I -S workcopy_hook.py MANIFEST UNIT_DIR``), one
process per unit, so it imports only the standard library and the pure rule.
"""

from __future__ import annotations

import os
import sys

if __package__ in (None, ""):  # run as a script: the package root is two folders up
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from tooling.core import workcopy

#: set by the pipeline, one token per run: a check that passes before ``init`` leaves
#: ``.terraform/iac-checked-<token>`` holding Terragrunt's process id, and the same
#: process's plan right after skips the check (the wrapper in
#: :mod:`tooling.engine.workcopies`)
MARK_ENV = "IAC_WORKCOPY_MARK"
MARK_PREFIX = "iac-checked-"


def _read(path: str) -> bytes:
    try:
        if os.path.islink(path):
            return os.readlink(path).encode()
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return b""


def scan(root: str, wanted: frozenset[str]) -> dict[str, str]:
    """{path inside the checkout: blob SHA} of the files under ``root`` that are OpenTofu
    code or that ``wanted`` names (skipping git's stub and OpenTofu's data folder)."""
    found: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in workcopy.SKIPPED_DIRS]
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        for name in filenames:
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            if rel in wanted or workcopy.is_code(name):
                found[rel] = workcopy.blob_sha(_read(os.path.join(dirpath, name)))
    return found


def verify(manifest: dict[str, workcopy.Expected], unit_dir: str, work_dir: str) -> list[str]:
    """The problems of the working copy ``work_dir`` of the unit in ``unit_dir``."""
    expected = manifest.get(os.path.realpath(unit_dir))
    if expected is None and os.environ.get("TG_CTX_COMMAND") == "init":
        # a unit the run does not plan, initialised so that a dependent can read its outputs
        return []
    if expected is None:
        return [
            f"{unit_dir}: {workcopy.RULE}: the pipeline did not prepare this unit's check; "
            "plan it through `invoke plan` (or unset IAC_WORKCOPY_HOOK)"
        ]
    if expected.error is not None:
        return workcopy.problems(expected, {})
    root = workcopy.checkout_root(os.path.realpath(work_dir), expected.subdir)
    if root is None:
        return [
            f"{expected.unit}: {workcopy.RULE}: Terragrunt ran in {work_dir}, not in the "
            f"module folder {expected.subdir} of {expected.pinned}; delete "
            f"{expected.unit}/.terragrunt-cache and plan again"
        ]
    found = scan(root, frozenset(expected.files))
    try:
        own = frozenset(e.name for e in os.scandir(unit_dir) if e.is_file())
    except OSError:
        own = frozenset()
    return workcopy.problems(expected, found, own)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        sys.stderr.write("usage: workcopy_hook.py MANIFEST UNIT_DIR\n")
        return 2
    with open(argv[1], "rb") as fh:
        manifest = workcopy.read_manifest(fh.read())
    found = verify(manifest, argv[2], os.getcwd())
    if found:
        sys.stderr.write("".join(f"ERROR {line}\n" for line in found))
        return 1
    token = os.environ.get(MARK_ENV, "")
    if os.environ.get("TG_CTX_COMMAND") == "init" and token.isalnum():
        mark(".terraform", MARK_PREFIX + token, str(os.getppid()))
    return 0


def mark(folder: str, name: str, holder: str) -> None:
    """Leave the mark ``folder/name`` holding ``holder`` (Terragrunt's process id), and
    remove the marks earlier runs left; best effort (no mark: the plan checks again)."""
    try:
        os.makedirs(folder, exist_ok=True)
        for entry in os.scandir(folder):
            if entry.name.startswith(MARK_PREFIX) and entry.name != name:
                os.unlink(entry.path)
        with open(os.path.join(folder, name), "w") as fh:
            fh.write(holder + "\n")
    except OSError:
        pass


if __name__ == "__main__":
    sys.exit(main(sys.argv))
