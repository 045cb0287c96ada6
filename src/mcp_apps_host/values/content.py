"""MCP content blocks as text, and the shape of a failed tool result."""

from __future__ import annotations

from typing import Any


def block_text(block: dict[str, Any]) -> str:
    """What a person or a model reads for one content block (a placeholder for what is not text)."""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "resource" and isinstance(block.get("resource"), dict):
        res = block["resource"]
        if isinstance(res.get("text"), str):
            return str(res["text"])
        return f"[resource {res.get('uri', '')} ({res.get('mimeType', 'binary')})]"
    if kind == "resource_link":
        return f"[resource link: {block.get('name', '')} {block.get('uri', '')}]".replace("  ", " ")
    return f"[{kind} content omitted]"


def content_text(blocks: Any, sep: str = "\n") -> str:
    """The text of a list of content blocks (a single block is read as a list of one)."""
    if isinstance(blocks, dict):
        blocks = [blocks]
    if not isinstance(blocks, list):
        return ""
    return sep.join(block_text(b) for b in blocks if isinstance(b, dict))


def error_result(text: str) -> dict[str, Any]:
    """A CallToolResult for a call that produced no result of its own: what the view and model see."""
    return {"content": [{"type": "text", "text": text}], "isError": True}
