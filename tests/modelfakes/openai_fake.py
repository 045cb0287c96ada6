"""A scripted OpenAI-compatible Chat Completions server that streams real SSE chunk by chunk.

    with serve_script(turns) as fake:      # fake.base_url ends in /v1, as the SDK expects
        ...                                # fake.requests: what the client sent, in order

    python -m tests.modelfakes.openai_fake --script turns.json [--port P] [--delay S] [--repeat]

tests/modelfakes/demo_script.json calls the bundled demo chart (`mcp-apps-host demo`) and answers.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

from starlette.applications import Starlette

from ._server import FakeServer, ScriptState, Turn, cli, make_app, pause, serve_in_thread

PATH = "/v1/chat/completions"


def _error_body(status: int, message: str) -> dict[str, Any]:
    kind = {401: "invalid_request_error", 429: "rate_limit_error"}.get(status, "server_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def _sse(data: Any) -> bytes:
    return f"data: {json.dumps(data)}\n\n".encode()


async def stream_turn(turn: Turn, request: dict[str, Any], state: ScriptState) -> AsyncIterator[bytes]:
    n = len(state.requests)
    base = {
        "id": f"chatcmpl-fake-{n}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": request.get("model", "fake"),
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _sse(
            {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
        )

    assert isinstance(turn, list)
    yield chunk({"role": "assistant", "content": ""})
    calls = 0
    finished = False
    for item in turn:
        await pause(state, item)
        if "text" in item:
            yield chunk({"content": item["text"]})
        elif "tool_call" in item:
            spec = item["tool_call"]
            call: dict[str, Any] = {
                "index": calls,
                "type": "function",
                "function": {"name": spec["name"], "arguments": spec.get("arguments", "")},
            }
            if spec.get("omit_index"):
                del call["index"]
            if "id" not in spec:
                call["id"] = f"call_fake_{n}_{calls}"
            elif spec["id"] is not None:
                call["id"] = spec["id"]
            calls += 1
            yield chunk({"tool_calls": [call]})
        elif "args" in item:
            index = item.get("index", calls - 1)
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": item["args"]}}]})
        elif "finish" in item:
            finished = True
            yield chunk({}, item["finish"])
        elif "error" in item:
            yield _sse(
                {"error": {"message": item["error"], "type": "server_error", "param": None, "code": None}}
            )
            return
        elif "raw" in item:
            yield item["raw"].encode()
    if not finished:
        yield chunk({}, "tool_calls" if calls else "stop")
    if (request.get("stream_options") or {}).get("include_usage"):
        usage = {"prompt_tokens": len(json.dumps(request.get("messages", []))) // 4, "completion_tokens": 7}
        yield _sse({**base, "choices": [], "usage": {**usage, "total_tokens": sum(usage.values())}})
    yield b"data: [DONE]\n\n"


def build_app(state: ScriptState) -> Starlette:
    return make_app(state, PATH, stream_turn, _error_body)


@contextmanager
def serve_script(turns: list[Turn], delay: float = 0.005) -> Iterator[FakeServer]:
    state = ScriptState(list(turns), delay=delay)
    with serve_in_thread(build_app(state), state, "/v1") as server:
        yield server


if __name__ == "__main__":
    cli(
        "Scripted OpenAI-compatible model server",
        build_app,
        "/v1",
        "mcp-apps-host ... --model openai:fake --model-base-url {base_url}",
    )
