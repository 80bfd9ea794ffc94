"""The bump flow's repository side: context, changelogs, and converging one pull request.

After all-repos' ``autofix_lib``: :func:`open_context` checks the working tree is
clean and finds the default branch, the bot identity and the forge;
:func:`read_changelog` reads what changed from the module repository;
:func:`converge` branches from the default branch, edits, refreshes the bumped
units' provider lock files (:func:`refresh_locks`), commits, pushes (with a
lease, only over the bot's own commits) and opens or updates the pull request.
"""

import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tooling.core.bump.changelog import Changelog, changelog_sections
from tooling.core.bump.locks import LockChange, lock_changes, lock_command, lock_path, parse_lock
from tooling.core.bump.pins import Pin, UnitText
from tooling.core.bump.plans import BumpPlan, apply_changes
from tooling.core.bump.texts import commit_message, pr_body, pr_title
from tooling.core.ci import executors
from tooling.errors import ToolingError
from tooling.io import git, proc, tags, terragrunt
from tooling.io.forge import Forge, token_from_env
from tooling.io.githubapi import JSONObject
from tooling.io.workspace import Workspace
from tooling.model.sources import RepoTags
from tooling.model.trees import Tree
from tooling.model.units import Change
from tooling.model.versions import parse_version

LABELS = ("dependencies",)
MAJOR_LABELS = ("dependencies", "major-update")


def dirty_message(changes: Sequence[Change]) -> str:
    kinds = {"A": "added/untracked", "M": "modified", "D": "deleted", "R": "renamed"}
    shown = [f"{c.path} ({kinds.get(c.status, c.status)})" for c in changes[:20]]
    more = f" and {len(changes) - 20} more" if len(changes) > 20 else ""
    return (
        "the working tree has uncommitted changes: "
        + ", ".join(shown)
        + more
        + ". Commit or stash them (git stash --include-untracked) and run again."
    )


@dataclass
class Context:
    ws: Workspace
    has_origin: bool
    default_ref: str
    base_branch: str
    default_sha: str
    original: str
    identity: git.Identity
    forge: Forge | None
    git_token: tags.Token | None
    #: module repositories fetched in this run (for changelogs), by URL
    fetched: dict[str, Path | str] = field(default_factory=dict)
    #: the module repositories the run works on (the default branch's pins), mapped like
    #: the working tree's: a module only the default branch pins is redirected too
    modules: tuple[str, ...] = ()

    @property
    def module_env(self) -> dict[str, str]:
        return self.ws.env_for(self.modules)

    def foreign_authors(self, sha: str) -> list[str]:
        """Author emails on ``sha`` (since the default branch) that are not the bot's."""
        emails = git.out(self.ws.root, "log", "--format=%ae", f"{self.default_sha}..{sha}").split()
        mine = self.identity.email.casefold()
        return sorted({e for e in emails if e.casefold() != mine})

    def restore(self) -> None:
        """Back to the branch (or commit) the user was on."""
        git.git(self.ws.root, "checkout", "--quiet", self.original)


def _bot_identity(root: Path) -> git.Identity:
    name = os.environ.get("IAC_BUMP_AUTHOR_NAME", "").strip()
    email = os.environ.get("IAC_BUMP_AUTHOR_EMAIL", "").strip()
    if email:
        return git.Identity(name or "iac-tooling bump", email)
    result = git.git(root, "var", "GIT_AUTHOR_IDENT", ok_codes=(0, 128))
    ident = git.parse_ident(result.stdout) if result.returncode == 0 else None
    if ident is None:
        raise ToolingError(
            "no git identity to commit with: set IAC_BUMP_AUTHOR_NAME and IAC_BUMP_AUTHOR_EMAIL "
            "(or git config user.name / user.email)"
        )
    return git.Identity(name or ident.name, ident.email)


def _forge(root: Path, has_origin: bool) -> Forge | None:
    """The pull request API when a token is set (else the flow stops after the local commit)."""
    if not token_from_env():
        return None
    origin = git.out(root, "remote", "get-url", "origin") if has_origin else None
    return Forge.from_env(origin_url=origin)


