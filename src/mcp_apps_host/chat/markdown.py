"""The model's markdown as safe HTML: rendered with markdown-it, then sanitised with nh3.

Rendering happens on the server so the page never has to trust model output:
raw HTML in the markdown is not rendered, and the sanitiser keeps only plain
formatting tags and http(s)/mailto links (opened in a new tab, without referrer).
"""

from __future__ import annotations

import nh3
from markdown_it import MarkdownIt

_md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table").enable("strikethrough")

_TAGS = {
    "p", "br", "hr", "strong", "em", "del", "code", "pre", "blockquote", "ul", "ol", "li", "a",
    "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td",
}


def render_markdown(text: str) -> str:
    html = _md.render(text)
    return nh3.clean(
        html,
        tags=_TAGS,
        attributes={"a": {"href", "title"}, "th": {"style"}, "td": {"style"}, "code": {"class"}},
        filter_style_properties={"text-align"},  # table column alignment, nothing else
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
        set_tag_attribute_values={"a": {"target": "_blank"}},
    )
