"""The page protocol: frames are checked on the way in, and docs/bridge.md lists exactly the declared frames."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mcp_apps_host.errors import HostError, InvalidFrame
from mcp_apps_host.host.tab import frames as f

ROOT = Path(__file__).resolve().parents[2]
BRIDGE = ROOT / "docs" / "bridge.md"
FRAMES_DTS = ROOT / "src" / "mcp_apps_host" / "web" / "static" / "frames.d.ts"


def test_bridge_doc_is_printed_from_the_types():
    text = BRIDGE.read_text(encoding="utf-8")
    section = re.search(r"<!-- frames:start -->\n(.*)<!-- frames:end -->", text, re.DOTALL)
    assert section is not None, "docs/bridge.md lost its frames markers"
    assert section.group(1) == f.frames_markdown(), "docs/bridge.md is out of date: print frames_markdown() into it"


def test_the_pages_frame_types_are_printed_from_the_models():
    # The page's JavaScript is type-checked against this file (tests/code/test_page_code.py): a field renamed
    # here without printing it again would leave the page checked against the old protocol.
    assert FRAMES_DTS.read_text(encoding="utf-8") == f.frames_typescript(), (
        "web/static/frames.d.ts is out of date: print it again with\n"
        "  python -c 'from mcp_apps_host.host.tab.frames import frames_typescript as t; print(t(), end=\"\")'"
        " > src/mcp_apps_host/web/static/frames.d.ts")


def test_the_frame_types_use_wire_names_and_keep_optional_page_fields_optional():
    text = f.frames_typescript()
    assert "export interface CallFinishedFrame {\n  type: \"call-finished\";\n  callId: number;\n" in text
    assert "  isError: boolean;\n  durationMs: number;\n}" in text
    assert "  theme?: \"light\" | \"dark\" | null;" in text  # hello: may be left out
    assert "  trust: string | null;" in text  # view-mount: always sent, null where it does not apply
    page = re.search(r"export type PageFrame =\n(.*?);", text, re.DOTALL)
    host = re.search(r"export type HostFrame =\n(.*?);", text, re.DOTALL)
    assert page and host
    assert page.group(1).count("|") == len(f.PageFrame.__args__)
    assert host.group(1).count("|") == len(f.HostFrame.__args__)


def test_a_valid_frame_becomes_its_type():
    frame = f.parse_page_frame({"type": "consent-reply", "id": 3, "allow": True})
    assert isinstance(frame, f.ConsentReply) and frame.id == 3 and frame.allow and not frame.remember
    hello = f.parse_page_frame({"type": "hello", "theme": "dark", "timeZone": "Europe/Paris", "viewportWidth": 900})
    assert isinstance(hello, f.Hello) and hello.time_zone == "Europe/Paris" and hello.viewport_width == 900


@pytest.mark.parametrize("data, needle", [
    ([1, 2], "frame"),
    ({"type": 5}, "type"),
    ({"type": "nope"}, "type"),
    ({"type": "chat"}, "text: Field required"),
    ({"type": "consent-reply", "id": "3", "allow": True}, "id"),  # no coercion of strings to numbers
    ({"type": "consent-reply", "id": 3, "allow": 1}, "allow"),
    ({"type": "cancel", "callId": True}, "callId"),
    ({"type": "theme", "theme": {}}, "theme"),
    ({"type": "view-close", "view": "v", "extra": 1}, "extra"),
    ({"type": "hello", "locale": "x" * 201}, "locale"),
    ({"type": "view-display-mode", "view": "v", "mode": "maximised"}, "mode"),
])
def test_a_frame_that_is_not_in_the_protocol_is_refused_by_name(data, needle):
    with pytest.raises(InvalidFrame) as caught:
        f.parse_page_frame(data)
    assert needle in str(caught.value)
    assert isinstance(caught.value, HostError)


def test_host_frames_go_out_camel_case_with_every_field():
    text = f.CallFinished(call_id=1, result={"content": []}, is_error=False, duration_ms=12).to_json()
    assert text == '{"type":"call-finished","callId":1,"result":{"content":[]},"isError":false,"durationMs":12}'
