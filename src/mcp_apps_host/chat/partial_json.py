"""Best-effort reading of a JSON object that is still being streamed."""

from __future__ import annotations

import re
from typing import Any

import jiter

# A number cut off after ".", "e", "E" or its exponent sign: jiter drops it, which would make a
# value seen in the previous prefix vanish for one step. Parsing without that tail keeps it.
_INCOMPLETE_NUMBER_TAIL = re.compile(r"(?<=[0-9])(?:\.|[eE][+-]?)$")


def parse_partial_object(text: str) -> dict[str, Any] | None:
    """The object that `text` (a prefix of a JSON object) describes so far, or None.

    Unclosed strings, arrays and objects are closed; an unfinished literal or key is left out.
    Only objects count: anything else, or text that cannot be the start of JSON, gives None.
    Never raises.
    """
    if not isinstance(text, str) or not text.strip():
        return None
    candidate = text
    tail = _INCOMPLETE_NUMBER_TAIL.search(candidate)
    if tail is not None and not _ends_inside_string(candidate):
        candidate = candidate[: tail.start()]
    try:
        value = jiter.from_json(candidate.encode(), partial_mode="trailing-strings", allow_inf_nan=False)
    except Exception:  # jiter raises ValueError; anything else is a surprise we still must not leak
        return None
    return value if isinstance(value, dict) else None


def _ends_inside_string(text: str) -> bool:
    inside = False
    escaped = False
    for ch in text:
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = inside
        elif ch == '"':
            inside = not inside
    return inside
