"""The host's log lines: text as always, or one JSON object a line (`--log-format json`) with the trace id,
the person and the view when known. Either way, what looks like a secret is blotted out before it is written."""

from __future__ import annotations

import json
import logging
import re
import sys
from datetime import UTC, datetime
from typing import Final, Literal

from opentelemetry import trace

from .context import current

LogFormat = Literal["text", "json"]
LOG_FORMATS: Final[tuple[LogFormat, ...]] = ("text", "json")
TEXT_FORMAT: Final = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# A token in a URL's query, a bearer credential, a key=value that names a secret: the value goes.
_SECRETS: Final = re.compile(
    r"(?i)(\b(?:access_token|refresh_token|id_token|client_secret|token|key|secret|password|code)=)[^&\s'\"]+"
    r"|(\bBearer\s+)[A-Za-z0-9._~+/=-]+"
    r"|(\"(?:access_token|refresh_token|id_token|client_secret|token|password|secret|api_key)\"\s*:\s*\")[^\"]+")


def redact(text: str) -> str:
    return _SECRETS.sub(lambda m: (m.group(1) or m.group(2) or m.group(3)) + "[redacted]", text)


class RedactingText(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


class JsonLines(logging.Formatter):
    """One JSON object per record: time, level, logger, message; trace_id, tenant, user and view when
    known; the exception, formatted, as ``exception``."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, str] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        span = trace.get_current_span().get_span_context()
        if span.is_valid:
            line["trace_id"] = format(span.trace_id, "032x")
            line["span_id"] = format(span.span_id, "016x")
        about = current()
        for name, value in (("tenant", about.tenant), ("user", about.user), ("view", about.view)):
            if value is not None:
                line[name] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        return redact(json.dumps(line, ensure_ascii=False))


def setup(level: str, fmt: LogFormat) -> None:
    """The root logger writes to stderr in ``fmt``; the loggers of libraries the host uses follow it."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLines() if fmt == "json" else RedactingText(TEXT_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # uvicorn's own loggers write through handlers of their own unless told to pass records up.
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        lib = logging.getLogger(name)
        lib.handlers[:] = []
        lib.propagate = True
    logging.getLogger("alembic").setLevel(logging.WARNING)  # a migration is news only when it fails
