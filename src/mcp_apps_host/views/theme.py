"""The host's look, shared by the page and the views (``hostContext.styles``).

Colours are ``light-dark(LIGHT, DARK)`` pairs, so one set of variables serves both
themes: the ``color-scheme`` of the document using them picks the side. The
palette is neutral zinc greys with a blue accent; text colours keep at least 4.5:1
contrast on the primary and secondary backgrounds of their theme (disabled text
is dim on purpose).
"""

from __future__ import annotations

from typing import Any, Literal

__all__ = [
    "FONTS_CSS",
    "STYLE_VARIABLE_KEYS",
    "Theme",
    "host_styles",
    "page_css_variables",
    "style_variables",
]

Theme = Literal["light", "dark"]

# The standard keys, in the spec's order. Views' SDKs reject any other key in
# styles.variables, so this list is closed.
STYLE_VARIABLE_KEYS: tuple[str, ...] = (
    "--color-background-primary",
    "--color-background-secondary",
    "--color-background-tertiary",
    "--color-background-inverse",
    "--color-background-ghost",
    "--color-background-info",
    "--color-background-danger",
    "--color-background-success",
    "--color-background-warning",
    "--color-background-disabled",
    "--color-text-primary",
    "--color-text-secondary",
    "--color-text-tertiary",
    "--color-text-inverse",
    "--color-text-info",
    "--color-text-danger",
    "--color-text-success",
    "--color-text-warning",
    "--color-text-disabled",
    "--color-text-ghost",
    "--color-border-primary",
    "--color-border-secondary",
    "--color-border-tertiary",
    "--color-border-inverse",
    "--color-border-ghost",
    "--color-border-info",
    "--color-border-danger",
    "--color-border-success",
    "--color-border-warning",
    "--color-border-disabled",
    "--color-ring-primary",
    "--color-ring-secondary",
    "--color-ring-inverse",
    "--color-ring-info",
    "--color-ring-danger",
    "--color-ring-success",
    "--color-ring-warning",
    "--font-sans",
    "--font-mono",
    "--font-weight-normal",
    "--font-weight-medium",
    "--font-weight-semibold",
    "--font-weight-bold",
    "--font-text-xs-size",
    "--font-text-sm-size",
    "--font-text-md-size",
    "--font-text-lg-size",
    "--font-heading-xs-size",
    "--font-heading-sm-size",
    "--font-heading-md-size",
    "--font-heading-lg-size",
    "--font-heading-xl-size",
    "--font-heading-2xl-size",
    "--font-heading-3xl-size",
    "--font-text-xs-line-height",
    "--font-text-sm-line-height",
    "--font-text-md-line-height",
    "--font-text-lg-line-height",
    "--font-heading-xs-line-height",
    "--font-heading-sm-line-height",
    "--font-heading-md-line-height",
    "--font-heading-lg-line-height",
    "--font-heading-xl-line-height",
    "--font-heading-2xl-line-height",
    "--font-heading-3xl-line-height",
    "--border-radius-xs",
    "--border-radius-sm",
    "--border-radius-md",
    "--border-radius-lg",
    "--border-radius-xl",
    "--border-radius-full",
    "--border-width-regular",
    "--shadow-hairline",
    "--shadow-sm",
    "--shadow-md",
    "--shadow-lg",
)

# No external fonts: the host works offline, and system stacks need no @font-face.
FONTS_CSS: str = ""

_SANS = (
    'ui-sans-serif, system-ui, -apple-system, BlinkMacSystemFont, "Segoe UI", Roboto, '
    '"Helvetica Neue", Arial, "Noto Sans", sans-serif, "Apple Color Emoji", "Segoe UI Emoji"'
)
_MONO = ('ui-monospace, SFMono-Regular, "SF Mono", Menlo, Monaco, Consolas, "Liberation Mono", '
         '"DejaVu Sans Mono", monospace')


def _ld(light: str, dark: str) -> str:
    return f"light-dark({light}, {dark})"


# Dark-theme shadows need more opacity to be seen against dark surfaces.
_SHADOW = _ld("rgb(0 0 0 / 0.1)", "rgb(0 0 0 / 0.5)")
_SHADOW_SOFT = _ld("rgb(0 0 0 / 0.05)", "rgb(0 0 0 / 0.4)")

