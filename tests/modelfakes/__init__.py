"""Scripted model servers (OpenAI-compatible and Anthropic) on loopback, and helpers to write scripts."""

from __future__ import annotations

from typing import Any

from ._server import FakeServer, RecordedRequest, ScriptState


def text(piece: str) -> dict[str, Any]:
    return {"text": piece}


def tool_call(name: str, call_id: str | None = "", **options: Any) -> dict[str, Any]:
    """A tool call starts. call_id "" lets the fake choose one; None leaves the id out (OpenAI)."""
    spec: dict[str, Any] = {"name": name, **options}
    if call_id != "":
        spec["id"] = call_id
    return {"tool_call": spec}


def args(fragment: str, index: int | None = None) -> dict[str, Any]:
    return {"args": fragment} if index is None else {"args": fragment, "index": index}


def finish(reason: str) -> dict[str, Any]:
    return {"finish": reason}


def pieces(text_: str, size: int) -> list[str]:
    return [text_[i : i + size] for i in range(0, len(text_), size)]


def streamed_call(name: str, arguments: str, size: int = 4, call_id: str | None = "") -> list[dict[str, Any]]:
    """A tool call whose argument text arrives `size` characters at a time."""
    return [tool_call(name, call_id), *(args(p) for p in pieces(arguments, size))]


__all__ = [
    "FakeServer",
    "RecordedRequest",
    "ScriptState",
    "args",
    "finish",
    "pieces",
    "streamed_call",
    "text",
    "tool_call",
]
