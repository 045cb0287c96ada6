"""The agent loop with the real adapters and SDKs against scripted servers."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, for tests.modelfakes

from mcp_apps_host.chat.agent import STOPPED_RESULT, AgentLoop, ToolOutcome
from mcp_apps_host.chat.events import (
    ModelError,
    StepLimitReached,
    TextDelta,
    ToolCallCancelled,
    ToolCallResult,
    ToolCallStarted,
)
from mcp_apps_host.chat.history import (
    AssistantMessage,
    ModelContextStore,
    ToolCallRecord,
    ToolResultMessage,
    UserMessage,
)
from mcp_apps_host.chat.models import AnthropicAdapter, OpenAIChatAdapter
from mcp_apps_host.chat.tools import build_tool_table
from tests.modelfakes import anthropic_fake, openai_fake, streamed_call, text, tool_call

TOOLS = build_tool_table(
    [
        ("chart", "show-chart", "Draw a chart", {"type": "object"}),
        ("table", "query", "Query a table", {"type": "object"}),
    ]
)


class Provider:
    def __init__(self, name: str) -> None:
        self.name = name
        self.fake = openai_fake if name == "openai" else anthropic_fake

    def adapter(self, base_url: str) -> Any:
        cls = OpenAIChatAdapter if self.name == "openai" else AnthropicAdapter
        return cls("test-model", base_url, "test-key", max_retries=0)

    def tool_results_sent(self, body: dict[str, Any]) -> list[tuple[str, str, bool]]:
        """(call id, text, is_error) of every tool result in a recorded request, in order."""
        found = []
        for msg in body["messages"]:
            if self.name == "openai" and msg["role"] == "tool":
                found.append((msg["tool_call_id"], msg["content"], msg["content"].startswith("[tool error]")))
            elif self.name == "anthropic" and isinstance(msg["content"], list):
                for block in msg["content"]:
                    if block["type"] == "tool_result":
                        found.append(
                            (block["tool_use_id"], block["content"][0]["text"], block.get("is_error", False))
                        )
        return found

    def calls_sent(self, body: dict[str, Any]) -> list[str]:
        ids = []
        for msg in body["messages"]:
            if msg["role"] == "assistant":
                if self.name == "openai":
                    ids += [c["id"] for c in msg.get("tool_calls", [])]
                else:
                    ids += [b["id"] for b in msg["content"] if b["type"] == "tool_use"]
        return ids


@pytest.fixture(params=["openai", "anthropic"])
def provider(request: pytest.FixtureRequest) -> Provider:
    return Provider(request.param)


class Recorder:
    def __init__(self) -> None:
        self.events: list[Any] = []
        self.items: list[Any] = []
        self.executed: list[tuple[str, str, dict[str, Any], str]] = []

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


def run_turn(
    adapter: Any, execute: Any, rec: Recorder, history: list[Any] | None = None, max_steps: int = 8
) -> list[Any]:
    async def main() -> list[Any]:
        try:
            return await AgentLoop(adapter, max_steps=max_steps).run_turn(
                history or [UserMessage("go")], TOOLS, execute, rec.events.append, "system", rec.items.append
            )
        finally:
            await adapter.aclose()

    return asyncio.run(main())


def test_two_tool_calls_run_concurrently_and_are_fed_back_in_order(provider: Provider) -> None:
    script = [
        [
            text("Let me look."),
            *streamed_call("chart__show-chart", '{"title": "Sales"}', 3),
            *streamed_call("table__query", '{"sql": "select 1"}', 3),
        ],
        [text("Both "), text("done.")],
    ]
    rec = Recorder()

    async def main(base_url: str) -> list[Any]:
        both_running = asyncio.Event()

        async def execute(server: str, tool: str, arguments: dict[str, Any], call_id: str) -> ToolOutcome:
            rec.executed.append((server, tool, arguments, call_id))
            if len(rec.executed) == 2:
                both_running.set()
            await asyncio.wait_for(both_running.wait(), 60)  # each waits for the other: they run at once
            # The first call finishes last; results must still reach the model in call order.
            await asyncio.sleep(0.1 if tool == "show-chart" else 0)
            return ToolOutcome.from_call_result({"content": [{"type": "text", "text": f"{tool} ok"}]})

        adapter = provider.adapter(base_url)
        try:
            return await AgentLoop(adapter).run_turn(
                [UserMessage("go")], TOOLS, execute, rec.events.append, "system", rec.items.append
            )
        finally:
            await adapter.aclose()

    with provider.fake.serve_script(script) as fake:
        new = asyncio.run(main(fake.base_url))

    assert [(s, t, a) for s, t, a, _ in rec.executed] == [
        ("chart", "show-chart", {"title": "Sales"}),
        ("table", "query", {"sql": "select 1"}),
    ]
    ids = [c for *_, c in rec.executed]
    assert new == rec.items
    assert new == [
        AssistantMessage(
            "Let me look.",
            (
                ToolCallRecord(ids[0], "chart__show-chart", {"title": "Sales"}),
                ToolCallRecord(ids[1], "table__query", {"sql": "select 1"}),
            ),
        ),
        ToolResultMessage(ids[0], "chart__show-chart", "show-chart ok", False),
        ToolResultMessage(ids[1], "table__query", "query ok", False),
        AssistantMessage("Both done."),
    ]
    assert len(fake.requests) == 2
    assert provider.tool_results_sent(fake.requests[1].body) == [
        (ids[0], "show-chart ok", False),
        (ids[1], "query ok", False),
    ]
    assert provider.calls_sent(fake.requests[1].body) == ids
    results = rec.of(ToolCallResult)
    assert [r.call_id for r in results] == [ids[1], ids[0]]  # emitted as each finished
    assert all(r.executed and not r.is_error for r in results)
    assert [e.text for e in rec.of(TextDelta)] == ["Let me look.", "Both ", "done."]


def test_step_limit(provider: Provider) -> None:
    script = [[*streamed_call("table__query", f'{{"n": {i}}}', 4)] for i in range(3)]
    rec = Recorder()

    async def execute(server: str, tool: str, arguments: dict[str, Any], call_id: str) -> ToolOutcome:
        rec.executed.append((server, tool, arguments, call_id))
        return ToolOutcome("ok", False)

    with provider.fake.serve_script(script) as fake:
        new = run_turn(provider.adapter(fake.base_url), execute, rec, max_steps=2)
    assert len(fake.requests) == 2
    assert [a for _, _, a, _ in rec.executed] == [{"n": 0}, {"n": 1}]
    assert [type(i).__name__ for i in new] == ["AssistantMessage", "ToolResultMessage"] * 2
    [limit] = rec.of(StepLimitReached)
    assert limit.max_steps == 2 and "2 model steps" in limit.message


def test_invented_tool_and_bad_arguments_are_answered_not_run(provider: Provider) -> None:
    script = [
        [
            tool_call("nope__made_up"),
            {"args": '{"a": 1}'},
            tool_call("chart__show-chart"),
            {"args": '{"x": '},
        ],
        [text("Sorry.")],
    ]
    rec = Recorder()

    async def execute(*call: Any) -> ToolOutcome:
        rec.executed.append(call)
        return ToolOutcome("ran", False)

    with provider.fake.serve_script(script) as fake:
        new = run_turn(provider.adapter(fake.base_url), execute, rec)
    assert rec.executed == []
    sent = provider.tool_results_sent(fake.requests[1].body)
    assert len(sent) == 2 and all(is_error for _, _, is_error in sent)
    assert "no tool named 'nope__made_up'" in sent[0][1] and "chart__show-chart" in sent[0][1]
    assert "not a valid JSON object" in sent[1][1]
    assert new[-1] == AssistantMessage("Sorry.")
    assert [r.executed for r in rec.of(ToolCallResult)] == [False, False]


def test_a_failing_tool_is_an_error_result(provider: Provider) -> None:
    script = [[*streamed_call("table__query", "{}", 2)], [text("It failed.")]]

    async def execute(*call: Any) -> ToolOutcome:
        raise RuntimeError("database is down")

    rec = Recorder()
    with provider.fake.serve_script(script) as fake:
        new = run_turn(provider.adapter(fake.base_url), execute, rec)
    assert isinstance(new[1], ToolResultMessage) and new[1].is_error
    assert "database is down" in new[1].content_text
    assert new[-1] == AssistantMessage("It failed.")


def test_model_error_ends_the_turn(provider: Provider) -> None:
    rec = Recorder()

    async def execute(*call: Any) -> ToolOutcome:
        raise AssertionError("not reached")

    with provider.fake.serve_script([{"status": 500, "error": "upstream broke"}]) as fake:
        new = run_turn(provider.adapter(fake.base_url), execute, rec)
    assert new == []
    [error] = rec.of(ModelError)
    assert "500" in error.message and "upstream broke" in error.message


def test_stop_while_a_tool_runs_cancels_it_and_keeps_a_valid_history(provider: Provider) -> None:
    script = [
        [
            text("Working on it."),
            *streamed_call("chart__show-chart", '{"a": 1}', 3),
            *streamed_call("table__query", '{"b": 2}', 3),
        ]
    ]
    rec = Recorder()
    seen_cancel: list[str] = []

    async def main(base_url: str) -> None:
        adapter = provider.adapter(base_url)
        running = asyncio.Event()
        quick_done = asyncio.Event()

        async def execute(server: str, tool: str, arguments: dict[str, Any], call_id: str) -> ToolOutcome:
            if tool == "query":
                quick_done.set()
                return ToolOutcome("quick", False)
            running.set()
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                seen_cancel.append(call_id)
                raise
            return ToolOutcome("never", False)

        task = asyncio.create_task(
            AgentLoop(adapter).run_turn(
                [UserMessage("go")], TOOLS, execute, rec.events.append, "system", rec.items.append
            )
        )
        await asyncio.wait_for(running.wait(), 60)
        await asyncio.wait_for(quick_done.wait(), 60)
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await adapter.aclose()

    with provider.fake.serve_script(script) as fake:
        asyncio.run(main(fake.base_url))
        assert len(fake.requests) == 1 and fake.requests[0].outcome == "completed"

    assistant, slow, quick = rec.items
    assert isinstance(assistant, AssistantMessage) and assistant.text == "Working on it."
    assert seen_cancel == [assistant.tool_calls[0].call_id]
    assert slow == ToolResultMessage(
        assistant.tool_calls[0].call_id, "chart__show-chart", STOPPED_RESULT, True
    )
    assert quick == ToolResultMessage(assistant.tool_calls[1].call_id, "table__query", "quick", False)
    assert [(c.call_id, c.reason) for c in rec.of(ToolCallCancelled)] == [(seen_cancel[0], "stopped")]


def test_stop_while_the_model_streams_keeps_the_text_and_closes_the_stream(provider: Provider) -> None:
    script = [
        [
            text("Half "),
            text("a thought"),
            tool_call("chart__show-chart"),
            {"args": '{"ti'},
            {"hang": True},
            {"args": 'tle": "x"}'},
        ]
    ]
    rec = Recorder()

    async def main(base_url: str) -> None:
        adapter = provider.adapter(base_url)
        started = asyncio.Event()

        def emit(event: Any) -> None:
            rec.events.append(event)
            if isinstance(event, ToolCallStarted):
                started.set()

        async def execute(*call: Any) -> ToolOutcome:
            raise AssertionError("not reached")

        task = asyncio.create_task(
            AgentLoop(adapter).run_turn([UserMessage("go")], TOOLS, execute, emit, "system", rec.items.append)
        )
        await asyncio.wait_for(started.wait(), 60)
        task.cancel()  # the script hangs after the tool call's first arguments: the stream is still open
        with pytest.raises(asyncio.CancelledError):
            await task
        await adapter.aclose()

    with provider.fake.serve_script(script) as fake:
        asyncio.run(main(fake.base_url))
        assert fake.wait_for(lambda: fake.requests[0].outcome == "disconnected", timeout=30)
    assert rec.items == [AssistantMessage("Half a thought")]
    [cancelled] = rec.of(ToolCallCancelled)
    assert cancelled.name == "chart__show-chart" and cancelled.reason == "stopped"


def test_app_context_reaches_the_model_once_latest_only(provider: Provider) -> None:
    store = ModelContextStore()
    store.update("view-1", "chart", "show-chart", [{"type": "text", "text": "selection: January"}], None)
    store.update("view-1", "chart", "show-chart", [{"type": "text", "text": "selection: March"}], None)
    rec = Recorder()

    async def execute(*call: Any) -> ToolOutcome:
        raise AssertionError("not reached")

    with provider.fake.serve_script([[text("March it is.")], [text("Still March.")]]) as fake:
        history: list[Any] = [*store.take_pending(), UserMessage("Which month did I pick?")]
        history += run_turn(provider.adapter(fake.base_url), execute, rec, history=list(history))
        history += [*store.take_pending(), UserMessage("And now?")]  # no new update: nothing added
        run_turn(provider.adapter(fake.base_url), execute, rec, history=list(history))

    for request in fake.requests:
        sent = json.dumps(request.body)
        assert sent.count("<app-context ") == 1
        assert "selection: March" in sent and "January" not in sent
        assert "not the person's words" in sent
    first_user = fake.requests[0].body["messages"][-1]
    content = json.dumps(first_user["content"])
    assert content.index("<app-context ") < content.index("Which month did I pick?")
