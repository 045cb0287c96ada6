"""Streaming model adapters: the official OpenAI and Anthropic SDKs behind one small protocol.

An adapter turns one model request into a stream of `events` values. It never raises for a
provider or network failure (that becomes a `ModelError` event); it only lets cancellation
through, and then closes the HTTP stream before it goes.
"""

from __future__ import annotations

import abc
import json
import os
import re
import uuid
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any, Protocol
from urllib.parse import urlsplit

import anyio

from .events import (
    ModelError,
    ModelEvent,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallFinished,
    ToolCallInvalid,
    ToolCallStarted,
    TurnFinished,
)
from .history import HistoryItem, to_anthropic_messages, to_openai_messages
from .partial_json import parse_partial_object
from .tools import ToolTable

OPENAI_KEY_ENV = "OPENAI_API_KEY"
ANTHROPIC_KEY_ENV = "ANTHROPIC_API_KEY"
# Local OpenAI-compatible servers (Ollama, vLLM, llama.cpp) ignore the key, but the SDK wants one.
PLACEHOLDER_KEY = "no-key-needed"
OFFICIAL_HOSTS = {"openai": "api.openai.com", "anthropic": "api.anthropic.com"}
ANTHROPIC_MAX_TOKENS = 4096


class ModelAdapter(Protocol):
    label: str  # e.g. "openai:gpt-4o-mini", for display

    def stream(
        self, history: Sequence[HistoryItem], tools: ToolTable, system: str
    ) -> AsyncGenerator[ModelEvent, None]:
        """One model request; an async generator of events ending in TurnFinished or ModelError."""
        ...

    async def aclose(self) -> None: ...


# ---- shared pieces ------------------------------------------------------------------------------


class _Call:
    __slots__ = ("call_id", "done", "index", "last_parsed", "name", "preset", "raw", "started")

    def __init__(self, index: int, call_id: str) -> None:
        self.index = index
        self.call_id = call_id
        self.name = ""
        self.raw = ""
        self.started = False
        self.last_parsed: dict[str, Any] | None = None
        self.preset: dict[str, Any] | None = None  # input given whole at the start (no deltas)
        self.done = False


class _ToolCalls:
    """Assembles streamed tool calls keyed by the provider's index into ordered, typed events."""

    def __init__(self) -> None:
        self._calls: dict[Any, _Call] = {}
        self._nonce = uuid.uuid4().hex[:12]

    def __bool__(self) -> bool:
        return bool(self._calls)

    def update(
        self, key: Any, call_id: str | None, name: str | None, fragment: str | None
    ) -> list[ModelEvent]:
        call = self._calls.get(key)
        if call is None:
            index = len(self._calls)
            # Some OpenAI-compatible servers send no id; one is made up once and kept for the call.
            call = self._calls[key] = _Call(index, call_id or f"call_{self._nonce}_{index}")
        if name and not call.name:  # servers that repeat the name in every chunk are fine too
            call.name = name
        events: list[ModelEvent] = []
        if fragment:
            call.raw += fragment
        if not call.started and call.name:
            call.started = True
            events.append(ToolCallStarted(call.index, call.call_id, call.name))
            if call.raw:
                events.append(self._delta(call))
        elif call.started and fragment:
            events.append(self._delta(call))
        return events

    def key_without_index(self, call_id: str | None, name: str | None) -> Any:
        """Where a tool-call delta without an `index` belongs (some OpenAI-compatible servers omit it)."""
        last = next(reversed(self._calls.values()), None)
        if call_id:
            for key, call in self._calls.items():
                if call.call_id == call_id:
                    return key
            return ("new", len(self._calls))
        if name and (last is None or last.name != name or _is_complete_json(last.raw)):
            return ("new", len(self._calls))
        if last is None:
            return ("new", 0)
        return next(key for key, call in self._calls.items() if call is last)

    def set_preset(self, key: Any, arguments: Any) -> None:
        if key in self._calls and isinstance(arguments, dict) and arguments:
            self._calls[key].preset = arguments

    def _delta(self, call: _Call) -> ToolCallArgsDelta:
        parsed = parse_partial_object(call.raw)
        if parsed is not None and parsed != call.last_parsed:
            call.last_parsed = parsed
        else:
            parsed = None
        return ToolCallArgsDelta(call.index, call.call_id, call.name, call.raw, parsed)

    def finish(self, key: Any) -> list[ModelEvent]:
        call = self._calls.get(key)
        if call is None or call.done:
            return []
        call.done = True
        events: list[ModelEvent] = []
        if not call.started:  # never got a name: still reported, so the agent can answer the model
            call.started = True
            events.append(ToolCallStarted(call.index, call.call_id, call.name))
        raw = call.raw
        if not raw.strip():
            events.append(ToolCallFinished(call.index, call.call_id, call.name, call.preset or {}))
            return events
        try:
            value = json.loads(raw)
        except ValueError as exc:
            events.append(ToolCallInvalid(call.index, call.call_id, call.name, raw, f"not valid JSON: {exc}"))
            return events
        if not isinstance(value, dict):
            events.append(
                ToolCallInvalid(
                    call.index,
                    call.call_id,
                    call.name,
                    raw,
                    f"arguments must be a JSON object, got {type(value).__name__}",
                )
            )
        else:
            events.append(ToolCallFinished(call.index, call.call_id, call.name, value))
        return events

    def finish_all(self) -> list[ModelEvent]:
        events: list[ModelEvent] = []
        for key in sorted(self._calls, key=lambda k: self._calls[k].index):
            events += self.finish(key)
        return events


