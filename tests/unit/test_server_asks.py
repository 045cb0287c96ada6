"""What servers ask the host: the elicitation form's schema and values, the dialog in a tab (form and link,
invalid values, time-outs), which tab is asked, sampling through the policy, and roots from the config
file and the command line."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from mcp_apps_host.config.host import HostConfig
from mcp_apps_host.config.policies import SamplingSettings
from mcp_apps_host.config.servers import ServerSpec, apply_root_flags
from mcp_apps_host.errors import CallFailed, ConfigError
from mcp_apps_host.host.process.serverasks import HostAsks
from mcp_apps_host.host.tab import frames as f
from mcp_apps_host.host.tab.asking import TabAsks
from mcp_apps_host.host.tab.consents import Consents
from mcp_apps_host.host.tab.page import Page
from mcp_apps_host.policy.consent import ConsentPolicy, SamplingPolicy
from mcp_apps_host.settings import Limits
from mcp_apps_host.values.elicitation import content_problem, schema_problem

pytestmark = pytest.mark.anyio


SCHEMA = {"type": "object", "required": ["name"], "properties": {
    "name": {"type": "string", "minLength": 2},
    "email": {"type": "string", "format": "email"},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "agree": {"type": "boolean"},
    "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
    "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "maxItems": 1},
}}


# ---- the schema and the values -----------------------------------------------------------------------


@pytest.mark.parametrize("schema, needle", [
    ({"type": "array"}, "object schema"),
    ({"type": "object", "properties": {"x": {"type": "object"}}}, "no nesting"),
    ({"type": "object", "properties": {"x": {"type": "array", "items": {"type": "string"}}}}, "choices"),
    ({"type": "object", "properties": {"x": {"type": "string"}}, "required": ["y"]}, "required"),
    ({"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(4)}}, "max_elicitation_fields (3)"),
])
def test_schemas_the_host_cannot_show_are_named(schema, needle):
    assert needle in (schema_problem(schema, max_fields=3) or "")


def test_the_restricted_schema_is_accepted():
    assert schema_problem(SCHEMA, max_fields=50) is None


@pytest.mark.parametrize("content, needle", [
    ({}, "required: name"),
    ({"name": "Ada", "extra": 1}, "not asked for: extra"),
    ({"name": "A"}, "at least 2"),
    ({"name": "Ada", "email": "nope"}, "email"),
    ({"name": "Ada", "age": 2.5}, "whole number"),
    ({"name": "Ada", "age": True}, "whole number"),
    ({"name": "Ada", "age": 200}, "between"),
    ({"name": "Ada", "agree": "yes"}, "true or false"),
    ({"name": "Ada", "size": "m"}, "one of"),
    ({"name": "Ada", "tags": ["a", "b"]}, "between"),
    ({"name": "Ada", "tags": ["c"]}, "choose from"),
    ([], "object"),
])
def test_values_that_do_not_fit_are_named(content, needle):
    assert needle in (content_problem(SCHEMA, content) or "")


def test_values_that_fit():
    assert content_problem(SCHEMA, {"name": "Ada", "email": "a@b.org", "age": 36, "agree": True, "size": "l",
                                    "tags": ["b"]}) is None


# ---- the dialog in one tab -------------------------------------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.frames: list[Any] = []
        self.events: list[tuple[str, str | None, str | None]] = []

    def send(self, frame: Any) -> None:
        self.frames.append(frame)

    def audit(self, direction: str, method: str | None, **kw: Any) -> None:
        self.events.append((direction, method, kw.get("decision")))

    def of(self, kind: type) -> list[Any]:
        return [fr for fr in self.frames if isinstance(fr, kind)]


def tab(limits: Limits | None = None) -> tuple[TabAsks, Recorder, Consents]:
    rec = Recorder()
    page = Page(rec.send)
    consents = Consents(page, ConsentPolicy())
    return TabAsks(page, consents, rec.audit, limits or Limits()), rec, consents  # type: ignore[arg-type]


async def shown(rec: Recorder, kind: type = f.Elicit) -> Any:
    while not rec.of(kind):
        await asyncio.sleep(0)
    return rec.of(kind)[-1]


async def test_a_form_is_asked_checked_and_answered():
    asks, rec, _ = tab()
    waiting = asyncio.create_task(asks.elicit("pdf", {"message": "Fill the form", "requestedSchema": SCHEMA}))
    frame = await shown(rec)
    assert (frame.server, frame.mode, frame.message, frame.requested_schema) == ("pdf", "form", "Fill the form",
                                                                               SCHEMA)
    asks.reply(frame.id, "accept", {"name": "A"})  # too short: the dialog stays open and says why
    assert "at least 2" in rec.of(f.ElicitInvalid)[-1].error and not waiting.done()
    asks.reply(frame.id, "accept", {"name": "Ada"})
    assert await waiting == {"action": "accept", "content": {"name": "Ada"}}
    assert rec.of(f.ElicitDismiss)[-1].id == frame.id
    assert ("server->host", "elicitation/create", "asked") in rec.events
    assert ("host->server", "elicitation/create", "consented") in rec.events


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_decline_and_cancel_carry_no_content(action):
    asks, rec, _ = tab()
    waiting = asyncio.create_task(asks.elicit("pdf", {"message": "m", "requestedSchema": SCHEMA}))
    asks.reply((await shown(rec)).id, action, {"name": "ignored"})
    assert await waiting == {"action": action}
    assert ("host->server", "elicitation/create", "declined") in rec.events


async def test_a_link_is_shown_like_a_views_link_and_opened_on_accept():
    asks, rec, _ = tab()
    waiting = asyncio.create_task(asks.elicit("pay", {"mode": "url", "message": "Sign in",
                                                      "url": "https://xn--pypal-4ve.com/login",
                                                      "elicitationId": "e1"}))
    frame = await shown(rec)
    assert frame.mode == "url" and frame.href == "https://xn--pypal-4ve.com/login" and frame.warnings
    asks.reply(frame.id, "accept", None)
    assert await waiting == {"action": "accept"}
    assert rec.of(f.OpenLink)[-1].url == "https://xn--pypal-4ve.com/login"


@pytest.mark.parametrize("params, needle", [
    ({"message": "m", "requestedSchema": {"type": "object", "properties": {"x": {"type": "object"}}}}, "nesting"),
    ({"mode": "url", "message": "m", "url": "javascript:alert(1)"}, "http"),
])
async def test_a_request_that_cannot_be_shown_is_refused_by_reason(params, needle):
    asks, rec, _ = tab()
    with pytest.raises(CallFailed, match=needle) as caught:
        await asks.elicit("s", params)
    assert caught.value.code == -32602 and not rec.of(f.Elicit)


async def test_an_unanswered_question_is_cancelled_after_the_time_limit():
    asks, rec, _ = tab(Limits(elicitation_timeout=0.05))
    answer = await asks.elicit("s", {"message": "m", "requestedSchema": SCHEMA})
    assert answer == {"action": "cancel"}
    assert rec.of(f.ElicitDismiss)
    assert ("host->server", "elicitation/create", "declined") in rec.events


# ---- which tab is asked, and sampling -------------------------------------------------------------------


async def test_the_tab_calling_the_server_is_asked_else_the_last_active_else_nobody():
    host = HostAsks(SamplingPolicy({}), None, None)
    assert await host.elicit("pdf", {"message": "m", "requestedSchema": SCHEMA}) == {"action": "cancel"}
    first, first_rec, _ = tab()
    second, second_rec, _ = tab()
    host.attach(first)
    host.attach(second)
    second.last_active = first.last_active + 10
    with first.calling("pdf"):
        waiting = asyncio.create_task(host.elicit("pdf", {"message": "m", "requestedSchema": SCHEMA}))
        first.reply((await shown(first_rec)).id, "decline", None)
        assert await waiting == {"action": "decline"}
    waiting = asyncio.create_task(host.elicit("pdf", {"message": "m", "requestedSchema": SCHEMA}))
    frame = await shown(second_rec)
    host.detach(second)  # the tab closes: nobody will answer
    assert await waiting == {"action": "cancel"} and frame.id == 0


class Adapter:
    label = "fake-model"

    def __init__(self) -> None:
        self.asked = 0

    async def stream(self, history: Any, tools: Any, system: str) -> Any:
        from mcp_apps_host.chat.events import TextDelta, TurnFinished

        self.asked += 1
        yield TextDelta("a haiku")
        yield TurnFinished("stop", None)


class Agent:
    def __init__(self) -> None:
        self.adapter = Adapter()


SAMPLE = {"messages": [{"role": "user", "content": {"type": "text", "text": "write a haiku"}}], "maxTokens": 20}


async def test_sampling_from_a_server_goes_through_the_policy_the_person_and_the_rate_limit():
    agent = Agent()
    host = HostAsks(SamplingPolicy({"on": SamplingSettings(enabled=True, max_per_minute=1)}), agent, None)  # type: ignore[arg-type]
    asks, rec, consents = tab()
    host.attach(asks)
    assert host.sampling_enabled("on") and not host.sampling_enabled("off")
    with pytest.raises(CallFailed, match="sampling is off"):
        await host.sample("off", SAMPLE)
    with pytest.raises(CallFailed, match="maxTokens"):
        await host.sample("on", {"messages": []})
    waiting = asyncio.create_task(host.sample("on", SAMPLE))
    question = await shown(rec, f.Consent)
    assert question.kind == "sampling" and question.view is None and "write a haiku" in question.detail
    consents.reply(question.id, True, False)
    result = await waiting
    assert result["content"] == {"type": "text", "text": "a haiku"} and result["model"] == "fake-model"
    with pytest.raises(CallFailed, match="rate limit"):  # one a minute
        await host.sample("on", SAMPLE)
    assert agent.adapter.asked == 1


async def test_sampling_declined_by_the_person_never_reaches_the_model():
    agent = Agent()
    host = HostAsks(SamplingPolicy({"on": SamplingSettings(enabled=True)}), agent, None)  # type: ignore[arg-type]
    asks, rec, consents = tab()
    host.attach(asks)
    waiting = asyncio.create_task(host.sample("on", SAMPLE))
    consents.reply((await shown(rec, f.Consent)).id, False, False)
    with pytest.raises(CallFailed, match="declined by the person"):
        await waiting
    assert agent.adapter.asked == 0


# ---- roots from the config file and the command line -----------------------------------------------------


def test_roots_in_the_config_file_are_file_uris_relative_to_the_file(tmp_path: Path):
    (tmp_path / "papers").mkdir()
    doc = {"mcpServers": {"pdf": {"command": "pdf", "roots": ["papers", "file:///srv/shared"]},
                          "web": {"url": "http://127.0.0.1:1/mcp", "roots": [str(tmp_path)]}}}
    config = HostConfig.from_dict(json.loads(json.dumps(doc)), "c.json", tmp_path)
    by_name = {s.name: s for s in config.servers}
    assert by_name["pdf"].roots == ((tmp_path / "papers").as_uri(), "file:///srv/shared")
    assert by_name["web"].roots == (tmp_path.as_uri(),)


@pytest.mark.parametrize("roots, needle", [
    ("papers", "must be a list"),
    (["https://example.com/x"], "file:// URIs or paths"),
    (["file://host/share"], "not a local file:// URI"),
    (["missing-folder"], "does not exist"),
])
def test_bad_roots_in_the_config_file_name_the_entry(tmp_path: Path, roots, needle):
    with pytest.raises(ConfigError, match=needle) as caught:
        HostConfig.from_dict({"mcpServers": {"pdf": {"command": "pdf", "roots": roots}}}, "c.json", tmp_path)
    assert "mcpServers.pdf" in str(caught.value)


def test_root_flags_go_to_every_server_or_to_the_one_named(tmp_path: Path):
    (tmp_path / "a=b").mkdir()
    specs = [ServerSpec(name="pdf", command="x", roots=("file:///kept",)), ServerSpec(name="web", url="http://x")]
    out = {s.name: s.roots for s in apply_root_flags(specs, [str(tmp_path), f"pdf={tmp_path}", "a=b"], tmp_path)}
    assert out["pdf"] == ("file:///kept", tmp_path.as_uri(), (tmp_path / "a=b").as_uri())
    assert out["web"] == (tmp_path.as_uri(), (tmp_path / "a=b").as_uri())  # "a" is no server: a path with "="
    with pytest.raises(ConfigError, match="--root 'nowhere'"):
        apply_root_flags(specs, ["nowhere"], tmp_path)
