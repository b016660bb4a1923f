"""The docs site's MkDocs hook (mkdocs.yml `hooks:`): a Chinese page's heading anchors, written so that
GitHub shows them too.

GitHub, where README.zh-CN.md sends Chinese readers, ignores attr_list: a heading `## 版本线 {#the-lines}`
shows `{#the-lines}` as text, and its anchor is GitHub's slug of the whole line. So a Chinese page puts the
anchor on the line before its heading, as HTML, which GitHub keeps (as `user-content-the-lines`, and its
page script scrolls `#the-lines` there):

    <a id="the-lines"></a>
    ## 版本线

Before MkDocs renders a page, this hook folds each such pair back into `## 版本线 {#the-lines}`: on the site
the heading itself carries the id, exactly as before, so its permalink, the table of contents and MkDocs'
anchor validation all use the English id, and a link to `page.md#the-lines` (or `page.zh.md#the-lines`)
lands in both languages. A code block is left as it is."""

from __future__ import annotations

import re
from typing import Any

# The anchor line, then the heading on the very next line.
ANCHORED_HEADING = re.compile(r'^<a id="([\w-]+)"></a>\n(#{1,6} [^\n]+?)[ \t]*$', re.MULTILINE)
FENCE = re.compile(r"^ *```.*?^ *```[^\n]*$", re.MULTILINE | re.DOTALL)


def fold_anchors(markdown: str) -> str:
    """`markdown` with each `<a id="x"></a>` line and the heading below it made one heading `... {#x}`."""
    pieces, last = [], 0
    for fence in FENCE.finditer(markdown):
        pieces += [ANCHORED_HEADING.sub(r"\2 {#\1}", markdown[last:fence.start()]), fence.group(0)]
        last = fence.end()
    return "".join([*pieces, ANCHORED_HEADING.sub(r"\2 {#\1}", markdown[last:])])


def on_page_markdown(markdown: str, **_: Any) -> str:
    return fold_anchors(markdown)
