from __future__ import annotations

import json
import random
from typing import Any

import pytest

from mcp_apps_host.chat.partial_json import parse_partial_object


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> set[tuple[Any, ...]]:
    """Every key path and list position in a value: what a view may already have shown."""
    found = {prefix}
    if isinstance(value, dict):
        for key, item in value.items():
            found |= paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found |= paths(item, (*prefix, i))
    return found


DOCS = [
    {
        "title": "Quarterly sales",
        "series": [
            {"name": "north", "points": [1, 2.5, -3e2, 4.25e-1]},
            {"name": 'south "quoted" \\ slash', "points": []},
        ],
        "options": {"stacked": True, "legend": None, "colors": ["#f00", "#0f0"]},
        "unicode": "café ✓ \u0001",
    },
    {"a": {"b": {"c": {"d": [[1, [2, [3]]], {"e": False}]}}}, "n": 12345678901234567890},
    {},
]


@pytest.mark.parametrize("doc", DOCS)
@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_growing_prefixes_give_monotonic_dicts(doc: dict[str, Any], ensure_ascii: bool) -> None:
    text = json.dumps(doc, ensure_ascii=ensure_ascii)
    previous: dict[str, Any] | None = None
    for end in range(1, len(text) + 1):
        parsed = parse_partial_object(text[:end])
        assert isinstance(parsed, dict), f"prefix {text[:end]!r} gave {parsed!r}"
        if previous is not None:
            lost = paths(previous) - paths(parsed)
            assert not lost, f"prefix {text[:end]!r} lost {lost} (before: {previous}, now: {parsed})"
        previous = parsed
    assert previous == doc


def test_partial_values_are_closed() -> None:
    assert parse_partial_object('{"title": "Sal') == {"title": "Sal"}
    assert parse_partial_object('{"a": [1, {"b": "x') == {"a": [1, {"b": "x"}]}
    assert parse_partial_object('{"a": 1, "b": tr') == {"a": 1}
    assert parse_partial_object('{"n": 12.') == {"n": 12}
    assert parse_partial_object('{"n": 1.5e-') == {"n": 1.5}
    assert parse_partial_object('{"s": "version 2.') == {"s": "version 2."}


@pytest.mark.parametrize(
    "text",
    ["", "   ", "garbage", "[1, 2", '"a string"', "123", "}", "{]", "null", '{"a": NaN}', "\x00\x01", "{{"],
)
def test_garbage_and_non_objects_give_none(text: str) -> None:
    assert parse_partial_object(text) is None


def test_never_raises_on_random_input() -> None:
    rng = random.Random(7)
    alphabet = '{}[]":,.-+eE0123456789 \\ntruefalsenull\x00é'
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        result = parse_partial_object(text)
        assert result is None or isinstance(result, dict)
    assert parse_partial_object(None) is None  # type: ignore[arg-type]
