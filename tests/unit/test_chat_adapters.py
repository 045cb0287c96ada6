"""Both model adapters, with the real SDKs, against scripted servers on loopback."""

from __future__ import annotations

import asyncio
import json
import sys
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, for tests.modelfakes

from mcp_apps_host.chat.events import (
    ModelError,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallFinished,
    ToolCallInvalid,
    ToolCallStarted,
    TurnFinished,
)
from mcp_apps_host.chat.history import UserMessage
from mcp_apps_host.chat.models import (
    PLACEHOLDER_KEY,
    AnthropicAdapter,
    OpenAIChatAdapter,
    make_adapter,
)
from mcp_apps_host.chat.tools import build_tool_table
from tests.modelfakes import anthropic_fake, args, finish, openai_fake, streamed_call, text, tool_call

KEY = "sk-test-0123456789abcdef"
TOOLS = build_tool_table(
    [
        (
            "chart",
            "show-chart",
            "Draw a chart",
            {"type": "object", "properties": {"title": {"type": "string"}}},
        ),
        ("table", "query", "Query a table", {"type": "object"}),
    ]
)
ARGS = {"title": "Sales by region", "series": [{"name": "north", "values": [1, 2.5, 30]}], "stacked": False}


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> set[tuple[Any, ...]]:
    found = {prefix}
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found |= paths(item, (*prefix, key))
    return found


class Provider:
    def __init__(self, name: str) -> None:
        self.name = name
        self.fake = openai_fake if name == "openai" else anthropic_fake

    def adapter(self, base_url: str, api_key: str | None = KEY) -> Any:
        cls = OpenAIChatAdapter if self.name == "openai" else AnthropicAdapter
        return cls("test-model", base_url, api_key, max_retries=0)


@pytest.fixture(params=["openai", "anthropic"])
def provider(request: pytest.FixtureRequest) -> Provider:
    return Provider(request.param)


def collect(adapter: Any, history: list[Any] | None = None) -> list[Any]:
    async def run() -> list[Any]:
        try:
            return [e async for e in adapter.stream(history or [UserMessage("hi")], TOOLS, "be brief")]
        finally:
            await adapter.aclose()

    return asyncio.run(run())


async def disconnected(fake: Any, timeout: float = 3.0) -> bool:
    """Poll (without blocking the loop) until the fake saw its client go away, before the client is closed."""
    for _ in range(int(timeout / 0.02)):
        if fake.requests and fake.requests[0].outcome == "disconnected":
            return True
        await asyncio.sleep(0.02)
    return False


def call_events(events: list[Any], index: int) -> list[Any]:
    return [e for e in events if getattr(e, "index", None) == index and not isinstance(e, TextDelta)]


def test_text_streams_in_order(provider: Provider) -> None:
    pieces = ["Hel", "lo", ", ", "wor", "ld", "!"]
    with provider.fake.serve_script([[text(p) for p in pieces]]) as fake:
        events = collect(provider.adapter(fake.base_url))
    assert [e.text for e in events if isinstance(e, TextDelta)] == pieces
    assert isinstance(events[-1], TurnFinished) and events[-1].stop_reason == "stop"
    assert events[-1].usage and events[-1].usage["output_tokens"] == 7
    body = fake.requests[0].body
    assert body["model"] == "test-model" and body["stream"] is True
    if provider.name == "openai":
        assert body["messages"] == [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hi"},
        ]
        assert [t["function"]["name"] for t in body["tools"]] == ["chart__show-chart", "table__query"]
    else:
        assert body["system"] == "be brief"
        assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
        assert [t["name"] for t in body["tools"]] == ["chart__show-chart", "table__query"]


def test_tool_call_arguments_over_many_chunks(provider: Provider) -> None:
    raw = json.dumps(ARGS)
    script = [[text("Drawing."), *streamed_call("chart__show-chart", raw, size=3)]]
    with provider.fake.serve_script(script) as fake:
        events = collect(provider.adapter(fake.base_url))
    mine = call_events(events, 0)
    assert isinstance(mine[0], ToolCallStarted) and mine[0].name == "chart__show-chart"
    deltas = mine[1:-1]
    assert deltas and all(isinstance(d, ToolCallArgsDelta) for d in deltas)
    assert len(deltas) == len(range(0, len(raw), 3))
    for before, after in pairwise(deltas):
        assert after.raw_so_far.startswith(before.raw_so_far) and len(after.raw_so_far) > len(
            before.raw_so_far
        )
    parsed = [d.parsed for d in deltas if d.parsed is not None]
    assert len(parsed) > 5 and all(a != b for a, b in pairwise(parsed))  # only when it changed
    for before, after in pairwise(parsed):
        assert paths(before) <= paths(after)
    assert parsed[-1] == ARGS
    assert mine[-1] == ToolCallFinished(0, mine[0].call_id, "chart__show-chart", ARGS)
    assert {e.call_id for e in mine} == {mine[0].call_id}
    assert events.index(mine[-1]) < len(events) - 1 and events[-1] == TurnFinished(
        "tool_calls", events[-1].usage
    )