def open_context(ws: Workspace, *, fetch: bool, need_clean: bool) -> Context:
    root = ws.root
    if need_clean:
        dirty = git.uncommitted(root)
        if dirty:
            raise ToolingError(dirty_message(dirty))
    has_origin = "origin" in git.out(root, "remote").split()
    if fetch and has_origin:
        git.git(root, "fetch", "--quiet", "--prune", "origin")
    default_ref = git.default_branch(root)
    default_sha = git.commit_sha(root, default_ref)
    if default_sha is None:  # pragma: no cover - default_branch checked it exists
        raise ToolingError(f"cannot resolve the default branch {default_ref}")
    head = git.git(
        root, "symbolic-ref", "--quiet", "--short", "HEAD", ok_codes=(0, 1)
    ).stdout.strip()
    return Context(
        ws=ws,
        has_origin=has_origin,
        default_ref=default_ref,
        base_branch=default_ref.removeprefix("origin/"),
        default_sha=default_sha,
        original=head or git.out(root, "rev-parse", "HEAD"),
        identity=_bot_identity(root),
        forge=_forge(root, has_origin),
        git_token=tags.token_from_env(),
    )


def unit_texts(ws: Workspace, tree: Tree) -> list[UnitText]:
    """Every unit with its own file and the .hcl files it reads, as text."""
    model = ws.model(tree)
    out = []
    for path in model.order:
        unit = model.units[path]
        unit_file = f"{path}/terragrunt.hcl"
        files = []
        for name in [unit_file, *(r for r in unit.reads if r.endswith(".hcl") and r != unit_file)]:
            try:
                files.append((name, tree.read(name).decode("utf-8", "surrogateescape")))
            except ToolingError:
                continue
        out.append(UnitText(path, unit.tier, tuple(files), unit.source))
    return out


def discover(
    env: Mapping[str, str], token: tags.Token | None, pins: Sequence[Pin]
) -> dict[str, RepoTags]:
    urls: dict[str, str] = {}
    for pin in pins:
        urls.setdefault(pin.identity, pin.url)
    return tags.discover(urls, env, token)


# --------------------------------------------------------------------------- changelog


def read_changelog(ctx: Context, plan: BumpPlan) -> Changelog:
    """What changed between the oldest pinned version and the target, from the module repository."""
    if plan.url not in ctx.fetched:  # once per repository per run, failures included
        try:
            ctx.fetched[plan.url] = tags.fetch(
                plan.url, ctx.ws.cache_dir, ctx.module_env, ctx.git_token
            )
        except ToolingError as exc:
            ctx.fetched[plan.url] = str(exc)
    repo = ctx.fetched[plan.url]
    if isinstance(repo, str):
        return Changelog(error=repo)
    target = parse_version(plan.target.name)
    old = plan.oldest
    if target is None:  # pragma: no cover - plans only target version tags
        return Changelog(error=f"{plan.target.name} is not a version")

    def run(*args: str, ok: Sequence[int] = (0,)) -> proc.Result:
        return git.git(repo, *args, ok_codes=ok)

    in_range = sorted(
        (v for v in (parse_version(t) for t in plan.tags) if v is not None),
        key=lambda v: v.precedence(),
    )
    in_range = [v for v in in_range if v.prefix == target.prefix and old < v and v <= target]
    messages = git.parse_tag_messages(
        run(
            "for-each-ref",
            "--format=%(refname:strip=2)%00%(objecttype)%00%(contents:subject)%0a%0a%(contents:body)%1e",
            "refs/tags",
        ).stdout
    )
    tag_messages = tuple((v.text, messages[v.text]) for v in in_range if v.text in messages)
    subjects: tuple[str, ...] = ()
    if not tag_messages:
        old_tag = plan.tags.get(old.text)
        rev = [f"{old_tag.commit}..{plan.target.commit}"] if old_tag else [plan.target.commit]
        log = run("log", "--no-merges", "--format=%s", "--max-count=50", *rev, ok=(0, 128))
        subjects = tuple(line for line in log.stdout.splitlines() if line.strip())
    section: str | None = None
    found_path: str | None = None
    subdirs = sorted({c.pin.source.subdir for c in plan.changes if c.pin.source.subdir})
    for candidate in [*(f"{s}/CHANGELOG.md" for s in subdirs), "CHANGELOG.md"]:
        shown = run("show", f"{plan.target.commit}:{candidate}", ok=(0, 128))
        if shown.returncode == 0:
            section = changelog_sections(shown.stdout, old, target)
            if section:
                found_path = f"{candidate} at {plan.target.name}"
                break
    return Changelog(tag_messages, subjects, section, found_path)


# --------------------------------------------------------------------------- converge


@dataclass(frozen=True)
class Outcome:
    plan: BumpPlan
    #: opened | updated | committed | skipped | failed
    status: str
    detail: str
    pr_number: int | None = None
    pr_url: str | None = None
    commit: str | None = None
    title: str = ""
    body: str = ""


def _read_text(path: Path) -> str:
    return path.read_bytes().decode("utf-8", "surrogateescape")


