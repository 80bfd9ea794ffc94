"""The working-copy check, run by Terragrunt right before OpenTofu plans or applies.

``root.hcl`` declares it as a ``before_hook`` on ``init``, ``plan`` and ``apply``; the
pipeline arms it through ``IAC_WORKCOPY_HOOK`` (the interpreter, this file and
the manifest of what each unit's checkout must hold, see
:mod:`tooling.commands.workcopies`). Terragrunt runs it in the unit's working
copy after writing the generated files, before OpenTofu's init and again before
the plan or apply, so what it verifies is what OpenTofu reads next. A problem is printed (one line each) and the exit
code is 1: Terragrunt then runs no OpenTofu command for the unit, and the
pipeline reports the unit as refused; other units go on.

It runs as a script (``python -I -S workcopy_hook.py MANIFEST UNIT_DIR``), one
process per unit, so it imports only the standard library and the pure rule.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the package root is two folders up
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tooling.core import workcopy


def scan(root: Path, wanted: frozenset[str], subdir: str) -> dict[str, str]:
    """{path inside the checkout: blob SHA} of the files under ``root`` that are OpenTofu
    code or that ``wanted`` names (skipping git's stub and OpenTofu's data folder)."""
    found: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in workcopy.SKIPPED_DIRS]
        here = Path(dirpath)
        rel_dir = here.relative_to(root).as_posix()
        for name in filenames:
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            if rel not in wanted and not workcopy.is_code(name):
                continue
            path = here / name
            try:
                data = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
            except OSError:
                data = b""
            found[rel] = workcopy.blob_sha(data)
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
    root = workcopy.checkout_root(os.path.realpath(work_dir), expected.subdir)
    if root is None:
        return [
            f"{expected.unit}: {workcopy.RULE}: Terragrunt ran in {work_dir}, not in the "
            f"module folder {expected.subdir} of {expected.pinned}; delete "
            f"{expected.unit}/.terragrunt-cache and plan again"
        ]
    found = scan(Path(root), frozenset(expected.files), expected.subdir)
    try:
        own = frozenset(p.name for p in Path(unit_dir).iterdir() if p.is_file())
    except OSError:
        own = frozenset()
    return workcopy.problems(expected, found, own)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: workcopy_hook.py MANIFEST UNIT_DIR", file=sys.stderr)
        return 2
    manifest = workcopy.read_manifest(Path(argv[1]).read_text())
    work_dir = os.getcwd()
    found = verify(manifest, argv[2], work_dir)
    if found:
        sys.stderr.write("".join(f"ERROR {line}\n" for line in found))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
