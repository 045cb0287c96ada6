"""JSON too deep for Python's parser (it recurses, and stops near 1,000 levels) made parseable.

Only used after ``json.loads`` has given up: values nested deeper than ``keep`` levels are cut
out and replaced by ``null``, so the frame can still be read far enough to answer it (a view's
message that deep is then refused by the view's own depth rule, max_view_message_depth).
"""

from __future__ import annotations

CUT_DEPTH = 256


def cut_deep(text: str, keep: int = CUT_DEPTH) -> str:
    """``text`` with every array or object that opens below depth ``keep`` replaced by ``null``.
    Not a validator: whatever is not JSON stays not JSON."""
    out: list[str] = []
    depth = 0
    start = 0  # where the text not yet copied begins
    cut_from = -1  # where the value being cut began, or -1
    in_string = escaped = False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth == keep + 1 and cut_from < 0:
                out.append(text[start:i])
                cut_from = i
        elif ch in "]}":
            if depth == keep + 1 and cut_from >= 0:
                out.append("null")
                start, cut_from = i + 1, -1
            depth -= 1
    out.append(text[start:] if cut_from < 0 else "null")
    return "".join(out)
