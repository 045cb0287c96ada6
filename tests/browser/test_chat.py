"""Chat with a model, in a real browser against a scripted OpenAI-compatible server: streamed tool
input into views, several calls a turn, Stop, the model's tool list, ui/message and model context."""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path

import pytest
from harness import view_frame, view_locator, wait_view

from tests.modelfakes import anthropic_fake, openai_fake, streamed_call, text

pytestmark = pytest.mark.browser

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "servers.py"
REC = shlex.join([sys.executable, str(FIXTURES), "rec"])


def say(page, line: str) -> None:
    box = page.locator("[data-testid=chat-input]")
    box.fill(line)
    box.press("Enter")


def seen(frame) -> list[str]:
    return list(frame.locator("li.seen").all_inner_texts())


def wait_seen(frame, predicate, timeout: float = 20) -> list[str]:
    deadline = time.monotonic() + timeout
    while True:
        lines = seen(frame)
        if predicate(lines):
            return lines
        assert time.monotonic() < deadline, lines
        time.sleep(0.1)


def start(start_host, page_for, fake, base_url: str, kind: str = "openai"):
    host = start_host(servers={"rec": REC}, extra_args=["--model", f"{kind}:fake", "--model-base-url", base_url])
    return host, page_for(host)


def test_view_gets_partial_inputs_in_order_then_input_and_result(start_host, page_for):
    arguments = json.dumps({"action": "show", "text": "hello streaming world", "n": 42})
    script = [[text("Recording. "), *streamed_call("rec__record", arguments, size=5)], [text("Done.")]]
    with openai_fake.serve_script(script, delay=0.02) as fake:
        _host, page = start(start_host, page_for, fake, fake.base_url)
        say(page, "record something")
        frame = view_frame(wait_view(page, "rec", "record"))
        lines = wait_seen(frame, lambda ls: any(line.startswith("tool-result") for line in ls))
        kinds = [line.split(" ", 1)[0] for line in lines]
        assert kinds.count("tool-input") == 1 and kinds[-1] == "tool-result"
        assert kinds.index("tool-input") == len(kinds) - 2
        partials = [json.loads(line.split(" ", 1)[1]) for line in lines if line.startswith("tool-input-partial")]
        assert len(partials) >= 2  # the arguments arrived in pieces and the view saw them grow
        texts = [p.get("text", "") for p in partials]
        assert all(texts[i] in texts[i + 1] or texts[i + 1].startswith(texts[i]) for i in range(len(texts) - 1))
        assert json.loads(lines[-2].split(" ", 1)[1]) == json.loads(arguments)
        page.get_by_text("Done.").wait_for(timeout=10_000)
        # The model only sees tools with "model" visibility.
        tool_names = {t["function"]["name"] for t in fake.requests[0].body["tools"]}
        assert "rec__record" in tool_names and not any("app-only" in n for n in tool_names)
        # The second request carries the tool result.
        second = fake.requests[1].body["messages"]
        assert any(m["role"] == "tool" for m in second)


def test_two_tool_calls_in_one_turn(start_host, page_for):
    first = streamed_call("rec__record", json.dumps({"text": "one"}), call_id="c1")
    second = streamed_call("rec__record", json.dumps({"text": "two"}), call_id="c2")
    with openai_fake.serve_script([[*first, *second], [text("Both recorded.")]]) as fake:
        _host, page = start(start_host, page_for, fake, fake.base_url)
        say(page, "record two things")
        page.get_by_text("Both recorded.").wait_for(timeout=20_000)
        views = page.locator('[data-testid=view][data-server="rec"][data-tool="record"]')
        assert views.count() == 2
        results = sorted(view_frame(views.nth(i)).locator('[data-check="result"]').inner_text() for i in range(2))
        assert '"one"' in results[0] and '"two"' in results[1]
        tool_messages = [m for m in fake.requests[1].body["messages"] if m["role"] == "tool"]
        assert len(tool_messages) == 2


def test_stop_cancels_the_running_tool_and_tells_the_view(start_host, page_for):
    script = [[*streamed_call("rec__record-slow", json.dumps({"seconds": 60}))], [text("never")]]
    with openai_fake.serve_script(script) as fake:
        _host, page = start(start_host, page_for, fake, fake.base_url)
        say(page, "take your time")
        frame = view_frame(wait_view(page, "rec", "record-slow"))
        wait_seen(frame, lambda ls: any(line.startswith("tool-input ") for line in ls))
        page.locator("[data-testid=stop]").click()
        lines = wait_seen(frame, lambda ls: any(line.startswith("tool-cancelled") for line in ls))
        assert not any(line.startswith("tool-result") for line in lines)
        time.sleep(1)
        assert len(fake.requests) == 1  # the model was not asked again after Stop