def _is_complete_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _get(obj: Any, name: str, default: Any = None) -> Any:
    """Attribute of an SDK object or key of a dict; servers leave out fields the SDK types require."""
    if obj is None:
        return default
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


_KEYLIKE = re.compile(r"\b(sk-[A-Za-z0-9_\-*.]{6,}|sk-ant-[A-Za-z0-9_\-*.]{6,})")


def _redact(text: str, api_key: str | None) -> str:
    if api_key and len(api_key) >= 4 and api_key != PLACEHOLDER_KEY:
        text = text.replace(api_key, "[redacted]")
    return _KEYLIKE.sub("[redacted]", text)


def _describe_error(provider: str, base_url: str, exc: BaseException, api_key: str | None) -> str:
    status = getattr(exc, "status_code", None)
    body = getattr(exc, "body", None)
    detail: Any = None
    if isinstance(body, Mapping):
        err = body.get("error")
        detail = err.get("message") if isinstance(err, Mapping) else (err if isinstance(err, str) else None)
        detail = detail or body.get("message")
    if isinstance(status, int) and status >= 400:
        text = f"{provider} returned HTTP {status}: {detail or getattr(exc, 'message', None) or exc}"
    elif type(exc).__name__ == "APITimeoutError":
        text = f"{provider} at {base_url} timed out"
    elif type(exc).__name__ == "APIConnectionError":
        cause = exc.__cause__ or exc.__context__
        text = f"could not reach {provider} at {base_url}: {cause or exc}"
    else:
        text = f"{provider} stream failed: {detail or exc or type(exc).__name__}"
    return _redact(text, api_key)


async def _close_quietly(stream: Any) -> None:
    # Shielded: when the consumer was cancelled under an anyio scope, every await would
    # otherwise be cancelled again before the connection is released.
    with anyio.CancelScope(shield=True):
        try:
            await stream.close()
        except Exception:  # a connection that fails to close is gone already
            pass


def _resolve_key(
    provider: str, env_var: str, api_key: str | None, base_url: str | None, env: Mapping[str, str]
) -> str:
    key = api_key if api_key is not None else env.get(env_var)
    if key:
        return key
    official = base_url is None or urlsplit(base_url).hostname == OFFICIAL_HOSTS[provider]
    if official:
        raise ValueError(
            f"{env_var} is not set: the {provider} API needs a key. Set {env_var}, or pass "
            "--model-base-url for a server that needs none."
        )
    return PLACEHOLDER_KEY


_OPENAI_STOP = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "content_filter": "content_filter",
}
_ANTHROPIC_STOP = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "refusal",
    "pause_turn": "pause_turn",
}