def test_two_tool_calls_in_one_turn(provider: Provider) -> None:
    script = [
        [
            *streamed_call("chart__show-chart", '{"title": "A"}', 4),
            *streamed_call("table__query", '{"sql": "select 1"}', 5),
        ]
    ]
    with provider.fake.serve_script(script) as fake:
        events = collect(provider.adapter(fake.base_url))
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [(f.index, f.name, f.arguments) for f in finished] == [
        (0, "chart__show-chart", {"title": "A"}),
        (1, "table__query", {"sql": "select 1"}),
    ]
    assert finished[0].call_id != finished[1].call_id
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    assert [s.call_id for s in started] == [f.call_id for f in finished]


def test_invalid_final_arguments(provider: Provider) -> None:
    script = [[tool_call("chart__show-chart"), args('{"title": "A",'), args(" oops}")]]
    with provider.fake.serve_script(script) as fake:
        events = collect(provider.adapter(fake.base_url))
    invalid = [e for e in events if isinstance(e, ToolCallInvalid)]
    assert len(invalid) == 1 and not any(isinstance(e, ToolCallFinished) for e in events)
    assert invalid[0].raw == '{"title": "A", oops}' and "JSON" in invalid[0].error
    assert isinstance(events[-1], TurnFinished)


def test_non_object_arguments_are_invalid(provider: Provider) -> None:
    with provider.fake.serve_script([[tool_call("table__query"), args("[1, 2]")]]) as fake:
        events = collect(provider.adapter(fake.base_url))
    assert [e.error for e in events if isinstance(e, ToolCallInvalid)] == [
        "arguments must be a JSON object, got list"
    ]


def test_http_error_becomes_model_error_without_the_key(provider: Provider) -> None:
    turn = {"status": 401, "error": f"Incorrect API key provided: {KEY}. Check your key."}
    with provider.fake.serve_script([turn]) as fake:
        events = collect(provider.adapter(fake.base_url))
    assert len(events) == 1 and isinstance(events[0], ModelError)
    assert "401" in events[0].message and "Incorrect API key provided" in events[0].message
    assert KEY not in events[0].message and "0123456789abcdef" not in events[0].message


def test_error_in_the_middle_of_the_stream(provider: Provider) -> None:
    with provider.fake.serve_script([[text("Hi"), {"error": "the model is overloaded"}]]) as fake:
        events = collect(provider.adapter(fake.base_url))
    assert events[0] == TextDelta("Hi")
    assert isinstance(events[-1], ModelError) and "overloaded" in events[-1].message
    assert not any(isinstance(e, TurnFinished) for e in events)


def test_unreachable_server_is_a_model_error(provider: Provider) -> None:
    with provider.fake.serve_script([]) as fake:
        base_url = fake.base_url
    events = collect(provider.adapter(base_url))
    assert len(events) == 1 and isinstance(events[0], ModelError)
    assert "127.0.0.1" in events[0].message


def test_cancelling_the_consumer_closes_the_stream(provider: Provider) -> None:
    async def run(fake: Any) -> list[Any]:
        adapter = provider.adapter(fake.base_url)
        seen: list[Any] = []
        got_text = asyncio.Event()

        async def consume() -> None:
            async for event in adapter.stream([UserMessage("hi")], TOOLS, ""):
                seen.append(event)
                got_text.set()

        task = asyncio.create_task(consume())
        await asyncio.wait_for(got_text.wait(), 60)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await disconnected(fake)  # closed by the adapter, not by closing the client
        await adapter.aclose()
        return seen

    with provider.fake.serve_script([[text("partial"), {"hang": True}, text("never")]]) as fake:
        seen = asyncio.run(run(fake))
        assert seen == [TextDelta("partial")]


# ---- provider specifics ----------------------------------------------------------------------------


def test_openai_compatible_shapes_from_local_servers() -> None:
    # No ids, whole arguments in the start chunk, no index on one call, and finish_reason "stop".
    script = [
        [
            tool_call("chart__show-chart", None, arguments='{"title": "A"}'),
            tool_call("table__query", None, arguments='{"q": 1}', omit_index=True),
            finish("stop"),
        ]
    ]
    with openai_fake.serve_script(script) as fake:
        events = collect(OpenAIChatAdapter("m", fake.base_url, "k", max_retries=0))
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [(f.index, f.name, f.arguments) for f in finished] == [
        (0, "chart__show-chart", {"title": "A"}),
        (1, "table__query", {"q": 1}),
    ]
    ids = [f.call_id for f in finished]
    assert len(set(ids)) == 2 and all(i.startswith("call_") for i in ids)
    for f in finished:  # the made-up id is the same in every event of the call
        assert {e.call_id for e in call_events(events, f.index)} == {f.call_id}
    assert events[-1].stop_reason == "stop"