def test_ui_message_waits_for_consent_and_is_dropped_on_deny(start_host, page_for):
    call = streamed_call("rec__record", json.dumps({"action": "message", "text": "please summarise"}))
    with openai_fake.serve_script([[*call], [text("Recorded.")], [text("Here is a summary.")]]) as fake:
        _host, page = start(start_host, page_for, fake, fake.base_url)
        say(page, "record")
        page.get_by_text("Recorded.").wait_for(timeout=20_000)
        dialog = page.locator('[data-testid=consent][data-kind="message"]')
        dialog.wait_for(timeout=10_000)
        assert "please summarise" in dialog.inner_text() and "rec" in dialog.inner_text()
        time.sleep(0.5)
        assert len(fake.requests) == 2  # nothing reached the model while the person decides
        dialog.locator("[data-testid=consent-deny]").click()
        frame = view_frame(view_locator(page, "rec", "record"))
        assert frame.locator('[data-check="message"]').inner_text().startswith("error:")
        time.sleep(1)
        assert len(fake.requests) == 2

        say(page, "/call rec record " + json.dumps({"action": "message", "text": "please summarise"}))
        page.locator('[data-testid=consent][data-kind="message"]').wait_for(timeout=10_000)
        page.locator("[data-testid=consent-allow]").click()
        page.get_by_text("Here is a summary.").wait_for(timeout=20_000)
        last_user = [m for m in fake.requests[2].body["messages"] if m["role"] == "user"][-1]
        assert "please summarise" in json.dumps(last_user)


def test_model_context_latest_only_and_labelled(start_host, page_for):
    with openai_fake.serve_script([[text("Noted.")]]) as fake:
        _host, page = start(start_host, page_for, fake, fake.base_url)
        say(page, "/call rec record " + json.dumps({"action": "context", "text": "row 7"}))
        frame = view_frame(wait_view(page, "rec", "record"))
        assert frame.locator('[data-check="context-2"]').inner_text().startswith("ok:")
        say(page, "what did I select?")
        page.get_by_text("Noted.").wait_for(timeout=20_000)
        body = json.dumps([m for m in fake.requests[0].body["messages"] if m["role"] != "system"])
        assert body.count("<app-context") == 1
        assert "latest context" in body and "first context" not in body and "row 7" in body
        assert 'server=\\"rec\\"' in body or "server=\"rec\"" in body


def test_anthropic_adapter_drives_a_view(start_host, page_for):
    arguments = json.dumps({"text": "from claude"})
    script = [[text("Sure. "), *streamed_call("rec__record", arguments, size=3)], [text("All set.")]]
    with anthropic_fake.serve_script(script) as fake:
        _host, page = start(start_host, page_for, fake, fake.base_url, kind="anthropic")
        say(page, "record with anthropic")
        frame = view_frame(wait_view(page, "rec", "record"))
        assert "from claude" in frame.locator('[data-check="result"]').inner_text(timeout=20_000)
        page.get_by_text("All set.").wait_for(timeout=20_000)


def test_sampling_asks_and_answers_only_when_enabled(start_host, page_for, tmp_path):
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"mcpServers": {"rec": {"command": sys.executable, "args": [str(FIXTURES), "rec"]},
                                                 "off": {"command": sys.executable, "args": [str(FIXTURES), "rec"]}},
                                  "sampling": {"rec": {"enabled": True, "maxPerMinute": 2}}}))
    with openai_fake.serve_script([[text("a sampled haiku")]]) as fake:
        host = start_host(config=config, extra_args=["--model", "openai:fake", "--model-base-url", fake.base_url])
        page = page_for(host)
        say(page, "/call off record " + json.dumps({"action": "sample", "text": "write a haiku"}))
        frame = view_frame(wait_view(page, "off", "record"))
        assert "sampling is off" in frame.locator('[data-check="sample"]').inner_text(timeout=15_000)

        say(page, "/call rec record " + json.dumps({"action": "sample", "text": "write a haiku"}))
        dialog = page.locator('[data-testid=consent][data-kind="sampling"]')
        dialog.wait_for(timeout=15_000)
        assert "write a haiku" in dialog.inner_text()
        dialog.locator("[data-testid=consent-deny]").click()
        frame = view_frame(wait_view(page, "rec", "record"))
        assert frame.locator('[data-check="sample"]').inner_text(timeout=15_000).startswith("error:")
        assert len(fake.requests) == 0

        say(page, "/call rec record " + json.dumps({"action": "sample", "text": "write a haiku"}))
        page.locator('[data-testid=consent][data-kind="sampling"]').wait_for(timeout=15_000)
        page.locator("[data-testid=consent-allow]").click()
        frame = view_frame(view_locator(page, "rec", "record"))
        assert "a sampled haiku" in frame.locator('[data-check="sample"]').inner_text(timeout=15_000)
        assert len(fake.requests) == 1

        # Both asks of the minute are spent (a declined one counts): the third is refused unasked.
        before = view_locator(page, "rec", "record").element_handle()
        say(page, "/call rec record " + json.dumps({"action": "sample", "text": "one more haiku"}))
        page.wait_for_function("old => { const views = document.querySelectorAll("
                               "'[data-testid=view][data-tool=record]'); return views[views.length - 1] !== old; }",
                               arg=before, timeout=15_000)
        frame = view_frame(view_locator(page, "rec", "record"))
        refused = frame.locator('[data-check="sample"]').inner_text(timeout=15_000)
        assert refused.startswith("error:") and "at most 2 times a minute" in refused, refused
        assert page.locator('[data-testid=consent][data-kind="sampling"]').count() == 0
        assert len(fake.requests) == 1