class _ProviderAdapter(abc.ABC):
    """What both adapters share: the key, the SDK client, its address for messages, closing."""

    provider = ""  # "openai" | "anthropic"
    key_env = ""
    endpoint = ""  # how error messages name the endpoint

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        max_retries: int = 2,
        timeout: float = 600.0,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.model = model
        self.label = f"{self.provider}:{model}"
        self._key = _resolve_key(self.provider, self.key_env, api_key, base_url, os.environ if env is None else env)
        self._client = self._make_client(self._key, base_url, max_retries, timeout)
        self._where = str(self._client.base_url)

    @abc.abstractmethod
    def _make_client(self, key: str, base_url: str | None, max_retries: int, timeout: float) -> Any:
        """The provider SDK's async client."""

    async def aclose(self) -> None:
        await self._client.close()

    def _error(self, exc: BaseException) -> ModelError:
        return ModelError(_describe_error(self.endpoint, self._where, exc, self._key))


# ---- OpenAI chat completions --------------------------------------------------------------------


class OpenAIChatAdapter(_ProviderAdapter):
    """Chat Completions with `stream=True`; also fits Ollama, vLLM and llama.cpp's OpenAI endpoints."""

    provider, key_env, endpoint = "openai", OPENAI_KEY_ENV, "OpenAI-compatible endpoint"

    def _make_client(self, key: str, base_url: str | None, max_retries: int, timeout: float) -> Any:
        import openai

        return openai.AsyncOpenAI(api_key=key, base_url=base_url, max_retries=max_retries, timeout=timeout)

    async def stream(
        self, history: Sequence[HistoryItem], tools: ToolTable, system: str
    ) -> AsyncGenerator[ModelEvent, None]:
        request: dict[str, Any] = {
            "model": self.model,
            "messages": to_openai_messages(history, system),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if len(tools):
            request["tools"] = tools.openai_tools()
        try:
            stream = await self._client.chat.completions.create(**request)
        except Exception as exc:  # every provider or network failure becomes a ModelError
            yield self._error(exc)
            return

        calls = _ToolCalls()
        finish_reason: str | None = None
        usage: dict[str, int] | None = None
        try:
            async for chunk in stream:
                raw_usage = _get(chunk, "usage")
                if raw_usage is not None:
                    usage = {
                        "input_tokens": int(_get(raw_usage, "prompt_tokens", 0) or 0),
                        "output_tokens": int(_get(raw_usage, "completion_tokens", 0) or 0),
                    }
                for choice in _get(chunk, "choices") or []:
                    if _get(choice, "index", 0) not in (0, None):
                        continue  # only one completion is asked for
                    delta = _get(choice, "delta")
                    text = _get(delta, "content")
                    if text:
                        yield TextDelta(text)
                    for tool_call in _get(delta, "tool_calls") or []:
                        fn = _get(tool_call, "function")
                        call_id, name, arguments = (
                            _get(tool_call, "id"),
                            _get(fn, "name"),
                            _get(fn, "arguments"),
                        )
                        if isinstance(arguments, dict):  # some servers send the object itself
                            arguments = json.dumps(arguments)
                        key = _get(tool_call, "index")
                        if not isinstance(key, int):
                            key = calls.key_without_index(call_id, name)
                        for event in calls.update(key, call_id, name, arguments):
                            yield event
                    if _get(choice, "finish_reason"):
                        finish_reason = _get(choice, "finish_reason")
        except Exception as exc:  # every provider or network failure becomes a ModelError
            yield self._error(exc)
            return
        finally:
            await _close_quietly(stream)

        for event in calls.finish_all():
            yield event
        reason = _OPENAI_STOP.get(finish_reason or "", finish_reason) or ("tool_calls" if calls else "stop")
        yield TurnFinished(reason, usage)


# ---- Anthropic messages -------------------------------------------------------------------------


class AnthropicAdapter(_ProviderAdapter):
    """Messages API with `stream=True`; tool input arrives as `input_json_delta` fragments."""

    provider, key_env, endpoint = "anthropic", ANTHROPIC_KEY_ENV, "Anthropic endpoint"

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None, *,
                 max_tokens: int = ANTHROPIC_MAX_TOKENS, **options: Any) -> None:
        self.max_tokens = max_tokens
        super().__init__(model, base_url, api_key, **options)

    def _make_client(self, key: str, base_url: str | None, max_retries: int, timeout: float) -> Any:
        import anthropic

        return anthropic.AsyncAnthropic(api_key=key, base_url=base_url, max_retries=max_retries, timeout=timeout)

    async def stream(
        self, history: Sequence[HistoryItem], tools: ToolTable, system: str
    ) -> AsyncGenerator[ModelEvent, None]:
        request: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": to_anthropic_messages(history),
            "stream": True,
        }
        if system:
            request["system"] = system
        if len(tools):
            request["tools"] = tools.anthropic_tools()
        try:
            stream = await self._client.messages.create(**request)
        except Exception as exc:  # every provider or network failure becomes a ModelError
            yield self._error(exc)
            return

        calls = _ToolCalls()
        stop_reason: str | None = None
        usage: dict[str, int] = {}
        try:
            async for event in stream:
                kind = _get(event, "type")
                if kind == "message_start":
                    start_usage = _get(_get(event, "message"), "usage")
                    if start_usage is not None:
                        usage["input_tokens"] = int(_get(start_usage, "input_tokens", 0) or 0)
                        usage["output_tokens"] = int(_get(start_usage, "output_tokens", 0) or 0)
                elif kind == "content_block_start":
                    block = _get(event, "content_block")
                    if _get(block, "type") == "tool_use":
                        key = _get(event, "index")
                        for ev in calls.update(key, _get(block, "id"), _get(block, "name"), None):
                            yield ev
                        calls.set_preset(key, _get(block, "input"))
                    elif _get(block, "type") == "text" and _get(block, "text"):
                        yield TextDelta(_get(block, "text"))
                elif kind == "content_block_delta":
                    delta = _get(event, "delta")
                    if _get(delta, "type") == "text_delta" and _get(delta, "text"):
                        yield TextDelta(_get(delta, "text"))
                    elif _get(delta, "type") == "input_json_delta":
                        for ev in calls.update(_get(event, "index"), None, None, _get(delta, "partial_json")):
                            yield ev
                elif kind == "content_block_stop":
                    for ev in calls.finish(_get(event, "index")):
                        yield ev
                elif kind == "message_delta":
                    stop_reason = _get(_get(event, "delta"), "stop_reason") or stop_reason
                    delta_usage = _get(event, "usage")
                    if _get(delta_usage, "output_tokens") is not None:
                        usage["output_tokens"] = int(_get(delta_usage, "output_tokens"))
        except Exception as exc:  # every provider or network failure becomes a ModelError
            yield self._error(exc)
            return
        finally:
            await _close_quietly(stream)

        for ev in calls.finish_all():  # blocks the server never closed
            yield ev
        reason = _ANTHROPIC_STOP.get(stop_reason or "", stop_reason) or ("tool_calls" if calls else "stop")
        yield TurnFinished(reason, usage or None)


