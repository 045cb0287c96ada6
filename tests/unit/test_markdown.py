"""The model's markdown becomes safe HTML on the server."""

from mcp_apps_host.chat.markdown import render_markdown


def test_formatting_survives():
    html = render_markdown("# T\n**b** `c`\n\n| a | b |\n|:--|--:|\n| 1 | 2 |\n\n```py\nx = 1\n```")
    assert "<h1>T</h1>" in html and "<strong>b</strong>" in html and "<code>c</code>" in html
    assert '<th style="text-align:left">a</th>' in html and '<code class="language-py">' in html


def test_scripts_handlers_and_bad_links_are_removed():
    html = render_markdown('<script>alert(1)</script> <img src=x onerror=alert(1)> [x](javascript:alert(1)) '
                           '[y](https://example.com) <td style="position:fixed">')
    assert "<script" not in html and "<img" not in html and "href=\"javascript" not in html  # raw HTML stays text
    assert "<td" not in html
    assert '<a href="https://example.com" target="_blank" rel="noopener noreferrer nofollow">y</a>' in html
