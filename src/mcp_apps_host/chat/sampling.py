"""sampling/createMessage from a view, answered by the host's model (after the person allowed it)."""

from __future__ import annotations

from typing import Any

from .events import ModelError, TextDelta, TurnFinished
from .history import AssistantMessage, HistoryItem, UserMessage
from .models import ModelAdapter
from .tools import build_tool_table


def _text(content: Any) -> str:
    blocks = content if isinstance(content, list) else [content]
    return " ".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict) and b.get("type") == "text")


async def create_message(adapter: ModelAdapter, params: dict[str, Any]) -> dict[str, Any]:
    """One model answer, no tools, as an MCP CreateMessageResult. Raises RuntimeError on a model failure."""
    history: list[HistoryItem] = [
        UserMessage(_text(m["content"])) if m["role"] == "user" else AssistantMessage(_text(m["content"]))
        for m in params["messages"]
    ]
    system = params.get("systemPrompt") if isinstance(params.get("systemPrompt"), str) else ""
    text: list[str] = []
    stop = "endTurn"
    async for event in adapter.stream(history, build_tool_table([]), system):
        if isinstance(event, TextDelta):
            text.append(event.text)
        elif isinstance(event, ModelError):
            raise RuntimeError(event.message)
        elif isinstance(event, TurnFinished) and event.stop_reason == "length":
            stop = "maxTokens"
    return {"role": "assistant", "content": {"type": "text", "text": "".join(text)}, "model": adapter.label,
            "stopReason": stop}
