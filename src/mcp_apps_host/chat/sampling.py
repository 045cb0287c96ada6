"""sampling/createMessage from a view, answered by the host's model (after the person allowed it)."""

from __future__ import annotations

from typing import Any

from ..values.content import content_text
from .events import ModelError, TextDelta, TurnFinished
from .history import AssistantMessage, HistoryItem, UserMessage
from .models import ModelAdapter
from .tools import build_tool_table


async def create_message(adapter: ModelAdapter, params: dict[str, Any]) -> dict[str, Any]:
    """One model answer, no tools, as an MCP CreateMessageResult. Raises RuntimeError on a model failure."""
    history: list[HistoryItem] = [
        UserMessage(content_text(m["content"], " ")) if m["role"] == "user"
        else AssistantMessage(content_text(m["content"], " "))
        for m in params["messages"]
    ]
    system = params.get("systemPrompt")
    system = system if isinstance(system, str) else ""
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
