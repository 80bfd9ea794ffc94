"""What a reviewer reads in ``comment.md``: the run's settings, mock outputs, grouped gates.

The pure parts are table tests over :mod:`tooling.core.report.comment`; the screenshot
test renders a real plan's report as GitHub would (cmark-gfm and GitHub's alerts,
tests/github_markdown.py) and looks at it in headless Chromium.
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import zlib
from itertools import accumulate
from pathlib import Path

import pytest
from github_markdown import PAGE, render
from infra_fixtures import invoke, make_example_repo

from tooling.core.plan.planjson import COUNT_KEYS, PlanSummary, ResourceChange
from tooling.core.plan.results import Result
from tooling.core.plan.summary import PlannedAgainst
from tooling.core.report import comment

EMBEDDED = PlannedAgainst.from_json(
    {
        "module_sources": "sandbox",
        "state": "local",
        "embedded_default": True,
        "description": "using sandbox module catalog, local state under .iac/state/ (embedded default)",
    }
)
REMOTE = PlannedAgainst.from_json(
    {
        "module_sources": "remote",
        "state": "s3",
        "embedded_default": False,
        "description": "using remote module repositories, S3 state in s3://tf-state",
    }
)


def _result(path: str, *, mocked: tuple[str, ...] = ()) -> Result:
    counts = dict.fromkeys(COUNT_KEYS, 0)
    counts["create"] = 1
    change = ResourceChange(f'terraform_data.vm["{path}"]', "terraform_data", "create")
    return Result(
        path=path,
        tier="cluster",
        executor="lan",
        change="all",
        status="changes",
        counts=counts,
        summary=PlanSummary(counts, (change,)),
        mocked_dependencies=mocked,
    )


def test_the_report_says_when_the_run_used_the_embedded_default() -> None:
    results = [_result("live/cluster/os")]
    text = comment.render(results, head="a" * 40, settings=EMBEDDED)
    assert "Planned on the **embedded default**" in text
    assert "sandbox catalog, local state" in text
    header = text.split("| unit |")[0]
    assert "embedded default" in header  # in the header, before the table


def test_the_report_names_real_settings_without_the_embedded_default_note() -> None:
    results = [_result("live/cluster/os")]
    text = comment.render(results, head="a" * 40, settings=REMOTE)
    assert "embedded default" not in text
    assert "Planned against: remote module repositories, S3 state in s3://tf-state." in text


def test_units_planned_against_mock_outputs_are_marked_with_the_mocked_dependency() -> None:
    vms = _result("live/cluster/vms", mocked=("live/cluster/network",))
    results = [_result("live/cluster/network"), vms]

    text = comment.render(results, head="a" * 40, settings=EMBEDDED)

    note = text.split("**Planned against mock outputs**")[1].split("\n\n")[0]
    assert "re-planned against the real outputs after its upstream applies" in note
    assert "> - `live/cluster/vms`: mocked `live/cluster/network`" in note
    assert "`live/cluster/network`:" not in note  # only the mocked unit is listed
    row = next(line for line in text.splitlines() if line.startswith("| `live/cluster/vms`"))
    assert "(mock inputs)" in row
    details = text.split("<code>live/cluster/vms</code>")[1].split("</details>")[0]
    assert "Planned against the **mock outputs** of `live/cluster/network`" in details
    assert "re-planned against the real outputs after the upstream applies" in details


def test_no_mock_note_when_every_unit_had_real_outputs() -> None:
    results = [_result("live/cluster/network")]
    text = comment.render(results, head="a" * 40, settings=EMBEDDED)
    assert "mock" not in text


# --------------------------------------------------------------------------- the screenshot


def _png_pixels(png: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and the unfiltered rows of an 8-bit RGB(A) PNG (Chromium writes those)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width, height, channels = 8, b"", 0, 0, 0
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind, data = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", data[:10])
            assert depth == 8 and color in (2, 6), (depth, color)
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += data
    raw = zlib.decompress(idat)
    stride = width * channels
    # "Up", most of Chromium's rows, adds the row above byte by byte: one sum of two
    # integers as wide as the row, each byte's carry kept inside it by the masks
    low = int.from_bytes(b"\x7f" * stride, "big")
    high = int.from_bytes(b"\x80" * stride, "big")
    rows: list[bytes] = []
    prev = bytes(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], raw[start + 1 : start + 1 + stride]
        if kind == 2:
            a, b = int.from_bytes(line, "big"), int.from_bytes(prev, "big")
            line = (((a & low) + (b & low)) ^ ((a ^ b) & high)).to_bytes(stride, "big")
        elif kind == 1:  # "Sub": a running sum along each channel
            out = bytearray(line)
            for c in range(channels):
                out[c::channels] = bytes(map((0xFF).__and__, accumulate(line[c::channels])))
            line = bytes(out)
        elif kind in (3, 4):  # "Average" and "Paeth" read the byte just decoded: one at a time
            out = bytearray(line)
            for i in range(stride):
                left = out[i - channels] if i >= channels else 0
                up, corner = prev[i], prev[i - channels] if i >= channels else 0
                if kind == 3:
                    out[i] = (out[i] + (left + up) // 2) & 0xFF
                else:
                    p = left + up - corner
                    pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                    pred = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                    out[i] = (out[i] + pred) & 0xFF
            line = bytes(out)
        rows.append(line)
        prev = line
    return width, height, rows


def _png(width: int, channels: int, rows: list[bytes], filters: list[int]) -> bytes:
    """An 8-bit RGB(A) PNG of ``rows``, each row filtered as ``filters`` says (0 to 4),
    written byte by byte as the PNG specification defines the filters."""

    def paeth(left: int, up: int, corner: int) -> int:
        p = left + up - corner
        pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
        return left if pa <= pb and pa <= pc else up if pb <= pc else corner

    stream, prev = b"", bytes(len(rows[0]))
    for row, kind in zip(rows, filters, strict=True):
        out = bytearray()
        for i, value in enumerate(row):
            left = row[i - channels] if i >= channels else 0
            up, corner = prev[i], prev[i - channels] if i >= channels else 0
            pred = [0, left, up, (left + up) // 2, paeth(left, up, corner)][kind]
            out.append((value - pred) & 0xFF)
        stream += bytes([kind]) + bytes(out)
        prev = row

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", width, len(rows), 8, 2 if channels == 3 else 6, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(stream))
        + chunk(b"IEND", b"")
    )


@pytest.mark.parametrize("channels", [3, 4])
def test_the_screenshot_reader_undoes_each_png_filter(channels: int) -> None:
    width = 37
    # bytes near 0 and 255 next to each other, so every sum and predictor wraps somewhere
    rows = [
        bytes(
            (i * 97 + y * 131 + (255 if (i + y) % 3 else 0)) % 256 for i in range(width * channels)
        )
        for y in range(12)
    ]
    filters = [0, 1, 2, 3, 4, 2, 2, 4, 3, 1, 0, 4]
    assert _png_pixels(_png(width, channels, rows, filters)) == (width, len(rows), rows)


def test_the_example_report_renders_in_headless_chromium(
    tmp_path: Path, tools: None, capsys: pytest.CaptureFixture[str]
) -> None:
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("chromium is not installed (./dev test installs it with apt-get as root)")
    repo = make_example_repo(tmp_path / "infra")
    out = tmp_path / "plans"
    ran = invoke(repo, "plan", "--all", "--out", str(out))
    assert ran.returncode == 0, ran.output
    comment = (out / "comment.md").read_text(encoding="utf-8")
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["settings"]["embedded_default"] is True
    html = render(comment)  # as GitHub renders it: raw <details> passed through
    assert html.count("<details>") == len(summary["units"]) + 1  # and the apply-order graph
    assert "<table>" in html and "<summary><code>live/cluster/vms</code>" in html
    assert "embedded default" in html
    page = tmp_path / "comment.html"
    page.write_text(PAGE.format(body=html), encoding="utf-8")
    shot = tmp_path / "comment.png"

    subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",  # root in a container has no user namespace for the sandbox
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1000,1200",
            f"--screenshot={shot}",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )

    png = shot.read_bytes()
    width, height, rows = _png_pixels(png)
    assert (width, height) == (1000, 1200)
    assert len(png) > 20_000  # a page of text, not an empty canvas
    colours = {row[i : i + 3] for row in rows[::8] for i in range(0, len(row), 3 * 16)}
    assert len(colours) > 8, "the screenshot is (nearly) uniform: nothing was rendered"
    blank_rows = sum(1 for row in rows if len(set(row)) == 1)
    assert blank_rows < height  # some rows carry text
    with capsys.disabled():
        print(f"\nreport screenshot: {shot}")
