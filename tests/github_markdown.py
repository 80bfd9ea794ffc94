"""A comment rendered as GitHub renders it, for the tests that read the HTML and the
screenshots that show it.

GitHub parses a comment with cmark-gfm (``cmarkgfm`` here): its extensions (tables,
strikethrough, autolinks, the tag filter, task lists), a fenced block's language on
``<pre lang=...>``, and raw HTML kept (the report's ``<details>`` and ``<summary>``).
Alerts (``> [!WARNING]`` and the other four) are a step GitHub runs after cmark-gfm:
:func:`alerts` does it. :data:`PAGE` wraps the HTML in a page styled like GitHub's
``markdown-body`` (light theme, Primer colours), for headless Chromium.
"""

from __future__ import annotations

import re

import cmarkgfm
from cmarkgfm.cmark import Options

#: GitHub's five alert kinds, in the order its documentation lists them
ALERT_KINDS = ("note", "tip", "important", "warning", "caution")

#: a blockquote whose first paragraph starts with a marker alone on its line
_ALERT = re.compile(
    r"<blockquote>\n<p>\[!(" + "|".join(ALERT_KINDS) + r")\](?:\n|(?=</p>))", re.IGNORECASE
)
_QUOTE_TAG = re.compile(r"<(/?)blockquote>")


def _closing(html: str, start: int) -> tuple[int, int]:
    """Where the blockquote open before ``start`` closes: its ``</blockquote>``'s span."""
    depth = 1
    for tag in _QUOTE_TAG.finditer(html, start):
        depth += -1 if tag[1] else 1
        if depth == 0:
            return tag.span()
    return len(html), len(html)  # cmark-gfm closes every blockquote; never reached


def alerts(html: str) -> str:
    """GitHub's alerts: ``<blockquote><p>[!WARNING]…`` becomes a ``markdown-alert`` div
    titled "Warning", the marker's line dropped (and its paragraph, when the marker was
    all of it). A blockquote inside an alert stays a blockquote, as on GitHub."""
    out, pos = [], 0
    while found := _ALERT.search(html, pos):
        close, after = _closing(html, found.end())
        kind = found[1].lower()
        body = "<p>" + html[found.end() : close]
        body = body.removeprefix("<p></p>\n")
        out += [
            html[pos : found.start()],
            f'<div class="markdown-alert markdown-alert-{kind}">'
            f'<p class="markdown-alert-title">{kind.capitalize()}</p>\n{body}</div>',
        ]
        pos = after
    return "".join([*out, html[pos:]])


def render(text: str) -> str:
    """``text`` (markdown) as the HTML GitHub makes of a comment."""
    html = cmarkgfm.github_flavored_markdown_to_html(text, options=Options.CMARK_OPT_UNSAFE)
    return alerts(html)


#: the page around the HTML: GitHub's ``markdown-body`` in a comment (14px, light
#: theme), its tables, code, blockquotes and alerts in Primer's colours
PAGE = """<!doctype html><html><head><meta charset="utf-8"><style>
body {{ margin: 0; background: #ffffff; }}
.markdown-body {{ box-sizing: border-box; max-width: 1000px; margin: 0 auto; padding: 16px;
  font-family: -apple-system, BlinkMacSystemFont, "Segoe UI", "Noto Sans", Helvetica, Arial,
    sans-serif, "Apple Color Emoji", "Segoe UI Emoji", "Noto Color Emoji";
  font-size: 14px; line-height: 1.5; color: #1f2328; word-wrap: break-word; }}
.markdown-body > :first-child {{ margin-top: 0 !important; }}
.markdown-body p, .markdown-body blockquote, .markdown-body ul, .markdown-body ol,
.markdown-body table, .markdown-body pre, .markdown-body details,
.markdown-body .markdown-alert {{ margin-top: 0; margin-bottom: 16px; }}
.markdown-body strong, .markdown-body b {{ font-weight: 600; }}
.markdown-body a {{ color: #0969da; text-decoration: none; }}
.markdown-body ul, .markdown-body ol {{ padding-left: 2em; }}
.markdown-body li + li {{ margin-top: 0.25em; }}
.markdown-body code, .markdown-body pre {{
  font-family: ui-monospace, SFMono-Regular, "SF Mono", Menlo, Consolas, "Liberation Mono",
    monospace; }}
.markdown-body code {{ padding: 0.2em 0.4em; margin: 0; font-size: 85%;
  white-space: break-spaces; background: rgba(129, 139, 152, 0.12); border-radius: 6px; }}
.markdown-body pre {{ padding: 16px; overflow: auto; font-size: 85%; line-height: 1.45;
  background: #f6f8fa; border-radius: 6px; }}
.markdown-body pre code {{ padding: 0; font-size: 100%; white-space: pre;
  background: transparent; }}
.markdown-body blockquote {{ margin-left: 0; margin-right: 0; padding: 0 1em;
  color: #59636e; border-left: 0.25em solid #d1d9e0; }}
.markdown-body table {{ display: block; width: max-content; max-width: 100%; overflow: auto;
  border-spacing: 0; border-collapse: collapse; }}
.markdown-body table th {{ font-weight: 600; }}
.markdown-body table th, .markdown-body table td {{ padding: 6px 13px;
  border: 1px solid #d1d9e0; }}
.markdown-body table tr {{ background: #ffffff; border-top: 1px solid #d1d9e0b3; }}
.markdown-body table tr:nth-child(2n) {{ background: #f6f8fa; }}
.markdown-body details summary {{ cursor: pointer; display: list-item; }}
.markdown-body .markdown-alert {{ padding: 0.5rem 1rem; color: inherit;
  border-left: 0.25em solid #d1d9e0; }}
.markdown-body .markdown-alert > :first-child {{ margin-top: 0; }}
.markdown-body .markdown-alert > :last-child {{ margin-bottom: 0; }}
.markdown-body .markdown-alert .markdown-alert-title {{ display: flex; align-items: center;
  font-weight: 500; line-height: 1; }}
.markdown-alert-note {{ border-left-color: #0969da !important; }}
.markdown-alert-note .markdown-alert-title {{ color: #0969da; }}
.markdown-alert-tip {{ border-left-color: #1a7f37 !important; }}
.markdown-alert-tip .markdown-alert-title {{ color: #1a7f37; }}
.markdown-alert-important {{ border-left-color: #8250df !important; }}
.markdown-alert-important .markdown-alert-title {{ color: #8250df; }}
.markdown-alert-warning {{ border-left-color: #9a6700 !important; }}
.markdown-alert-warning .markdown-alert-title {{ color: #9a6700; }}
.markdown-alert-caution {{ border-left-color: #cf222e !important; }}
.markdown-alert-caution .markdown-alert-title {{ color: #cf222e; }}
</style></head><body><article class="markdown-body">
{body}
</article></body></html>
"""
