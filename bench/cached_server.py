"""A stdio MCP server that answers a request it has seen before from memory: the server's cost out of a load run.

    python bench/cached_server.py COMMAND [ARGS...]

It starts the real server (COMMAND) behind it and passes every message through, both ways, except a
request whose method and params (without ``_meta``) it has already had answered: that one is answered at
once with the answer the real server gave, under the new request's id. The host still speaks the whole
protocol to a real server (its handshake, its tools, its view's resource, the first call of each tool);
the calls a load repeats then cost the server a line read and written instead of the SDK's dispatch,
which on a 2-core machine otherwise takes the CPU the host's own capacity is measured with
(`bench/load.py --server cached`).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import IO, Any

NEVER_CACHED = frozenset({"initialize", "ping"})


def _key(message: dict[str, Any]) -> str | None:
    method = message.get("method")
    if not isinstance(method, str) or method in NEVER_CACHED or "id" not in message:
        return None
    params = message.get("params")
    if isinstance(params, dict):
        params = {k: v for k, v in params.items() if k != "_meta"}
    return json.dumps([method, params], sort_keys=True, separators=(",", ":"))


class Cache:
    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        self.answers: dict[str, Any] = {}  # key -> the real server's result
        self.asked: dict[str, str] = {}  # id (as JSON) of a request passed on -> its key
        self.lock = threading.Lock()

    def write(self, line: bytes) -> None:
        with self.lock:
            self.out.write(line)
            self.out.flush()

    def from_host(self, line: bytes, server: IO[bytes]) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if isinstance(message, dict) and (key := _key(message)) is not None:
            with self.lock:
                known = key in self.answers
                result = self.answers.get(key)
                if not known:
                    self.asked[json.dumps(message["id"])] = key
            if known:
                answer = {"jsonrpc": "2.0", "id": message["id"], "result": result}
                self.write(json.dumps(answer, separators=(",", ":")).encode() + b"\n")
                return
        server.write(line)
        server.flush()

    def from_server(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if isinstance(message, dict) and "method" not in message:  # an answer: kept if it is a result
            with self.lock:
                key = self.asked.pop(json.dumps(message.get("id")), None)
                if key is not None and "result" in message:
                    self.answers[key] = message["result"]
        self.write(line)


def main() -> None:
    real = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert real.stdin is not None and real.stdout is not None
    cache = Cache(sys.stdout.buffer)
    server_out = real.stdout

    def relay_answers() -> None:
        for line in server_out:
            cache.from_server(line)

    threading.Thread(target=relay_answers, daemon=True).start()
    try:
        for line in sys.stdin.buffer:
            cache.from_host(line, real.stdin)
    finally:
        real.stdin.close()
        real.wait(10)


if __name__ == "__main__":
    main()
