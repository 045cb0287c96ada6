"""What an admin decides per server, as plain typed records: which tools may be called, what its
views may do, and the limits it gets instead of the host's global ones."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal, get_args

ToolMode = Literal["all", "read-only", "only"]
TOOL_MODES: Final[tuple[str, ...]] = get_args(ToolMode)

# What a view may ask of the host that an admin governs per server, by its key in the entry's "views".
ViewAction = Literal["message", "modelContext", "openLink", "download", "sampling"]
VIEW_ACTIONS: Final[tuple[str, ...]] = get_args(ViewAction)
ViewRule = Literal["allow", "ask", "deny"]  # ask: the person decides, as without a rule
VIEW_RULES: Final[tuple[str, ...]] = get_args(ViewRule)

# The global limits (settings.Limits fields) a server's entry may raise or lower for itself, by their
# key in the entry's "limits", with the bounds a value must keep.
LimitName = Literal["max_template_bytes", "template_read_timeout", "tool_call_timeout"]
LIMIT_KEYS: Final[dict[str, tuple[LimitName, float, float]]] = {
    "maxTemplateBytes": ("max_template_bytes", 1024, 64 * 1024 * 1024),
    "templateReadTimeout": ("template_read_timeout", 1, 600),
    "toolCallTimeout": ("tool_call_timeout", 1, 3600),
}


@dataclass(frozen=True)
class ToolRules:
    """``"tools"`` of an entry: ``all`` (the default), ``read-only`` (tools annotated ``readOnlyHint``),
    or ``only`` the ``allow`` list; ``deny`` is refused in every mode."""

    mode: ToolMode = "all"
    allow: frozenset[str] = frozenset()
    deny: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ViewRules:
    """``"views"`` of an entry: per action, allow / ask / deny (an action not named is asked, as before)."""

    rules: tuple[tuple[ViewAction, ViewRule], ...] = ()

    def rule(self, action: ViewAction) -> ViewRule:
        return dict(self.rules).get(action, "ask")


@dataclass(frozen=True)
class LimitOverrides:
    """``"limits"`` of an entry: the global limits this server gets other values of."""

    values: tuple[tuple[LimitName, int | float], ...] = field(default=())

    def as_dict(self) -> dict[str, Any]:
        return dict(self.values)
