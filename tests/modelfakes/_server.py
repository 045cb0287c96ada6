"""Shared machinery of the scripted model servers: script handling, SSE responses, a thread runner, a CLI.

A script is a list of turns, one per request the server receives, in order. A turn is either a
list of chunks or `{"status": 4xx/5xx, "error": "message"}` (the request fails with that HTTP
error). Chunks (tests/modelfakes/__init__.py has helpers that build them):

    {"text": "Hel"}                                  a piece of assistant text
    {"tool_call": {"name": N, "id": ID, "arguments": "..."}}
                                                     a tool call starts; "arguments" sends text with the
                                                     start. OpenAI only: "id": null leaves the id out,
                                                     "omit_index": true the index. Anthropic only:
                                                     "input": {...} fills the block's start input
    {"args": "{\\"ti"}                               the next fragment of the latest tool call's arguments
                                                     ("index": I to target an earlier call, OpenAI only)
    {"finish": "tool_calls"}                         the provider's finish/stop reason (default: derived)
    {"sleep": 0.2}                                   pause
    {"hang": true}                                   stall until the client goes away
    {"error": "message"}                             an error event in the middle of the stream
    {"raw": "data: ...\\n\\n"}                       bytes sent as they are
    {"mark": "name"}                                 nothing is sent; the wall-clock time the next chunk
                                                     goes out is kept in `state.marks` (for benchmarks)
"""

from __future__ import annotations

import argparse
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

Turn = list[dict[str, Any]] | dict[str, Any]


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    # None while streaming, then "completed", "disconnected" (the client closed early) or "http-error".
    outcome: str | None = None


@dataclass
class ScriptState:
    turns: list[Turn]
    delay: float = 0.005
    repeat: bool = False
    requests: list[RecordedRequest] = field(default_factory=list)
    marks: list[tuple[str, float]] = field(default_factory=list)
    _next: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def next_turn(self) -> Turn | None:
        with self._lock:
            if self._next >= len(self.turns):
                if not (self.repeat and self.turns):
                    return None
                self._next = 0
            turn = self.turns[self._next]
            self._next += 1
            return turn


class SSEResponse:
    """Streams SSE bytes and notices a client that leaves, even while the script is stalled."""

    def __init__(self, body: AsyncIterator[bytes], record: RecordedRequest) -> None:
        self.body = body
        self.record = record

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream; charset=utf-8"),
                    (b"cache-control", b"no-cache"),
                ],
            }
        )
        async with anyio.create_task_group() as group:

            async def watch() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                if self.record.outcome is None:
                    self.record.outcome = "disconnected"
                group.cancel_scope.cancel()

            group.start_soon(watch)
            try:
                async for chunk in self.body:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                self.record.outcome = "completed"
            except OSError:
                self.record.outcome = "disconnected"
            group.cancel_scope.cancel()


StreamMaker = Callable[[Turn, dict[str, Any], ScriptState], AsyncIterator[bytes]]
ErrorMaker = Callable[[int, str], dict[str, Any]]


def make_app(state: ScriptState, path: str, stream_turn: StreamMaker, error_body: ErrorMaker) -> Starlette:
    async def endpoint(request: Request) -> Any:
        body = await request.json()
        record = RecordedRequest(request.url.path, {k.lower(): v for k, v in request.headers.items()}, body)
        state.requests.append(record)
        turn = state.next_turn()
        if turn is None:
            record.outcome = "http-error"
            return JSONResponse(error_body(500, "fake server: the script has no more turns"), status_code=500)
        if isinstance(turn, dict):
            record.outcome = "http-error"
            status = int(turn.get("status", 500))
            return JSONResponse(
                error_body(status, str(turn.get("error", "scripted error"))), status_code=status
            )
        return SSEResponse(stream_turn(turn, body, state), record)

    return Starlette(routes=[Route(path, endpoint, methods=["POST"])])


async def pause(state: ScriptState, chunk: dict[str, Any]) -> None:
    """The delay between chunks, and the script's own pauses and stalls."""
    if chunk.get("hang"):
        await anyio.sleep_forever()
    await anyio.sleep(float(chunk.get("sleep", 0)) + state.delay)
    if "mark" in chunk:
        state.marks.append((str(chunk["mark"]), time.time()))


@dataclass
class FakeServer:
    base_url: str
    state: ScriptState

    @property
    def requests(self) -> list[RecordedRequest]:
        return self.state.requests

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.01)
        return predicate()


@contextmanager
def serve_in_thread(app: Starlette, state: ScriptState, url_suffix: str) -> Iterator[FakeServer]:
    """Run `app` on 127.0.0.1 and a free port in a background thread for the duration of the block."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the fake model server did not start")
        time.sleep(0.01)
    try:
        yield FakeServer(f"http://127.0.0.1:{port}{url_suffix}", state)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def cli(description: str, build_app: Callable[[ScriptState], Starlette], url_suffix: str, hint: str) -> None:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--script", required=True, type=Path, help="JSON file: a list of turns")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free one)")
    parser.add_argument("--delay", type=float, default=0.05, help="seconds between chunks")
    parser.add_argument("--repeat", action="store_true", help="start the script over when it runs out")
    args = parser.parse_args()
    turns = json.loads(args.script.read_text())
    if not isinstance(turns, list):
        parser.error("the script must be a JSON list of turns")
    state = ScriptState(turns, delay=args.delay, repeat=args.repeat)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(64)  # connections made right after the address is printed wait for the server
    port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}{url_suffix}"
    print(f"fake model server at {base}\n  {hint.format(base_url=base)}", flush=True)
    uvicorn.Server(uvicorn.Config(build_app(state), log_level="warning", lifespan="off")).run(sockets=[sock])