def _write_text(path: Path, text: str) -> None:
    path.write_bytes(text.encode("utf-8", "surrogateescape"))


def _redact(text: str, token: tags.Token | None) -> str:
    return token.redact(text) if token else text


def lock_platforms(ws: Workspace) -> tuple[str, ...]:
    """The platforms lock files cover: every executor's (policy.toml ``[executors.*] platforms``)."""
    return executors.lock_platforms(ws.policy.executors)


def refresh_locks(ctx: Context, plan: BumpPlan) -> list[LockChange]:
    """Run ``terragrunt providers lock`` in every bumped unit, with its new module source.

    Called on the bump branch after the refs were edited: Terragrunt downloads the
    new version of the module and OpenTofu rewrites the unit's lock file for
    every executor's platform. A unit that cannot be locked fails the bump (its
    lock file is put back as it was, and the ones this run added are removed:
    the caller's ``git reset --hard`` restores the tracked ones); a lock file that records no provider and
    did not exist before is not added. Returns what changed, per provider.
    """
    ws = ctx.ws
    platforms = lock_platforms(ws)
    args = terragrunt.providers_lock_args(platforms, ws.settings.provider_mirror)
    # Terragrunt downloads the module with git: the same token, for the same host only
    env = tags.auth_env(plan.url, terragrunt.lock_env(ws.tool_env), ctx.git_token)
    changes: list[LockChange] = []
    created: list[
        Path
    ] = []  # lock files this run added: a failure removes them (git keeps the rest)
    for unit in sorted({c.pin.unit for c in plan.changes}):
        path = ws.root / lock_path(unit)
        old = _read_text(path) if path.is_file() else None
        # a working copy of its own, removed after: the unit's .terragrunt-cache is left as it
        # was (initialised without a backend, it would make the next plan there fail)
        scratch = ws.root / ".iac" / "lock-work" / unit
        shutil.rmtree(scratch, ignore_errors=True)
        try:
            ran = terragrunt.run(args, ws.root / unit, {**env, "TG_DOWNLOAD_DIR": str(scratch)})
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        if ran.returncode != 0:
            if old is None:
                path.unlink(missing_ok=True)
            else:
                _write_text(path, old)
            for added in created:
                added.unlink(missing_ok=True)
            raise ToolingError(
                f"{lock_path(unit)}: cannot lock the providers of {plan.module} {plan.target.name} "
                f"(`{lock_command(platforms)}` in {unit} failed): "
                f"{_redact(terragrunt.error_summary(ran.stderr or ran.stdout), ctx.git_token)}\n"
                "The bump is not committed. Make the providers the new version requires "
                "installable for every platform (policy.toml [executors.*] platforms; "
                "IAC_PROVIDER_MIRROR for a provider mirror), then run the bump again."
            )
        new = _read_text(path) if path.is_file() else None
        if old is None and new is not None and not parse_lock(new):
            path.unlink()  # nothing to lock: no empty file beside a unit without providers
            new = None
        if old is None and new is not None:
            created.append(path)
        changes.extend(lock_changes(unit, old, new))
    return changes