def test_anthropic_input_given_whole_at_block_start() -> None:
    script = [[tool_call("table__query", input={"q": "all"})]]
    with anthropic_fake.serve_script(script) as fake:
        events = collect(AnthropicAdapter("m", fake.base_url, "k", max_retries=0))
    assert [e.arguments for e in events if isinstance(e, ToolCallFinished)] == [{"q": "all"}]


# ---- make_adapter ----------------------------------------------------------------------------------


def test_make_adapter_specs() -> None:
    env = {"OPENAI_API_KEY": "k1", "ANTHROPIC_API_KEY": "k2"}
    assert make_adapter("none", None, env=env) is None
    assert make_adapter(" NONE ", None, env=env) is None
    openai_adapter = make_adapter("openai:llama3.1:8b", "http://127.0.0.1:9/v1", env=env)
    assert isinstance(openai_adapter, OpenAIChatAdapter) and openai_adapter.model == "llama3.1:8b"
    anthropic_adapter = make_adapter("anthropic:claude-x", None, env=env)
    assert isinstance(anthropic_adapter, AnthropicAdapter) and anthropic_adapter.label == "anthropic:claude-x"
    for bad, words in [
        ("gpt-4o", "openai:MODEL"),
        ("mistral:large", "openai:MODEL"),
        ("openai:", "model name"),
        ("anthropic:  ", "model name"),
        ("", "none"),
    ]:
        with pytest.raises(ValueError, match=words):
            make_adapter(bad, None, env=env)
    with pytest.raises(ValueError, match="http"):
        make_adapter("openai:m", "ftp://example", env=env)


def test_missing_key_for_official_endpoints_names_the_variable() -> None:
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        make_adapter("openai:gpt-4o-mini", None, env={})
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        make_adapter("openai:gpt-4o-mini", "https://api.openai.com/v1", env={})
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY"):
        make_adapter("anthropic:claude-x", None, env={})


def test_local_server_needs_no_key() -> None:
    with openai_fake.serve_script([[text("ok")]]) as fake:
        adapter = make_adapter("openai:local", fake.base_url, env={})
        events = collect(adapter)
    assert events[0] == TextDelta("ok")
    assert fake.requests[0].headers["authorization"] == f"Bearer {PLACEHOLDER_KEY}"


def test_cancel_scope_cancellation_also_closes_the_stream(provider: Provider) -> None:
    # anyio cancels level-triggered: every await in the cancelled scope fails at once, so closing
    # the stream must be shielded to happen at all.
    import anyio

    async def run(fake: Any) -> list[Any]:
        adapter = provider.adapter(fake.base_url)
        seen: list[Any] = []
        got_text = anyio.Event()

        async def consume() -> None:
            async for event in adapter.stream([UserMessage("hi")], TOOLS, ""):
                seen.append(event)
                got_text.set()

        async with anyio.create_task_group() as group:
            group.start_soon(consume)
            await got_text.wait()
            await anyio.sleep(0.05)  # the consumer now waits inside the adapter for a chunk that never comes
            group.cancel_scope.cancel()
        assert await disconnected(fake)
        await adapter.aclose()
        return seen

    with provider.fake.serve_script([[text("partial"), {"hang": True}]]) as fake:
        seen = anyio.run(run, fake)
        assert seen == [TextDelta("partial")]


@pytest.mark.parametrize("name", ["openai", "anthropic"])
def test_fakes_run_from_the_command_line(name: str, tmp_path: Path) -> None:
    import subprocess

    script = tmp_path / "script.json"
    script.write_text(json.dumps([[text("from "), text("the CLI")]]))
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-m", f"tests.modelfakes.{name}_fake", "--script", str(script), "--delay", "0"],
        cwd=root,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line.startswith("fake model server at http://127.0.0.1:"), line
        base_url = line.split(" at ", 1)[1].strip()
        events = collect(Provider(name).adapter(base_url))
        assert [e.text for e in events if isinstance(e, TextDelta)] == ["from ", "the CLI"]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_demo_script_calls_the_demo_chart_tool() -> None:
    script = json.loads((Path(__file__).resolve().parents[1] / "modelfakes" / "demo_script.json").read_text())
    demo_name = build_tool_table([("chart", "show-chart", "", {})]).names()[0]
    with openai_fake.serve_script(script, delay=0) as fake:
        events = collect(OpenAIChatAdapter("m", fake.base_url, "k", max_retries=0))
    assert [(e.name, e.arguments) for e in events if isinstance(e, ToolCallFinished)] == [
        (demo_name, {"metric": "users", "months": 18})
    ]
