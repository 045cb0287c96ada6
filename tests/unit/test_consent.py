"""Consent policy for tool calls and sampling."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_apps_host.config.policies import parse_consent_config, parse_sampling_config
from mcp_apps_host.errors import ConsentConfigError
from mcp_apps_host.policy.consent import ConsentPolicy, SamplingPolicy
from mcp_apps_host.store.consents import RememberedConsents
from mcp_apps_host.store.db import open_database
from mcp_apps_host.values.identity import CONSOLE
from mcp_apps_host.values.tools import tool_entry


def RememberedStore(engine, who=CONSOLE):  # one person's remembered answers
    return RememberedConsents(engine).bound(who)


def tool(name: str, server: str = "s1", annotations: dict | None = None, visibility: list | None = None):
    definition: dict = {"name": name, "inputSchema": {"type": "object"}}
    if annotations is not None:
        definition["annotations"] = annotations
    if visibility is not None:
        definition["_meta"] = {"ui": {"resourceUri": "ui://x", "visibility": visibility}}
    return tool_entry(server, definition)


READ = tool("read", annotations={"readOnlyHint": True})
WRITE = tool("write", annotations={"readOnlyHint": False})
DESTROY = tool("destroy", annotations={"destructiveHint": True})
PLAIN = tool("plain")
APP_ONLY = tool("refresh", visibility=["app"])
MODEL_ONLY = tool("summarise", annotations={"readOnlyHint": True}, visibility=["model"])


@pytest.fixture
def engine(tmp_path: Path):
    eng = open_database(f"sqlite:///{tmp_path / 'host.db'}")
    yield eng
    eng.dispose()


# -- defaults --------------------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["view", "model"])
@pytest.mark.parametrize(
    "entry, expected, needle",
    [
        (READ, "allow", "read-only"),
        (WRITE, "ask", "not annotated read-only"),
        (PLAIN, "ask", "not annotated read-only"),
        (DESTROY, "ask", "destructive"),
        (tool("both", annotations={"readOnlyHint": True, "destructiveHint": True}), "ask", "destructive"),
        (tool("stringy", annotations={"readOnlyHint": "true"}), "ask", "not annotated read-only"),
        (tool("junk", annotations=["readOnlyHint"]), "ask", "not annotated read-only"),
    ],
)
def test_defaults_same_for_model_and_view(entry, expected, needle, source):
    decision, reason = ConsentPolicy().decide("s1", entry, source)
    assert decision == expected
    assert needle in reason and reason.startswith("default")


def test_app_only_tool_of_own_server_is_allowed_for_views():
    assert ConsentPolicy().decide("s1", APP_ONLY, "view") == (
        "allow",
        "default: an app-only tool of the view's own server (visibility ['app'])",
    )


def test_app_only_but_destructive_is_asked():
    entry = tool("wipe", annotations={"destructiveHint": True}, visibility=["app"])
    assert ConsentPolicy().decide("s1", entry, "view")[0] == "ask"


def test_hard_rules_beat_config():
    policy = ConsentPolicy(
        {"s1": {"*": "allow", "refresh": "allow", "summarise": "allow"}, "s2": {"*": "allow"}}
    )
    decision, reason = policy.decide("s2", READ, "view")  # a view of s2 calling a tool of s1
    assert decision == "deny" and "its own server" in reason
    decision, reason = policy.decide("s1", APP_ONLY, "model")
    assert decision == "deny" and "'model'" in reason
    decision, reason = policy.decide("s1", MODEL_ONLY, "view")
    assert decision == "deny" and "'app'" in reason
    nobody = tool("ghost", visibility=[])
    assert policy.decide("s1", nobody, "view")[0] == "deny"
    assert policy.decide("s1", nobody, "model")[0] == "deny"


# -- config ------------------------------------------------------------------------------------------


def test_config_rules_override_defaults():
    rules = parse_consent_config({"consent": {"s1": {"read": "ask", "write": "allow", "plain": "deny"}}})
    policy = ConsentPolicy(rules)
    assert policy.decide("s1", READ, "model") == ("ask", "config rule consent.s1.read = ask")
    assert policy.decide("s1", WRITE, "view")[0] == "allow"
    assert policy.decide("s1", PLAIN, "view") == ("deny", "config rule consent.s1.plain = deny")
    assert policy.decide("s1", DESTROY, "view")[0] == "ask"  # untouched tools keep the default


def test_wildcard_rule_and_specific_rule():
    policy = ConsentPolicy(parse_consent_config({"consent": {"s1": {"*": "deny", "read": "allow"}}}))
    assert policy.decide("s1", READ, "view")[0] == "allow"  # the tool's own rule is more specific
    assert policy.decide("s1", PLAIN, "view") == ("deny", "config rule consent.s1.* = deny")
    policy = ConsentPolicy({"s1": {"*": "ask"}})
    assert policy.decide("s1", READ, "view") == ("ask", "config rule consent.s1.* = ask")
    policy = ConsentPolicy({"s1": {"*": "allow"}})
    assert policy.decide("s1", DESTROY, "model")[0] == "allow"
    assert ConsentPolicy({"other": {"*": "deny"}}).decide("s1", READ, "view")[0] == "allow"


@pytest.mark.parametrize(
    "data, needle",
    [
        ([], "config must be an object"),
        ({"consent": []}, "consent: must be an object"),
        ({"consent": {"s1": "allow"}}, "consent.s1: must be an object"),
        (
            {"consent": {"s1": {"t": "always"}}},
            r"consent.s1.t: 'always' is not one of 'allow', 'ask', 'deny'",
        ),
        ({"consent": {"s1": {"t": "Allow"}}}, "consent.s1.t: 'Allow'"),
        ({"consent": {"s1": {"t": True}}}, "consent.s1.t: True"),
        ({"consent": {"": {"t": "allow"}}}, "consent: '' is not a name"),
        ({"consent": {"s1": {" ": "allow"}}}, "consent.s1: ' ' is not a name"),
    ],
)
def test_consent_config_errors(data, needle):
    with pytest.raises(ConsentConfigError, match=needle):
        parse_consent_config(data)


def test_consent_config_absent_and_valid():
    assert parse_consent_config({"mcpServers": {}}) == {}
    assert parse_consent_config({"consent": {"s": {"t": "allow", "*": "ask"}}}) == {
        "s": {"t": "allow", "*": "ask"}
    }
    with pytest.raises(ConsentConfigError):
        ConsentPolicy({"s": {"t": "yes"}})  # rules built by hand are checked too


# -- remembered "always allow" -------------------------------------------------------------------------


def test_remember_allow_persists_across_restart(engine):
    policy = ConsentPolicy({}, RememberedStore(engine))
    assert policy.decide("s1", WRITE, "view")[0] == "ask"
    policy.remember_allow("s1", "write")
    assert policy.decide("s1", WRITE, "view") == (
        "allow",
        "the person chose to always allow 'write' from 's1'",
    )
    policy.remember_allow("s1", "write")  # twice is harmless

    # A restart: a new engine, store and policy on the same file.
    url = engine.url.render_as_string(hide_password=False)
    engine.dispose()
    again = open_database(url)
    try:
        restarted = ConsentPolicy({}, RememberedStore(again))
        assert restarted.decide("s1", WRITE, "model")[0] == "allow"  # same policy for the model
        assert restarted.decide("s1", PLAIN, "view")[0] == "ask"  # only that tool
        assert restarted.decide("s2", tool("write", server="s2"), "view")[0] == "ask"  # only that server
    finally:
        again.dispose()


def test_config_beats_remembered(engine):
    store = RememberedStore(engine)
    store.remember_allow("s1", "write")
    store.remember_allow("s1", "plain")
    store.remember_allow("s2", "write")
    policy = ConsentPolicy({"s1": {"write": "ask", "plain": "deny"}, "s2": {"*": "deny"}}, store)
    assert policy.decide("s1", WRITE, "view")[0] == "ask"
    assert policy.decide("s1", PLAIN, "view")[0] == "deny"
    assert policy.decide("s2", tool("write", server="s2"), "view")[0] == "deny"
    assert not policy.can_remember("s1", "write")
    assert not policy.can_remember("s2", "anything")
    assert policy.can_remember("s1", "destroy")
    # A "*": "ask" rule is a server-wide default, which the person's choice overrides.
    policy = ConsentPolicy({"s2": {"*": "ask"}}, store)
    assert policy.decide("s2", tool("write", server="s2"), "view")[0] == "allow"
    assert policy.decide("s2", tool("other", server="s2"), "view")[0] == "ask"


def test_remembered_in_memory_without_store():
    policy = ConsentPolicy()
    policy.remember_allow("s1", "write")
    assert policy.decide("s1", WRITE, "view")[0] == "allow"
    assert ConsentPolicy().decide("s1", WRITE, "view")[0] == "ask"


def test_bad_source_rejected():
    with pytest.raises(ValueError, match="source"):
        ConsentPolicy().decide("s1", READ, "person")  # type: ignore[arg-type]


# -- sampling --------------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_sampling_off_unless_enabled():
    settings = parse_sampling_config({"sampling": {"on": {"enabled": True}, "off": {"enabled": False}}})
    policy = SamplingPolicy(settings)
    assert policy.check("off")[0] == "deny"
    decision, reason = policy.check("unknown")
    assert decision == "deny" and "sampling.unknown.enabled" in reason
    assert policy.check("on")[0] == "ask"
    assert SamplingPolicy().check("on")[0] == "deny"


def test_sampling_rate_limit_token_bucket():
    clock = Clock()
    settings = parse_sampling_config({"sampling": {"s": {"enabled": True, "maxPerMinute": 3}}})
    policy = SamplingPolicy(settings, clock=clock)
    assert [policy.check("s")[0] for _ in range(3)] == ["ask"] * 3
    decision, reason = policy.check("s")
    assert decision == "deny" and "at most 3 times a minute" in reason
    clock.now += 10  # 10 s refills half a token at 3/min
    assert policy.check("s")[0] == "deny"
    clock.now += 10.5  # now more than one token
    assert policy.check("s")[0] == "ask"
    assert policy.check("s")[0] == "deny"
    clock.now += 3600  # a long pause refills to the cap, never past it
    assert [policy.check("s")[0] for _ in range(4)] == ["ask", "ask", "ask", "deny"]


def test_sampling_buckets_are_per_server():
    clock = Clock()
    policy = SamplingPolicy(
        parse_sampling_config(
            {
                "sampling": {
                    "a": {"enabled": True, "maxPerMinute": 1},
                    "b": {"enabled": True, "maxPerMinute": 1},
                }
            }
        ),
        clock=clock,
    )
    assert policy.check("a")[0] == "ask"
    assert policy.check("a")[0] == "deny"
    assert policy.check("b")[0] == "ask"


def test_sampling_default_rate():
    settings = parse_sampling_config({"sampling": {"s": {"enabled": True}}})
    assert settings["s"].max_per_minute == 5


@pytest.mark.parametrize(
    "data, needle",
    [
        ({"sampling": {"s": True}}, "sampling.s: must be an object"),
        ({"sampling": {"s": {"enabled": "yes"}}}, "sampling.s.enabled: must be true or false"),
        ({"sampling": {"s": {"enabled": True, "maxPerMinute": 0}}}, "sampling.s.maxPerMinute"),
        ({"sampling": {"s": {"enabled": True, "maxPerMinute": 2.5}}}, "sampling.s.maxPerMinute"),
        ({"sampling": {"s": {"enabled": True, "maxPerMinute": True}}}, "sampling.s.maxPerMinute"),
        ({"sampling": {"s": {"enabled": True, "maxPerMin": 3}}}, "unknown key.*maxPerMin"),
        ({"sampling": 5}, "sampling: must be an object"),
    ],
)
def test_sampling_config_errors(data, needle):
    with pytest.raises(ConsentConfigError, match=needle):
        parse_sampling_config(data)


# ---- tools a view offers of its own ---------------------------------------------------------------


def test_app_tools_are_asked_about_unless_read_only_and_have_their_own_rules():
    from mcp_apps_host.values.apptools import AppTool

    read = AppTool("get-state", None, "", {"type": "object"}, {"readOnlyHint": True})
    both = AppTool("wipe", None, "", {"type": "object"}, {"readOnlyHint": True, "destructiveHint": True})
    move = AppTool("move", None, "", {"type": "object"})
    policy = ConsentPolicy({"game": {"move": "allow", "app:wipe": "allow"}, "locked": {"*": "deny"},
                            "open": {"app:*": "allow", "*": "deny"}})
    assert policy.decide_app_tool("game", read)[0] == "allow"
    # A server tool's rule does not reach a view's tool of the same name.
    decision, reason = policy.decide_app_tool("game", move)
    assert decision == "ask" and "not annotated read-only" in reason
    assert policy.decide_app_tool("game", both) == ("allow", "config rule consent.game.app:wipe = allow")
    assert policy.decide_app_tool("other", both)[0] == "ask"  # destructive outweighs read-only
    assert policy.decide_app_tool("locked", read) == ("deny", "config rule consent.locked.* = deny")
    assert policy.decide_app_tool("open", move)[0] == "allow"