def converge(ctx: Context, plan: BumpPlan, log: Changelog, *, reopen_closed: bool) -> Outcome:
    """Make the branch and pull request for ``plan`` exist and be current.

    Leaves the bump branch checked out when it committed (the caller moves
    back); raises :class:`ToolingError` on a failure to act on.
    """
    branch = plan.branch
    pull: JSONObject | None = None
    if ctx.forge is not None:
        pull = ctx.forge.find_pull(branch, "all")
        if pull is not None and pull.get("state") == "closed":
            number = pull.get("number")
            if pull.get("merged_at") and not reopen_closed:
                return Outcome(
                    plan, "skipped", f"#{number} from {branch} was merged already; not reopened"
                )
            if not reopen_closed:
                return Outcome(
                    plan,
                    "skipped",
                    f"#{number} ({plan.target.name}) was closed without merging: not reopened for "
                    f"this version; a newer release gets a new pull request",
                )
            pull = None  # asked for by name (bump-module): a new pull request from that branch
    remote_sha = (
        git.commit_sha(ctx.ws.root, f"refs/remotes/origin/{branch}") if ctx.has_origin else None
    )
    local_sha = git.commit_sha(ctx.ws.root, f"refs/heads/{branch}")
    for sha, where in ((remote_sha, f"origin/{branch}"), (local_sha, branch)):
        foreign = ctx.foreign_authors(sha) if sha else []
        if foreign:
            return Outcome(
                plan,
                "skipped",
                f"{where} carries commits by {', '.join(foreign)} (not the bot, "
                f"{ctx.identity.email}): not rebuilt nor force-pushed. Land or move that work, "
                "or delete the branch, and run again",
            )

    git.git(ctx.ws.root, "checkout", "--quiet", "--no-track", "-B", branch, ctx.default_sha)
    texts = {f: _read_text(ctx.ws.root / f) for f in plan.files}
    for file, text in apply_changes(texts, plan.changes).items():
        _write_text(ctx.ws.root / file, text)
    locks = refresh_locks(ctx, plan)
    lock_files = sorted({lock_path(c.unit) for c in locks})
    title = pr_title(plan)
    body = pr_body(plan, log, locks, lock_platforms(ctx.ws))
    git.git(ctx.ws.root, "add", "--all", "--", *plan.files, *lock_files)
    git.git(
        ctx.ws.root,
        "commit",
        "--quiet",
        "-m",
        commit_message(plan, locks),
        env=ctx.identity.env(),
    )
    commit = git.out(ctx.ws.root, "rev-parse", "HEAD")
    if ctx.forge is None:
        return Outcome(
            plan,
            "committed",
            f"committed {commit[:12]} on {branch}",
            commit=commit,
            title=title,
            body=body,
        )

    if not ctx.has_origin:
        raise ToolingError("there is no remote named origin to push the bump branch to")
    same = remote_sha is not None and _same_change(ctx, remote_sha, commit)
    if same:
        # identical content on the same base: keep the pushed commit, do not push
        git.git(ctx.ws.root, "reset", "--quiet", "--hard", str(remote_sha))
        commit = str(remote_sha)
    else:
        git.git(
            ctx.ws.root,
            "push",
            "--quiet",
            f"--force-with-lease=refs/heads/{branch}:{remote_sha or ''}",
            "origin",
            f"refs/heads/{branch}:refs/heads/{branch}",
        )
    if pull is not None:
        pr = ctx.forge.update_pull(int(pull["number"]), title=title, body=body)
        status = "updated"
    else:
        pr = ctx.forge.create_pull(title, body, head=branch, base=ctx.base_branch)
        status = "opened"
    number = int(pr["number"])
    ctx.forge.add_labels(number, MAJOR_LABELS if plan.major else LABELS)
    pushed = "branch already current" if same else "pushed"
    return Outcome(
        plan,
        status,
        f"{pushed}; {status} #{number}",
        pr_number=number,
        pr_url=str(pr.get("html_url") or ""),
        commit=commit,
        title=title,
        body=body,
    )


def _same_change(ctx: Context, remote_sha: str, commit: str) -> bool:
    """The remote branch is one commit on the current default branch with our tree."""
    out = git.git(
        ctx.ws.root,
        "rev-parse",
        f"{remote_sha}^{{tree}}",
        f"{commit}^{{tree}}",
        f"{remote_sha}^",
        ok_codes=(0, 128),
    ).stdout.split()
    return len(out) == 3 and out[0] == out[1] and out[2] == ctx.default_sha


def recover(ctx: Context) -> None:
    """After a failure mid-way: drop our edits (the tree was clean) and go back."""
    git.git(ctx.ws.root, "reset", "--quiet", "--hard", ok_codes=(0, 128))
    git.git(ctx.ws.root, "checkout", "--quiet", ctx.original, ok_codes=(0, 1, 128))


def close_superseded(ctx: Context, plan: BumpPlan, number: int) -> list[int]:
    """Close open bump pull requests of the same release stream for older versions."""
    if ctx.forge is None:
        return []
    prefix = f"bump/{plan.module}-"
    target = parse_version(plan.target.name)
    if target is None:  # pragma: no cover
        return []
    pinned_major = max(c.pin.current.major for c in plan.changes)
    names = git.out(
        ctx.ws.root, "for-each-ref", "--format=%(refname:strip=3)", f"refs/remotes/origin/{prefix}*"
    ).split()
    closed = []
    for name in names:
        if name == plan.branch or not name.startswith(prefix):
            continue
        version = parse_version(name[len(prefix) :])
        if version is None or version.prefix != target.prefix or not version < target:
            continue
        superseded = version.major > pinned_major if plan.major else version.major == target.major
        if not superseded:
            continue
        pull = ctx.forge.find_pull(name, "open")
        if pull is None:
            continue
        old = int(pull["number"])
        ctx.forge.comment(old, f"Superseded by #{number} ({plan.module} {plan.target.name}).")
        ctx.forge.update_pull(old, state="closed")
        closed.append(old)
    return closed