_VALUES: dict[str, str] = {
    # Backgrounds: zinc surfaces, tinted status fills.
    "--color-background-primary": _ld("#ffffff", "#18181b"),
    "--color-background-secondary": _ld("#f4f4f5", "#232327"),
    "--color-background-tertiary": _ld("#e4e4e7", "#2e2e33"),
    "--color-background-inverse": _ld("#18181b", "#fafafa"),
    "--color-background-ghost": _ld("rgb(24 24 27 / 0.05)", "rgb(250 250 250 / 0.06)"),
    "--color-background-info": _ld("#eff6ff", "#172036"),
    "--color-background-danger": _ld("#fef2f2", "#2d1517"),
    "--color-background-success": _ld("#f0fdf4", "#12261a"),
    "--color-background-warning": _ld("#fffbeb", "#2b2010"),
    "--color-background-disabled": _ld("#f4f4f5", "#27272a"),
    # Text.
    "--color-text-primary": _ld("#18181b", "#fafafa"),
    "--color-text-secondary": _ld("#52525b", "#b4b4bc"),
    "--color-text-tertiary": _ld("#63636d", "#9a9aa3"),
    "--color-text-inverse": _ld("#fafafa", "#18181b"),
    "--color-text-info": _ld("#1d4ed8", "#93c5fd"),
    "--color-text-danger": _ld("#b91c1c", "#fca5a5"),
    "--color-text-success": _ld("#166534", "#86efac"),
    "--color-text-warning": _ld("#a04a06", "#fcd34d"),
    "--color-text-disabled": _ld("#a1a1aa", "#63636d"),
    "--color-text-ghost": _ld("#52525b", "#b4b4bc"),
    # Borders.
    "--color-border-primary": _ld("#d4d4d8", "#4a4a52"),
    "--color-border-secondary": _ld("#e4e4e7", "#3f3f46"),
    "--color-border-tertiary": _ld("#f0f0f2", "#2e2e33"),
    "--color-border-inverse": _ld("#3f3f46", "#d4d4d8"),
    "--color-border-ghost": _ld("rgb(24 24 27 / 0.08)", "rgb(250 250 250 / 0.1)"),
    "--color-border-info": _ld("#93c5fd", "#1e40af"),
    "--color-border-danger": _ld("#fca5a5", "#991b1b"),
    "--color-border-success": _ld("#86efac", "#166534"),
    "--color-border-warning": _ld("#fcd34d", "#92400e"),
    "--color-border-disabled": _ld("#e4e4e7", "#3f3f46"),
    # Focus rings: at least 3:1 against the primary background of their theme.
    "--color-ring-primary": _ld("#2563eb", "#60a5fa"),
    "--color-ring-secondary": _ld("#71717a", "#a1a1aa"),
    "--color-ring-inverse": _ld("#fafafa", "#18181b"),
    "--color-ring-info": _ld("#2563eb", "#60a5fa"),
    "--color-ring-danger": _ld("#dc2626", "#f87171"),
    "--color-ring-success": _ld("#16a34a", "#4ade80"),
    "--color-ring-warning": _ld("#d97706", "#fbbf24"),
    # Typography.
    "--font-sans": _SANS,
    "--font-mono": _MONO,
    "--font-weight-normal": "400",
    "--font-weight-medium": "500",
    "--font-weight-semibold": "600",
    "--font-weight-bold": "700",
    "--font-text-xs-size": "0.75rem",
    "--font-text-sm-size": "0.875rem",
    "--font-text-md-size": "1rem",
    "--font-text-lg-size": "1.125rem",
    "--font-heading-xs-size": "0.875rem",
    "--font-heading-sm-size": "1rem",
    "--font-heading-md-size": "1.125rem",
    "--font-heading-lg-size": "1.25rem",
    "--font-heading-xl-size": "1.5rem",
    "--font-heading-2xl-size": "1.875rem",
    "--font-heading-3xl-size": "2.25rem",
    "--font-text-xs-line-height": "1rem",
    "--font-text-sm-line-height": "1.25rem",
    "--font-text-md-line-height": "1.5rem",
    "--font-text-lg-line-height": "1.75rem",
    "--font-heading-xs-line-height": "1.25rem",
    "--font-heading-sm-line-height": "1.5rem",
    "--font-heading-md-line-height": "1.75rem",
    "--font-heading-lg-line-height": "1.75rem",
    "--font-heading-xl-line-height": "2rem",
    "--font-heading-2xl-line-height": "2.25rem",
    "--font-heading-3xl-line-height": "2.5rem",
    # Shape.
    "--border-radius-xs": "2px",
    "--border-radius-sm": "4px",
    "--border-radius-md": "8px",
    "--border-radius-lg": "12px",
    "--border-radius-xl": "16px",
    "--border-radius-full": "9999px",
    "--border-width-regular": "1px",
    "--shadow-hairline": f"0 0 0 1px {_ld('rgb(24 24 27 / 0.08)', 'rgb(250 250 250 / 0.1)')}",
    "--shadow-sm": f"0 1px 2px 0 {_SHADOW_SOFT}",
    "--shadow-md": f"0 4px 6px -1px {_SHADOW}, 0 2px 4px -2px {_SHADOW}",
    "--shadow-lg": f"0 10px 15px -3px {_SHADOW}, 0 4px 6px -4px {_SHADOW}",
}


def style_variables() -> dict[str, str]:
    """A value for every standard key, in the spec's order (a fresh dict each call)."""
    return {key: _VALUES[key] for key in STYLE_VARIABLE_KEYS}


def host_styles() -> dict[str, Any]:
    """``hostContext.styles``: ``{"variables": {...}, "css": {"fonts": ...}}``."""
    return {"variables": style_variables(), "css": {"fonts": FONTS_CSS}}


def page_css_variables() -> str:
    """A ``:root { ... }`` block with the same variables, so the page and its views match.

    It sets no ``color-scheme``: the page sets that from its theme, which picks the
    side of every ``light-dark()`` value.
    """
    lines = [f"  {key}: {value};" for key, value in style_variables().items()]
    return ":root {\n" + "\n".join(lines) + "\n}\n"
