"""The shape of ``tooling/``: no import circle (type-only imports included) and no module
over 500 lines (the cohesive ones it names excepted).

The graph is grimp's, the library under import-linter: it records an import made only
for the type checker (``if TYPE_CHECKING:``) like any other, so a loop that only the
annotations close is still found. Each check is also run on a copy of the package with
a planted defect, to show that it fails and names what it found.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "tooling"
MAX_LINES = 500
#: modules that are long because they are cohesive, not split to fit the count: the
#: apply's one walk (binding, gate, waves, record), whose
#: steps share the run's state; the module sources, every form go-getter and Terragrunt
#: accept and what each supports; policy.toml as one typed value, its tables and the one
#: parser that checks every key
LONG_ALLOWED = {
    "tooling/engine/apply/applier.py",
    "tooling/model/sources.py",
    "tooling/model/policy.py",
}

#: build the graph in a fresh interpreter, so a copy of the package is read, not the one imported
_CYCLES = r"""
import sys

import grimp

graph = grimp.build_graph("tooling", exclude_type_checking_imports=False, cache_dir=None)
index, low, stack, on_stack, found = {}, {}, [], set(), []


def visit(start):
    # Tarjan's strongly connected components, iteratively (the graph is deep)
    work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
    index[start] = low[start] = len(index)
    stack.append(start)
    on_stack.add(start)
    while work:
        node, children = work[-1]
        for child in children:
            if child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                break
            if child in on_stack:
                low[node] = min(low[node], index[child])
        else:
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))


for module in sorted(graph.modules):
    if module not in index:
        visit(module)
for component in found:
    # one concrete loop through the component, as import-linter's chains name them
    chain = graph.find_shortest_chain(importer=component[0], imported=component[1])
    back = graph.find_shortest_chain(importer=component[1], imported=component[0])
    print(" -> ".join([*chain, *back[1:]]) if chain and back else " <-> ".join(component))
"""


def import_cycles(parent: Path) -> list[str]:
    """Each circle among the modules of the ``tooling`` package under ``parent``, one line each."""
    result = subprocess.run(
        [sys.executable, "-c", _CYCLES],
        cwd=parent,
        env={**os.environ, "PYTHONPATH": str(parent)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return [line for line in result.stdout.splitlines() if line]


def long_modules(package: Path) -> list[str]:
    """``path: N lines`` for each module of ``package`` over the limit (the exceptions apart)."""
    out = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package.parent).as_posix()
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES and rel not in LONG_ALLOWED and "sandbox_catalog" not in rel:
            out.append(f"{rel}: {lines} lines")
    return out


def _copy(dest: Path) -> Path:
    shutil.copytree(
        PACKAGE,
        dest / "tooling",
        ignore=shutil.ignore_patterns("sandbox_catalog", "__pycache__"),
    )
    return dest


def test_no_import_circle_in_tooling_type_only_imports_included() -> None:
    assert import_cycles(REPO) == []


def test_a_type_only_import_closing_a_circle_is_found_and_named(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    # model.hcl is imported by model.exprs; a type-only import back closes a circle
    hcl = root / "tooling" / "model" / "hcl.py"
    hcl.write_text(
        hcl.read_text()
        + "\nfrom typing import TYPE_CHECKING  # noqa: E402\n"
        + "if TYPE_CHECKING:\n    from tooling.model import exprs  # noqa: F401\n"
    )
    cycles = import_cycles(root)
    assert len(cycles) == 1
    assert "tooling.model.exprs" in cycles[0] and "tooling.model.hcl" in cycles[0]


def test_no_module_in_tooling_is_over_500_lines() -> None:
    assert long_modules(PACKAGE) == []


def test_a_module_over_500_lines_is_named(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    grown = root / "tooling" / "core" / "rules" / "names.py"
    grown.write_text(grown.read_text() + "\n" * (MAX_LINES + 1))
    assert (
        f"tooling/core/rules/names.py: {len(grown.read_text().splitlines())} lines"
        in long_modules(root / "tooling")
    )
