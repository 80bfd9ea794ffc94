"""The sandbox catalog: stand-in modules built into tagged local git repositories.

The stand-ins ship with the tooling (``tooling/sandbox_catalog/<repo>/<tag>/``,
each tag folder holding the repository's whole content at that tag, and
``tags.txt`` giving the order and the annotated tag messages). They use only
OpenTofu's built-in ``terraform_data``, so plans need no provider download.

:func:`build` turns them into one git repository per module (a commit and an
annotated tag per version) under the cache, keyed by a hash of the stand-ins so
an unchanged catalog is never rebuilt. :func:`rewrites` maps the module URLs the
units pin onto those repositories, through git's ``url.<base>.insteadOf``: the
units keep their real URLs and refs, and every git client (Terragrunt's
go-getter, ``git ls-remote`` in the bump tooling) sees the sandbox.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tooling.errors import ToolingError
from tooling.io import git

CATALOG = Path(__file__).resolve().parent.parent / "sandbox_catalog"
_FIXED_DATE = "2025-01-01T00:00:00+00:00"
#: bump when the way repositories are built changes, so old builds are not reused
_BUILD_FORMAT = b"sandbox-build-2"


@dataclass(frozen=True)
class Release:
    """One tag of a stand-in repository and its annotated message."""

    tag: str
    message: str


def releases(repo_dir: Path) -> list[Release]:
    """The tags of one stand-in repository, oldest first, from its ``tags.txt``."""
    path = repo_dir / "tags.txt"
    out = []
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        tag, sep, message = line.partition("\t")
        if not sep or not (repo_dir / tag).is_dir():
            raise ToolingError(
                f"{path}:{lineno}: expected '<tag><TAB><message>' with a folder {tag}/"
            )
        out.append(Release(tag, message.strip()))
    return out


def catalog_repos(catalog: Path = CATALOG) -> list[str]:
    return sorted(p.name for p in catalog.iterdir() if (p / "tags.txt").is_file())


def fingerprint(catalog: Path = CATALOG) -> str:
    import hashlib  # here: every task's first line lists the catalog, few build it

    digest = hashlib.sha256(_BUILD_FORMAT)
    for path in sorted(catalog.rglob("*")):
        if path.is_file():
            digest.update(path.relative_to(catalog).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _git(cwd: Path, *args: str) -> None:
    env = {
        "GIT_AUTHOR_NAME": "Sandbox Catalog",
        "GIT_AUTHOR_EMAIL": "sandbox@example.invalid",
        "GIT_COMMITTER_NAME": "Sandbox Catalog",
        "GIT_COMMITTER_EMAIL": "sandbox@example.invalid",
        "GIT_AUTHOR_DATE": _FIXED_DATE,
        "GIT_COMMITTER_DATE": _FIXED_DATE,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_SYSTEM": os.devnull,
    }
    git.git(cwd, *args, env=env)


def build_repo(src: Path, dest: Path, tags: Iterable[Release] | None = None) -> None:
    """Build one tagged repository at ``dest`` from the stand-in folder ``src``."""
    dest.mkdir(parents=True)
    _git(dest, "init", "--quiet", "--initial-branch=main")
    for release in tags if tags is not None else releases(src):
        for child in dest.iterdir():
            if child.name != ".git":
                shutil.rmtree(child) if child.is_dir() else child.unlink()
        shutil.copytree(src / release.tag, dest, dirs_exist_ok=True, copy_function=shutil.copyfile)
        # Rebuild the index from the work tree: copied files can keep the size
        # and mtime of the previous tag's files, and git's stat cache would
        # then miss the change.
        (dest / ".git" / "index").unlink(missing_ok=True)
        _git(dest, "add", "--all")
        _git(
            dest,
            "commit",
            "--quiet",
            "--allow-empty",
            "-m",
            f"release {release.tag}\n\n{release.message}",
        )
        _git(dest, "tag", "-a", release.tag, "-m", release.message)


def build(cache_dir: Path, catalog: Path = CATALOG) -> Path:
    """Build (once per catalog content) every stand-in repository; return their folder."""
    target = cache_dir / "sandbox" / fingerprint(catalog)
    if (target / ".complete").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".building-", dir=target.parent))
    try:
        for name in catalog_repos(catalog):
            build_repo(catalog / name, staging / f"{name}.git")
        (staging / ".complete").write_text("")
        try:
            os.replace(staging, target)
        except OSError:
            if not (target / ".complete").exists():  # lost a race with nobody: a real error
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def rewrites(sources: Iterable[str], built: Path) -> tuple[tuple[str, str], ...]:
    """``(url_prefix, file_url)`` pairs mapping each pinned repository onto the sandbox.

    A source like ``git::https://host/org/terraform-dns.git//sub?ref=v1`` maps
    ``https://host/org/terraform-dns.git`` to the built ``terraform-dns.git``, and
    every other repository of the catalog under ``https://host/org/`` alike: a unit
    the model cannot evaluate (its source unknown) still fetches from the sandbox,
    never from a host that does not exist, and the working-copy check refuses it
    saying why. Repositories the catalog does not have are left alone.
    """
    available = sorted(p.name for p in built.iterdir() if p.name.endswith(".git"))
    pairs: dict[str, str] = {}
    for source in sources:
        url = source.removeprefix("git::").split("?", 1)[0]
        scheme_end = url.find("://")
        sub = url.find("//", scheme_end + 3 if scheme_end >= 0 else 0)
        repo_url = (url[:sub] if sub >= 0 else url).rstrip("/")
        cut = max(repo_url.rfind("/"), repo_url.rfind(":")) + 1  # org/ or host: (scp form)
        org, name = repo_url[:cut], repo_url[cut:]
        if (name if name.endswith(".git") else name + ".git") not in available:
            continue
        suffix = ".git" if repo_url.endswith(".git") else ""
        for repo in available:
            pairs[f"{org}{repo.removesuffix('.git')}{suffix}"] = (built / repo).as_uri()
    return tuple(sorted(pairs.items()))
