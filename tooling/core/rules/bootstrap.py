"""bootstrap/ never runs in CI: no workflow step runs, uses or works in it, and
every bootstrap entry point refuses to run when CI is set. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from tooling.core.rules.rule import Context, Rule, Stage
from tooling.core.rules.snapshot import Violation

_BOOTSTRAP_PATH_RE = re.compile(
    r"(?<![\w.-])(?:\./|\$\{?\{?\s*(?:github\.workspace|GITHUB_WORKSPACE)\s*\}?\}?/)?bootstrap/[\w./-]*"
)
_CD_BOOTSTRAP_RE = re.compile(r"(?:^|[\s;&|(])(?:cd|pushd)\s+[\"']?(?:\./)?bootstrap\b")


def _strip_shell_comment(line: str) -> str:
    stripped = line.lstrip()
    if stripped.startswith("#"):
        return ""
    return re.split(r"\s#", line, maxsplit=1)[0]


def _bootstrap_refs(text: str) -> Iterator[tuple[int, str]]:
    """(line offset, what) for each reference to bootstrap/ in a script, comments ignored."""
    for i, raw in enumerate(text.splitlines()):
        line = _strip_shell_comment(raw)
        for match in _BOOTSTRAP_PATH_RE.finditer(line):
            target = match.group()
            if target.endswith(".md"):
                continue
            yield i, target
        cd = _CD_BOOTSTRAP_RE.search(line)
        if cd:
            yield i, cd.group().strip()


def _yaml_scalars(node: Any, keys: frozenset[str]) -> Iterator[tuple[str, Any]]:
    """(key, value node) for every mapping entry whose key is in ``keys``, anywhere below ``node``."""
    import yaml

    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, yaml.MappingNode):
            for key_node, value_node in current.value:
                if (
                    isinstance(value_node, yaml.ScalarNode)
                    and getattr(key_node, "value", None) in keys
                ):
                    yield key_node.value, value_node
                else:
                    stack.append(value_node)
        elif isinstance(current, yaml.SequenceNode):
            stack.extend(current.value)


def check_ci_never_runs_bootstrap(ctx: Context) -> list[Violation]:
    """Nothing under .github/ runs, uses or works in anything from bootstrap/."""
    snap = ctx.snap
    import yaml

    out: list[Violation] = []
    for path in snap.under(".github"):
        if not path.endswith((".yml", ".yaml")):
            continue
        try:
            # libyaml's composer when the wheel has it: the pure-Python one is most of a check's time
            root = yaml.compose(
                snap.text(path), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)
            )
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            what = "; ".join(
                str(x) for x in (getattr(exc, "context", None), getattr(exc, "problem", None)) if x
            )
            out.append(
                Violation(
                    path,
                    (mark.line + 1) if mark else 1,
                    "yaml-syntax",
                    f"YAML does not parse ({what or exc})",
                    "fix the YAML (actionlint and check-yaml show the same error)",
                )
            )
            continue
        if root is None:
            continue
        for key, node in _yaml_scalars(root, frozenset({"run", "uses", "working-directory"})):
            value = str(node.value)
            first = node.start_mark.line + (1 if node.style in ("|", ">") else 0)
            if key == "run":
                for offset, target in _bootstrap_refs(value):
                    out.append(
                        Violation(
                            path,
                            first + offset + 1,
                            "ci-runs-bootstrap",
                            f"a workflow step runs {target}: bootstrap/ is manual and never runs in CI",
                            "remove the step; run bootstrap by hand from an administrator's shell (bootstrap/README.md)",
                        )
                    )
            elif re.match(r"^(\./)?bootstrap(/|$)", value.strip()):
                out.append(
                    Violation(
                        path,
                        node.start_mark.line + 1,
                        "ci-runs-bootstrap",
                        f"{key}: {value.strip()} runs code from bootstrap/ in CI",
                        "remove it; bootstrap/ holds manual steps only (bootstrap/README.md)",
                    )
                )
    return out


_CI_WORD = re.compile(r"\bCI\b")


def check_bootstrap_guard(ctx: Context) -> list[Violation]:
    """Every bootstrap entry point (executable, or a script with a shebang) refuses to run in CI."""
    snap = ctx.snap
    out: list[Violation] = []
    for path in snap.under("bootstrap"):
        text = (
            snap.text(path)
            if (path in snap.executable or path.endswith((".sh", ".py", ".bash")))
            else ""
        )
        if not text or not (path in snap.executable or text.startswith("#!")):
            continue
        code = "\n".join(_strip_shell_comment(line) for line in text.splitlines())
        if "GITHUB_ACTIONS" not in code or not _CI_WORD.search(code):
            out.append(
                Violation(
                    path,
                    1,
                    "bootstrap-ci-guard",
                    "this bootstrap entry point does not refuse to run when CI or GITHUB_ACTIONS is set",
                    "start it with the guard the other scripts use (refuse_in_ci in seed-secrets.sh, ci_variable in "
                    "bootstrap/bootstrap): exit 2 when CI or GITHUB_ACTIONS is set to a value other than '', false or 0",
                )
            )
    return out


CI_NEVER_RUNS_BOOTSTRAP = Rule(
    name="ci-never-runs-bootstrap",
    ids=("ci-runs-bootstrap", "yaml-syntax"),
    summary="nothing under `.github/` runs, uses or works in `bootstrap/`",
    stages=Stage.CHECK,
    check=check_ci_never_runs_bootstrap,
)
BOOTSTRAP_GUARD = Rule(
    name="bootstrap-guard",
    ids=("bootstrap-ci-guard",),
    summary="every entry point of `bootstrap/` refuses to run in CI",
    stages=Stage.CHECK,
    check=check_bootstrap_guard,
)
