"""`sampling/createMessage` params, from a view or a server: checked, and shown to the person."""

from __future__ import annotations

from typing import Any

from .protocol import SAMPLING_CREATE_MESSAGE


def sampling_problem(params: dict[str, Any]) -> str | None:
    """What is wrong with the params, or None when the host can ask its model."""
    messages, max_tokens = params.get("messages"), params.get("maxTokens")
    if not isinstance(messages, list) or not messages or not all(
        isinstance(m, dict) and m.get("role") in ("user", "assistant") and isinstance(m.get("content"), (dict, list))
        for m in messages
    ) or not (isinstance(max_tokens, int) and not isinstance(max_tokens, bool) and max_tokens > 0):
        return f'{SAMPLING_CREATE_MESSAGE} needs "messages" (role user|assistant, content) and "maxTokens" > 0'
    return None


def describe_sampling(params: dict[str, Any]) -> str:
    """The request as the consent dialog shows it: the system prompt, then each message by role."""
    lines = []
    system = params.get("systemPrompt")
    if isinstance(system, str) and system:
        lines.append(f"[system] {system}")
    for m in params.get("messages") or []:
        blocks = m["content"] if isinstance(m["content"], list) else [m["content"]]
        text = " ".join(str(b.get("text", f"[{b.get('type')}]")) for b in blocks if isinstance(b, dict))
        lines.append(f"[{m['role']}] {text}")
    return "\n".join(lines)
