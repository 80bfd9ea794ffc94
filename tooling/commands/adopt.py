"""``invoke adopt UNIT ADDRESS ID [--apply]``: adopt an existing resource, only through a
first plan that shows no difference ("fix the code, not reality").

How the temporary import block reaches the unit without ever touching live/:

1. Terragrunt runs with its download directory (``TG_DOWNLOAD_DIR``) set to a
   private folder, ``.iac/adopt/<unit>-<pid>/cache`` (ignored by git), so this
   run gets its own working copy of the module, shared with no other plan;
2. ``terragrunt init`` fills that working copy;
3. ``iac_adopt_import.tf`` (one ``import { to = ADDRESS  id = ID }`` block) is
   written into the working copy, next to the module's code;
4. ``terragrunt plan -out`` plans the unit with its real inputs, dependencies
   and backend; ``tofu show -json`` reads the plan in memory (never on disk:
   it holds sensitive values in clear);
5. the plan is accepted only when every resource change is an import with no
   other action (0 to add, 0 to change, 0 to destroy), and the import of
   ADDRESS is among them; otherwise the differences are printed (addresses and
   attributes; sensitive values never) and the command refuses;
6. with ``--apply`` exactly that saved plan is applied, then the unit is
   planned again without the import block to confirm it shows no changes.

The private folder (import block, plan file, working copy) is removed in a
``finally`` whatever happens; if the process is killed, what remains is under
``.iac/`` (ignored), never under live/.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tooling.core.plan.planjson import action_of, changed_attributes, changed_outputs, marked
from tooling.core.plan.targets import unit_arg
from tooling.core.text import redact
from tooling.core.text.suggest import did_you_mean
from tooling.engine import secrets
from tooling.engine.plan import store
from tooling.engine.plan.unitplanner import learn_secrets
from tooling.engine.rules import verify
from tooling.engine.rules.before_terragrunt import (
    refuse_bad_names,
    refuse_before_terragrunt,
    refuse_unparsable,
)
from tooling.errors import ToolingError, UsageError
from tooling.io import outdir, proc, terragrunt
from tooling.io.ui import say
from tooling.io.workspace import Workspace

IMPORT_FILE = "iac_adopt_import.tf"

_INDEX = r'\[(?:\d+|"(?:[^"\\]|\\.)*")\]'
_NAME = r"[A-Za-z_][A-Za-z0-9_-]*"
ADDRESS_RE = re.compile(rf"(?:module\.{_NAME}(?:{_INDEX})?\.)*{_NAME}\.{_NAME}(?:{_INDEX})?")


# --------------------------------------------------------------------------- pure parts


def check_address(address: str) -> str:
    """The resource address, validated (a managed resource; data sources cannot be imported)."""
    value = address.strip()
    if re.match(r"(?:module\.[^.]+\.)*data\.", value):
        raise UsageError(
            f"{address}: a data source is read, not adopted; give a managed resource's address"
        )
    if not ADDRESS_RE.fullmatch(value):
        raise UsageError(
            f"{address!r} is not a resource address: write it as in the plan, e.g. "
            'terraform_data.main, terraform_data.vm["node-1"] or module.net.terraform_data.bridge'
        )
    return value


def _hcl_string(value: str) -> str:
    """``value`` as an HCL string literal (JSON escapes, and no template sequences)."""
    return json.dumps(value).replace("${", "$${").replace("%{", "%%{")


def import_block(address: str, import_id: str) -> str:
    """The temporary configuration: one import block."""
    return (
        "# Written by `invoke adopt` for one run into its private working copy; removed when the run ends.\n"
        "import {\n"
        f"  to = {address}\n"
        f"  id = {_hcl_string(import_id)}\n"
        "}\n"
    )


@dataclass(frozen=True)
class AttributeDiff:
    name: str
    before: str
    after: str


@dataclass(frozen=True)
class Difference:
    """A resource change that is more than an import."""

    address: str
    action: str
    importing: str | None  # the import ID when the change is also an import
    attributes: tuple[AttributeDiff, ...]
    moved_from: str | None = None  # the address a moved block moves it from

    def lines(self) -> list[str]:
        sign = {"create": "+", "delete": "-", "update": "~", "replace": "-/+", "forget": "."}.get(
            self.action, "!"
        )
        how = f"; imported from {self.importing!r}" if self.importing is not None else ""
        how += f"; moved from {self.moved_from}" if self.moved_from is not None else ""
        out = [f"  {sign} {self.address} ({self.action}{how})"]
        out += [f"      {a.name}: {a.before} -> {a.after}" for a in self.attributes]
        return out


@dataclass(frozen=True)
class Verdict:
    imports: tuple[tuple[str, str], ...]  # (address, id) of the clean imports
    differences: tuple[Difference, ...]
    outputs: tuple[str, ...]
    managed_already: bool  # ADDRESS is already in the state (no import planned)

    @property
    def clean(self) -> bool:
        return not self.differences and bool(self.imports) and not self.managed_already

    def counts(self) -> dict[str, int]:
        counts = {
            "import": len(self.imports)
            + sum(1 for d in self.differences if d.importing is not None),
            "add": 0,
            "change": 0,
            "destroy": 0,
            "forget": sum(1 for d in self.differences if "forget" in d.action.split("+")),
            "move": sum(1 for d in self.differences if d.moved_from is not None),
        }
        for diff in self.differences:
            if diff.action in ("create", "replace", "forget+create"):
                counts["add"] += 1
            if diff.action in ("delete", "replace"):
                counts["destroy"] += 1
            if diff.action == "update":
                counts["change"] += 1
        return counts


_SENSITIVE = "(sensitive value)"


def _render(value: Any, *, sensitive: bool, unknown: bool = False) -> str:
    if unknown:
        return "(known after apply)"
    if value is None:
        return "null"  # nothing to hide
    if sensitive:
        return _SENSITIVE
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 160 else text[:157] + "..."


def attribute_diffs(change: Mapping[str, Any]) -> tuple[AttributeDiff, ...]:
    """The top-level attributes whose value changes; sensitive values are never rendered."""
    before = change.get("before") or {}
    after = change.get("after") or {}
    unknown = change.get("after_unknown") or {}
    before_s = change.get("before_sensitive") or {}
    after_s = change.get("after_sensitive") or {}
    out: list[AttributeDiff] = []
    for name in changed_attributes(change, nested_unknown=True):
        is_unknown = isinstance(unknown, dict) and marked(unknown.get(name))
        sens_b = isinstance(before_s, dict) and marked(before_s.get(name))
        sens_a = isinstance(after_s, dict) and marked(after_s.get(name))
        out.append(
            AttributeDiff(
                name,
                _render(before.get(name), sensitive=sens_b or sens_a),
                _render(after.get(name), sensitive=sens_b or sens_a, unknown=is_unknown),
            )
        )
    return tuple(out)


def judge(plan: Mapping[str, Any], address: str) -> Verdict:
    """Is this plan only imports (and does it import ADDRESS)? Pure over ``show -json``."""
    imports: list[tuple[str, str]] = []
    diffs: list[Difference] = []
    managed_already = False
    for raw in plan.get("resource_changes") or ():
        if raw.get("mode") == "data":
            continue
        change = raw.get("change") or {}
        action = action_of(change.get("actions") or [])
        importing = change.get("importing")
        import_id = str(importing.get("id")) if isinstance(importing, dict) else None
        addr = str(raw.get("address", "?"))
        moved = raw.get("previous_address")
        moved_from = str(moved) if moved and moved != addr else None  # a moved block
        if moved_from is not None:
            diffs.append(Difference(addr, action, import_id, attribute_diffs(change), moved_from))
            continue
        if action == "no-op" and import_id is not None:
            imports.append((addr, import_id))
            continue
        if action in ("no-op", "read"):
            if addr == address and import_id is None:
                managed_already = True
            continue
        diffs.append(Difference(addr, action, import_id, attribute_diffs(change)))
    return Verdict(tuple(imports), tuple(diffs), changed_outputs(plan), managed_already)


def refusal(unit: str, address: str, verdict: Verdict) -> str:
    """The message of a refused adoption: what differs, and what to do."""
    c = verdict.counts()
    lines = [
        f"the import plan of {unit} is not a clean adoption: {c['import']} to import, "
        f"{c['add']} to add, {c['change']} to change, {c['destroy']} to destroy"
        + "".join(f", {c[k]} to {k}" for k in ("forget", "move") if c[k])
        + ".",
    ]
    if verdict.managed_already:
        lines.append(f"{address} is already in the state of {unit}: there is nothing to adopt.")
    if verdict.differences:
        lines.append("Differences between the code and what exists:")
        for diff in verdict.differences:
            lines.extend(diff.lines())
    if verdict.managed_already and not verdict.differences:
        return "\n".join(lines)
    lines.append(
        "Refused: fix the code, not reality. Change the unit's inputs (or the module version) until the "
        f"import plans with no difference, then run `invoke adopt {unit} {address} ID` again."
    )
    return "\n".join(lines)


# --------------------------------------------------------------------------- the run


def _show(work: Path, plan_file: Path, env: Mapping[str, str]) -> dict[str, Any]:
    shown = store.show_in(work, plan_file, env)
    secrets.register(redact.sensitive_in_plan(shown))  # its differences are printed
    return shown


def _plan(unit_dir: Path, plan_file: Path, env: Mapping[str, str], log: Path) -> None:
    ran = terragrunt.run(terragrunt.plan_args(plan_file), unit_dir, env, log)
    if ran.returncode != 0 or not plan_file.is_file():
        raise ToolingError(
            f"the plan failed:\n{terragrunt.error_summary(ran.stderr + chr(10) + ran.stdout)}"
        )


def adopt(ws: Workspace, unit: str, address: str, import_id: str, *, apply: bool = False) -> int:
    """Plan the import of ADDRESS (ID) into UNIT; refuse unless it is the only change; apply with ``apply``."""
    target = check_address(address)
    if not import_id:
        raise UsageError("ID is empty: give the provider's import ID of the existing resource")
    path = unit_arg(unit, option="UNIT")
    model = ws.current_model
    if path not in model.units:
        hint = did_you_mean(path, model.units) or " See `invoke units`."
        raise UsageError(f"{unit}: no unit at {path}.{hint}")
    refuse_unparsable(model, [path])
    refuse_bad_names(model, [path], policy=ws.policy)
    refuse_before_terragrunt(model, [path], root=ws.root, policy=ws.policy, doing="adopt")
    unit_dir = ws.root / path
    verify.before_plan(unit_dir, path, model.units[path].tier, ws.tool_env, ws.policy)
    private = ws.root / ".iac" / "adopt" / f"{path.replace('/', '_')}-{os.getpid()}"
    shutil.rmtree(private, ignore_errors=True)
    private.mkdir(parents=True)
    env = {**ws.tool_env, "TG_DOWNLOAD_DIR": str(private / "cache")}
    log = private / "adopt.log"
    plan_file = store.private_plan(private, "adopt")
    import_file: Path | None = None
    try:
        ran = terragrunt.run(terragrunt.init_args(), unit_dir, env, log)
        if ran.returncode != 0:
            raise ToolingError(
                f"terragrunt init failed:\n{terragrunt.error_summary(ran.stderr + chr(10) + ran.stdout)}"
            )
        # before any plan output is shown: the sensitive outputs of its dependencies
        # (init read them), which the plan holds as plain inputs and may echo
        if unreadable := learn_secrets({}, path, unit_dir, model.units[path], env):
            raise ToolingError(unreadable)
        work = terragrunt.work_dir(private / "cache", unit_dir / "terragrunt.hcl")
        import_file = work / IMPORT_FILE
        import_file.write_text(import_block(target, import_id))
        say(f"planning {path} with a temporary import of {target} (id {import_id!r})")
        _plan(unit_dir, plan_file, env, log)
        verdict = judge(_show(work, plan_file, env), target)
        if not verdict.clean or target not in {a for a, _ in verdict.imports}:
            if verdict.clean:  # clean, but ADDRESS was not among the imports
                raise ToolingError(
                    f"the plan does not import {target}; check the address (see the module's resources)"
                )
            say(refusal(path, target, verdict))
            return 1
        for addr, rid in verdict.imports:
            say(f"  = {addr}: imported from {rid!r}, no difference")
        if verdict.outputs:
            say(
                f"  outputs that get values from the adopted resource: {', '.join(verdict.outputs)}"
            )
        c = verdict.counts()
        say(f"clean adoption: {c['import']} to import, 0 to add, 0 to change, 0 to destroy.")
        if not apply:
            say(
                f"nothing was changed. Run `invoke adopt {path} {target} {import_id} --apply` to adopt it."
            )
            return 0
        # in its own process group, output to a file: an interrupt reaches OpenTofu
        # once, and a killed tool does not kill OpenTofu half way
        raw = private / "apply.out"
        code, interrupted = proc.run_to_file(
            terragrunt.apply_args(plan_file), output=raw, cwd=unit_dir, env=env
        )
        output = raw.read_text(errors="replace")
        outdir.append_text(log, output)
        if code != 0 or interrupted:
            from tooling.engine.apply.applier import outcome

            _, why = outcome(code, output, interrupted, path)
            raise ToolingError(f"applying the import plan failed: {why}")
        import_file.unlink()
        import_file = None
        say(f"adopted {target} into the state of {path}; re-planning without the import block")
        check_file = store.private_plan(private, "after")
        _plan(unit_dir, check_file, env, log)
        after = judge(_show(work, check_file, env), target)
        if after.differences:
            say("the unit still plans changes after the adoption:")
            for diff in after.differences:
                say("\n".join(diff.lines()))
            return 1
        say(f"{path} now plans with no changes for {target}.")
        return 0
    finally:
        if import_file is not None:
            import_file.unlink(missing_ok=True)
        shutil.rmtree(private, ignore_errors=True)
        with contextlib.suppress(OSError):
            private.parent.rmdir()  # .iac/adopt, when no other adoption runs


__all__: Sequence[str] = ("adopt", "check_address", "import_block", "judge", "refusal")
