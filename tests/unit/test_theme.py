from __future__ import annotations

import re

import pytest

from mcp_apps_host.views.theme import (
    FONTS_CSS,
    STYLE_VARIABLE_KEYS,
    host_styles,
    page_css_variables,
    style_variables,
)


def test_76_standard_keys() -> None:
    assert len(STYLE_VARIABLE_KEYS) == 76
    assert len(set(STYLE_VARIABLE_KEYS)) == 76
    assert STYLE_VARIABLE_KEYS[0] == "--color-background-primary"
    assert STYLE_VARIABLE_KEYS[-1] == "--shadow-lg"
    for key in (
        "--color-text-ghost",
        "--color-ring-warning",
        "--font-heading-3xl-line-height",
        "--border-width-regular",
        "--shadow-hairline",
    ):
        assert key in STYLE_VARIABLE_KEYS
    # Names that look plausible but are not standard.
    for key in ("--border-radius-small", "--color-ring-tertiary", "--font-heading-size"):
        assert key not in STYLE_VARIABLE_KEYS


def test_every_key_has_a_value() -> None:
    variables = style_variables()
    assert tuple(variables) == STYLE_VARIABLE_KEYS
    for key, value in variables.items():
        assert isinstance(value, str) and value.strip(), key
        assert not re.search(r"[;{}]", value), key


def test_colour_keys_use_light_dark() -> None:
    colour_keys = [k for k in STYLE_VARIABLE_KEYS if k.startswith("--color-")]
    assert len(colour_keys) == 37
    pair = re.compile(r"light-dark\((#[0-9a-f]{6}|rgb\([^()]*\)), (#[0-9a-f]{6}|rgb\([^()]*\))\)")
    for key in colour_keys:
        match = pair.fullmatch(style_variables()[key])
        assert match, key
        assert match.group(1) != match.group(2), key


def _luminance(hex_colour: str) -> float:
    channels = [int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _contrast(a: str, b: str) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@pytest.mark.parametrize(
    "text", ["primary", "secondary", "tertiary", "info", "danger", "success", "warning", "ghost"]
)
@pytest.mark.parametrize("background", ["primary", "secondary"])
def test_text_contrast_in_both_themes(text: str, background: str) -> None:
    variables = style_variables()
    fg = re.findall(r"#[0-9a-f]{6}", variables[f"--color-text-{text}"])
    bg = re.findall(r"#[0-9a-f]{6}", variables[f"--color-background-{background}"])
    for side in (0, 1):
        assert _contrast(fg[side], bg[side]) >= 4.5, (text, background, ("light", "dark")[side])


def test_other_values_are_sensible() -> None:
    v = style_variables()
    assert v["--font-sans"].startswith("ui-sans-serif, system-ui")
    assert v["--font-sans"].endswith(("sans-serif", '"Segoe UI Emoji"'))
    assert "monospace" in v["--font-mono"]
    for key in STYLE_VARIABLE_KEYS:
        if key.startswith("--font-weight-"):
            assert v[key].isdigit()
        elif key.startswith("--font-") and key.endswith(("-size", "-line-height")):
            assert re.fullmatch(r"\d+(\.\d+)?rem", v[key]), key
        elif key.startswith("--border-"):
            assert re.fullmatch(r"\d+px", v[key]), key
        elif key.startswith("--shadow-"):
            assert re.match(r"0 \d+(px)? \d+(px)? ", v[key]), key


def test_host_styles_and_fonts() -> None:
    assert FONTS_CSS == ""
    styles = host_styles()
    assert styles == {"variables": style_variables(), "css": {"fonts": ""}}
    styles["variables"]["--shadow-lg"] = "none"
    assert host_styles()["variables"]["--shadow-lg"] != "none"


def test_page_css_variables() -> None:
    css = page_css_variables()
    assert css.startswith(":root {\n") and css.rstrip().endswith("}")
    declared = dict(re.findall(r"^  (--[a-z0-9-]+): (.*);$", css, re.MULTILINE))
    assert declared == style_variables()
