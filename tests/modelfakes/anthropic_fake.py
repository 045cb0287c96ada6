"""A scripted Anthropic Messages server that streams real SSE events chunk by chunk.

    with serve_script(turns) as fake:      # fake.base_url is the SDK's base_url (no /v1)
        ...                                # fake.requests: what the client sent, in order

    python -m tests.modelfakes.anthropic_fake --script turns.json [--port P] [--delay S] [--repeat]

Text chunks go into a text block, each tool call into its own tool_use block whose input arrives
as input_json_delta fragments, like the real API.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

from starlette.applications import Starlette

from ._server import FakeServer, ScriptState, Turn, cli, make_app, pause, serve_in_thread

PATH = "/v1/messages"


def _error_body(status: int, message: str) -> dict[str, Any]:
    kind = {
        400: "invalid_request_error",
        401: "authentication_error",
        429: "rate_limit_error",
        529: "overloaded_error",
    }.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n".encode()


async def stream_turn(turn: Turn, request: dict[str, Any], state: ScriptState) -> AsyncIterator[bytes]:
    n = len(state.requests)
    assert isinstance(turn, list)
    yield _event(
        "message_start",
        {
            "message": {
                "id": f"msg_fake_{n}",
                "type": "message",
                "role": "assistant",
                "model": request.get("model", "fake"),
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": len(json.dumps(request.get("messages", []))) // 4,
                    "output_tokens": 1,
                },
            }
        },
    )
    yield _event("ping", {})
    block = -1
    open_kind: str | None = None
    tool_calls = 0
    finish: str | None = None

    def close() -> bytes:
        nonlocal open_kind
        open_kind = None
        return _event("content_block_stop", {"index": block})

    for item in turn:
        await pause(state, item)
        if "text" in item:
            if open_kind != "text":
                if open_kind:
                    yield close()
                block += 1
                open_kind = "text"
                yield _event(
                    "content_block_start", {"index": block, "content_block": {"type": "text", "text": ""}}
                )
            yield _event(
                "content_block_delta", {"index": block, "delta": {"type": "text_delta", "text": item["text"]}}
            )
        elif "tool_call" in item:
            spec = item["tool_call"]
            if open_kind:
                yield close()
            block += 1
            open_kind = "tool_use"
            tool_calls += 1
            call_id = spec.get("id") or f"toolu_fake_{n}_{tool_calls}"
            preset = spec.get("input", {})
            yield _event(
                "content_block_start",
                {
                    "index": block,
                    "content_block": {
                        "type": "tool_use",
                        "id": call_id,
                        "name": spec["name"],
                        "input": preset,
                    },
                },
            )
            yield _event(
                "content_block_delta",
                {"index": block, "delta": {"type": "input_json_delta", "partial_json": ""}},
            )
            if spec.get("arguments"):
                yield _event(
                    "content_block_delta",
                    {
                        "index": block,
                        "delta": {"type": "input_json_delta", "partial_json": spec["arguments"]},
                    },
                )
        elif "args" in item:
            yield _event(
                "content_block_delta",
                {"index": block, "delta": {"type": "input_json_delta", "partial_json": item["args"]}},
            )
        elif "finish" in item:
            finish = item["finish"]
        elif "error" in item:
            yield _event("error", {"error": {"type": "overloaded_error", "message": item["error"]}})
            return
        elif "raw" in item:
            yield item["raw"].encode()
    if open_kind:
        yield close()
    stop = finish or ("tool_use" if tool_calls else "end_turn")
    yield _event(
        "message_delta",
        {"delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 7}},
    )
    yield _event("message_stop", {})


def build_app(state: ScriptState) -> Starlette:
    return make_app(state, PATH, stream_turn, _error_body)


@contextmanager
def serve_script(turns: list[Turn], delay: float = 0.005) -> Iterator[FakeServer]:
    state = ScriptState(list(turns), delay=delay)
    with serve_in_thread(build_app(state), state, "") as server:
        yield server


if __name__ == "__main__":
    cli(
        "Scripted Anthropic Messages model server",
        build_app,
        "",
        "mcp-apps-host ... --model anthropic:fake --model-base-url {base_url}",
    )
