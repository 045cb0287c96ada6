"""What a server's entry says its views may do without asking the person (``"views"``): each kind of
request a view puts to the person is allowed outright, asked about (as without a rule) or refused."""

from __future__ import annotations

from typing import Final

from ..config.serverpolicy import ViewAction, ViewRule, ViewRules
from ..values.decisions import ConsentKind

# The consent dialog's kind for each governed action; a tool call is governed by "tools" and "consent".
ACTION_OF_KIND: Final[dict[ConsentKind, ViewAction]] = {
    "message": "message", "open-link": "openLink", "download": "download", "sampling": "sampling"}


def view_rule(server: str, rules: ViewRules, kind: ConsentKind) -> tuple[ViewRule, str]:
    """The rule for a request of ``kind`` from a view of ``server``, and the words naming it."""
    action = ACTION_OF_KIND.get(kind)
    if action is None:
        return "ask", "needs the person's consent"
    rule = rules.rule(action)
    return rule, f"policy: {server} views.{action} = {rule}"


def model_context_refusal(server: str, rules: ViewRules) -> str | None:
    """ui/update-model-context is never asked about: only "deny" changes it."""
    if rules.rule("modelContext") == "deny":
        return f"policy: {server} views.modelContext = deny"
    return None
