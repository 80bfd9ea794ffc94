"""Installing a tool from its official release, verified against the published checksums.

:func:`download` fetches the checksum file and the release asset, checks the
asset's sha256, extracts the binary and checks that it reports the pinned
version, then moves it into place atomically. A release that cannot be had
(no network, no such asset, an unreadable checksum file) is not an error: it
returns False after one line saying why, and the installer builds from source.
A checksum mismatch is never fallen through: it raises.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tooling.errors import ToolingError
from tooling.io.ui import say
from tooling.model.tools import Archive, Tool, parse_checksums, release_asset

#: seconds for each network operation of a release download
DOWNLOAD_TIMEOUT = 15.0


class Unavailable(Exception):
    """A release download that cannot be used; the install falls through to a Go build."""


class Unreachable(Unavailable):
    """No release download is reachable (no network, DNS, refused connection)."""


class ChecksumMismatch(ToolingError):
    """A downloaded release that does not match its published checksum: never fall through."""


@contextmanager
def partial_dir(parent: Path) -> Iterator[Path]:
    """A scratch directory beside the final binary, so that ``os.replace`` is atomic."""
    import tempfile

    parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".partial-", dir=parent))
    try:
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _fetch(url: str, dest: Path) -> str:
    """Download ``url`` to ``dest``; return its sha256 (hex)."""
    import hashlib
    import urllib.error
    import urllib.request

    digest = hashlib.sha256()
    request = urllib.request.Request(url, headers={"User-Agent": "iac-tooling"})
    try:
        with (
            urllib.request.urlopen(request, timeout=DOWNLOAD_TIMEOUT) as response,
            dest.open("wb") as out,
        ):
            while chunk := response.read(1 << 20):
                digest.update(chunk)
                out.write(chunk)
    except urllib.error.HTTPError as exc:
        raise Unavailable(f"HTTP {exc.code} for {exc.url}") from exc
    except urllib.error.URLError as exc:
        # DNS failure, refused connection, no route: the network, not the release.
        # Say it in words ("Name or service not known"), not as "[Errno -2] ...".
        reason = exc.reason
        words = reason.strerror if isinstance(reason, OSError) and reason.strerror else reason
        raise Unreachable(f"{_host(url)}: {words}") from exc
    except TimeoutError as exc:
        raise Unreachable(f"{_host(url)}: no answer within {DOWNLOAD_TIMEOUT:.0f} s") from exc
    return digest.hexdigest()


def _host(url: str) -> str:
    from urllib.parse import urlsplit

    return urlsplit(url).netloc or url


def _extract(archive: Archive, downloaded: Path, binary: str, dest: Path) -> None:
    """Write the ``binary`` inside ``downloaded`` to ``dest``."""
    if archive == "raw":
        os.replace(downloaded, dest)
        return
    if archive == "zip":
        import zipfile

        with zipfile.ZipFile(downloaded) as zf:
            names = [n for n in zf.namelist() if n.removeprefix("./") == binary]
            if not names:
                raise Unavailable(f"{downloaded.name} holds no {binary}")
            with zf.open(names[0]) as src, dest.open("wb") as out:
                shutil.copyfileobj(src, out)
        return
    import tarfile

    with tarfile.open(downloaded, "r:gz") as tf:
        member = next(
            (m for m in tf.getmembers() if m.isfile() and m.name.removeprefix("./") == binary), None
        )
        extracted = tf.extractfile(member) if member else None
        if extracted is None:
            raise Unavailable(f"{downloaded.name} holds no {binary}")
        with extracted, dest.open("wb") as out:
            shutil.copyfileobj(extracted, out)


def download(
    tool: Tool,
    version: str,
    target: Path,
    *,
    platform: tuple[str, str],
    base_url: str,
    run_version: Callable[[Tool, Path], str],
) -> bool:
    """Install the official release at ``target``; False (after one line) if it cannot be had.

    ``run_version`` runs the extracted binary's version command: the binary is
    installed only if it reports ``version``.
    """
    import http.client

    label = f"{tool.binary} {version}"
    started = time.monotonic()
    asset = release_asset(tool.name, version, *platform, base_url=base_url)
    try:
        say(f"{label}: downloading the release {asset.url}")
        with partial_dir(target.parent) as scratch:
            sums_file = scratch / "checksums"
            _fetch(asset.checksums_url, sums_file)
            try:
                sums = parse_checksums(
                    sums_file.read_text(encoding="utf-8", errors="replace"), asset.checksums_url
                )
            except ToolingError as exc:
                raise Unavailable(str(exc)) from exc
            expected = sums.get(asset.filename)
            if expected is None:
                raise Unavailable(f"{asset.checksums_url} lists no {asset.filename}")
            downloaded = scratch / asset.filename
            actual = _fetch(asset.url, downloaded)
            if actual != expected:
                raise ChecksumMismatch(
                    f"{label}: checksum mismatch for {asset.url}: expected sha256 {expected}, "
                    f"got {actual}. The download is corrupt or was tampered with; nothing was "
                    f"installed. Run `invoke setup` again, and report it if it persists."
                )
            binary = scratch / f"{tool.binary}.new"
            _extract(asset.archive, downloaded, tool.binary, binary)
            binary.chmod(0o755)
            got = run_version(tool, binary)
            if got != version:
                raise Unavailable(f"{asset.url} holds {tool.binary} {got}, not {version}")
            os.replace(binary, target)
    except ChecksumMismatch:
        raise
    except Unreachable as exc:
        say(f"{label}: no release download reachable ({exc}); building from source")
        return False
    except (Unavailable, ToolingError, OSError, http.client.HTTPException) as exc:
        reason = str(exc) or type(exc).__name__
        say(f"{label}: the release download is unusable ({reason}); building from source")
        return False
    say(
        f"{label}: downloaded in {time.monotonic() - started:.0f} s, "
        f"verified against {asset.checksums_url}"
    )
    return True
