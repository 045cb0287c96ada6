"""Which of a server's tools may be called at all (its entry's ``"tools"``): one rule for the model's,
a person's and a view's calls, checked where every call to a server goes (`CallRunner.run`) and
when the model's tools are offered."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..config.serverpolicy import ToolRules
from ..values.tools import ToolEntry


def _read_only(definition: Mapping[str, Any]) -> bool:
    annotations = definition.get("annotations")
    # A hint from the server: only an explicit true counts.
    return isinstance(annotations, Mapping) and annotations.get("readOnlyHint") is True


def tool_refusal(rules: ToolRules, entry: ToolEntry) -> str | None:
    """Why ``rules`` refuse ``entry``, naming the rule (text starting with "policy:"), or None: allowed."""
    server, tool = entry.server, entry.name
    if tool in rules.deny:
        return f"policy: {server} denies {tool} (tools.deny)"
    if rules.mode == "read-only" and not _read_only(entry.definition):
        return f"policy: {server} is read-only: {tool} is not annotated readOnlyHint"
    if rules.mode == "only" and tool not in rules.allow:
        allowed = ", ".join(sorted(rules.allow)) or "no tools"
        return f"policy: {server} allows only {allowed}: {tool} is not in tools.allow"
    return None