# ---- choosing one ---------------------------------------------------------------------------------


def make_adapter(
    spec: str, base_url: str | None = None, *, env: Mapping[str, str] | None = None
) -> ModelAdapter | None:
    """`none` → None; `openai:MODEL` / `anthropic:MODEL` → an adapter. ValueError says what is wrong.

    The model name is everything after the first colon, so `openai:llama3.1:8b` works.
    """
    text = (spec or "").strip()
    if text.lower() == "none":
        return None
    provider, colon, model = text.partition(":")
    provider = provider.strip().lower()
    if not colon or provider not in ("openai", "anthropic"):
        raise ValueError(f"--model must be none, openai:MODEL or anthropic:MODEL, not {spec!r}")
    model = model.strip()
    if not model:
        example = "openai:gpt-4o-mini" if provider == "openai" else "anthropic:claude-sonnet-4-5"
        raise ValueError(f"--model {provider}: needs a model name after the colon, e.g. {example}")
    base_url = base_url.strip() if base_url else None
    if base_url and urlsplit(base_url).scheme not in ("http", "https"):
        raise ValueError(f"--model-base-url must be an http:// or https:// URL, not {base_url!r}")
    if provider == "openai":
        return OpenAIChatAdapter(model, base_url, env=env)
    return AnthropicAdapter(model, base_url, env=env)
