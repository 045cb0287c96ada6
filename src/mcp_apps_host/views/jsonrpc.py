"""Strict JSON-RPC 2.0 parsing for messages that arrive from an untrusted view."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, TypeGuard

from ..errors import InvalidMessage

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# Implementation-defined: refused by policy or by the person (the spec's examples use -32000).
REFUSED = -32000

RequestId = int | str


@dataclass(frozen=True)
class Request:
    id: RequestId
    method: str
    params: dict[str, Any]


@dataclass(frozen=True)
class Notification:
    method: str
    params: dict[str, Any]


@dataclass(frozen=True)
class Response:
    id: RequestId
    result: dict[str, Any] | None
    error: dict[str, Any] | None


Message = Request | Notification | Response


def is_id(value: Any) -> TypeGuard[RequestId]:
    # ids are integers or strings; 0 is a valid id (never test an id for truthiness), bools are not ids.
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)


def message_size(raw: Any) -> int:
    """Bytes of the message as compact JSON; non-JSON values are infinitely large."""
    try:
        return len(json.dumps(raw, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8"))
    except (TypeError, ValueError):
        return -1


def nesting_depth(raw: Any, stop: int) -> int:
    """How deep objects and arrays nest in ``raw`` (a scalar is 0), counted without recursion;
    counting stops past ``stop``."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(raw, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > stop:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


def parse_message(raw: Any) -> Message:
    if not isinstance(raw, dict):
        raise InvalidMessage(f"a JSON-RPC message must be an object, got {type(raw).__name__}")
    msg_id = raw.get("id")
    reply_id = msg_id if is_id(msg_id) else None
    if raw.get("jsonrpc") != "2.0":
        raise InvalidMessage('"jsonrpc" must be "2.0"', reply_id if "method" in raw else None)
    if "method" in raw:
        method = raw["method"]
        if not isinstance(method, str) or not method:
            raise InvalidMessage('"method" must be a non-empty string', reply_id)
        params = raw.get("params", {})
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise InvalidMessage(f'"params" of {method} must be an object', reply_id)
        extra = set(raw) - {"jsonrpc", "method", "params", "id"}
        if extra:
            raise InvalidMessage(f"unexpected member(s) {sorted(extra)} in {method}", reply_id)
        if "id" not in raw:
            return Notification(method, params)
        if reply_id is None:
            raise InvalidMessage(f'"id" of {method} must be an integer or a string')
        return Request(reply_id, method, params)
    if "id" not in raw or reply_id is None:
        raise InvalidMessage('a message without "method" must be a response with an integer or string "id"')
    has_result, has_error = "result" in raw, "error" in raw
    if has_result == has_error:
        raise InvalidMessage('a response needs exactly one of "result" and "error"')
    extra = set(raw) - {"jsonrpc", "id", "result", "error"}
    if extra:
        raise InvalidMessage(f"unexpected member(s) {sorted(extra)} in a response")
    if has_error:
        err = raw["error"]
        if not isinstance(err, dict) or not isinstance(err.get("code"), int) or not isinstance(err.get("message"), str):
            raise InvalidMessage('"error" must be an object with an integer "code" and a string "message"')
        return Response(reply_id, None, err)
    result = raw["result"]
    if not isinstance(result, dict):
        raise InvalidMessage('"result" must be an object')
    return Response(reply_id, result, None)


def result(msg_id: RequestId, value: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "result": value}


def error(msg_id: RequestId, code: int, message: str, data: Any = None) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": msg_id, "error": err}


def notification(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def request(msg_id: RequestId, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}


def json_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)
