"""Whatever the page's end of the WebSocket sends, the host's real Starlette app keeps the socket:
arbitrary and mutated frames (valid-shaped ones with wrong types, unknown types, huge and deeply
nested values, text that is not JSON, frames over max_ws_frame_bytes) are refused or answered, and a
valid handshake works afterwards on the same socket."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from mcp_apps_host.host.process.core import Host
from mcp_apps_host.host.process.sandbox import Sandbox
from mcp_apps_host.host.tab import frames as f
from mcp_apps_host.servers.manager import ServerManager
from mcp_apps_host.settings import Limits
from mcp_apps_host.web.access import Access
from mcp_apps_host.web.app import host_app

ORIGIN = "http://127.0.0.1:8765"
WS = "ws://127.0.0.1:8765/ws"
LIMITS = Limits(max_ws_frame_bytes=64 * 1024)  # small, so that going over it is cheap

# Every frame type the page may send, from the page protocol itself.
PAGE_TYPES = sorted(model.model_fields["type"].annotation.__args__[0]  # type: ignore[union-attr]
                    for model in f.PageFrame.__args__)  # type: ignore[attr-defined]
FIELDS = sorted({name for model in f.PageFrame.__args__  # type: ignore[attr-defined]
                 for name in (field.alias or name for name, field in model.model_fields.items())} - {"type"})

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=25,
)
shaped = st.fixed_dictionaries(
    {"type": st.sampled_from(PAGE_TYPES) | st.text(max_size=12)},
    optional=dict.fromkeys(FIELDS, json_values),
)


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


raw_texts = st.one_of(
    shaped.map(json.dumps),
    json_values.map(json.dumps),
    st.text(max_size=200),  # mostly not JSON at all
    st.integers(1, 200_000).map(_deep),  # nesting deeper than any parser's recursion
    st.integers(1, 200_000).map(lambda n: json.dumps({"type": "chat", "text": "x" * n})),  # up to over the cap
    shaped.map(lambda frame: json.dumps(frame)[: max(1, len(json.dumps(frame)) // 2)]),  # cut short
)


def client() -> TestClient:
    host = Host(servers=ServerManager([], LIMITS), limits=LIMITS, host_origin=ORIGIN,
                sandbox=Sandbox.on_port("http", "localhost", 8766, per_server=False))
    test_client = TestClient(host_app(host, Access(token="secret-token", bind_host="127.0.0.1", port=8765)),
                             base_url=ORIGIN)
    assert test_client.get("/?token=secret-token", follow_redirects=False).status_code == 303
    return test_client


CLIENT = client()


def until(ws: Any, match: Any) -> None:
    seen = []
    for _ in range(500):
        frame = ws.receive_json()
        seen.append(frame["type"])
        if match(frame):
            return
    raise AssertionError(f"the socket stopped answering: {seen[-20:]}")


def handshake_still_works(ws: Any) -> None:
    ws.send_json({"type": "hello"})
    until(ws, lambda frame: frame["type"] == "welcome")
    ws.send_json({"type": "chat", "text": "/help"})
    until(ws, lambda frame: frame["type"] == "notice" and "/call" in frame["text"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(raw_texts, min_size=1, max_size=6))
def test_any_frames_leave_the_socket_working(texts: list[str]) -> None:
    with CLIENT.websocket_connect(WS, headers={"origin": ORIGIN}) as ws:
        for text in texts:
            ws.send_text(text)
        handshake_still_works(ws)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(shaped, min_size=1, max_size=4))
def test_a_shaped_frame_that_is_refused_is_told_to_the_page(frames: list[dict[str, Any]]) -> None:
    """A frame the page protocol does not accept is answered with a notice naming the refusal."""
    refused = 0
    for frame in frames:
        try:
            f.parse_page_frame(frame)
        except f.InvalidFrame:
            refused += 1
    with CLIENT.websocket_connect(WS, headers={"origin": ORIGIN}) as ws:
        for frame in frames:
            ws.send_json(frame)
        ws.send_json({"type": "chat", "text": "/help"})
        notices = 0
        for _ in range(500):
            got = ws.receive_json()
            if got["type"] == "notice" and "did not accept a frame" in got["text"]:
                notices += 1
            if got["type"] == "notice" and "/call" in got["text"]:
                break
        assert notices == refused
