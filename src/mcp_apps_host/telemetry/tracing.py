"""Where the host's spans go: over OTLP (HTTP/protobuf) when the standard `OTEL_*` variables ask for it,
nowhere otherwise.

The rule: `OTEL_TRACES_EXPORTER` decides when it is set (`otlp`, `console` or `none`); when it is not,
traces are exported over OTLP only if an endpoint is named (`OTEL_EXPORTER_OTLP_ENDPOINT` or
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`). `OTEL_SDK_DISABLED=true` turns it all off. The SDK and the
exporter are the `otel` extra, imported only when asked for; a process that already has a tracer
provider (an application embedding the host) keeps its own.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit, urlunsplit

from opentelemetry import trace

if TYPE_CHECKING:  # the SDK is the otel extra: imported only when traces are exported
    from opentelemetry.sdk.trace import TracerProvider

log = logging.getLogger("mcp_apps_host.telemetry")

Exporter = Literal["none", "otlp", "console"]
DEFAULT_SERVICE_NAME = "mcp-apps-host"
DEFAULT_OTLP_ENDPOINT = "http://localhost:4318"
FLUSH_TIMEOUT_S = 10.0
_SUPPORTED: tuple[Exporter, ...] = ("otlp", "console", "none")
_PROTOCOL = "http/protobuf"


@dataclass(frozen=True)
class TracingPlan:
    """What the environment asks for, and what should be said about it in the log."""

    exporter: Exporter
    warnings: tuple[str, ...] = ()


def plan_from_env(env: Mapping[str, str]) -> TracingPlan:
    """The exporter the environment asks for (see the module's rule); never raises."""
    warnings: list[str] = []
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return TracingPlan("none")
    named = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if named:
        asked = [part.strip() for part in named.split(",") if part.strip()]
        unknown = [part for part in asked if part not in _SUPPORTED]
        if unknown:
            warnings.append(f"OTEL_TRACES_EXPORTER names {', '.join(unknown)}: only otlp, console and none are "
                            "supported here; those are ignored")
        exporter: Exporter = "otlp" if "otlp" in asked else "console" if "console" in asked else "none"
    else:
        endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip() or \
            env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
        exporter = "otlp" if endpoint else "none"
    if exporter == "otlp":
        protocol = (env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or
                    _PROTOCOL).strip().lower()
        if protocol != _PROTOCOL:
            warnings.append(f"OTLP protocol {protocol!r} is not supported here: traces are sent over "
                            f"{_PROTOCOL} (the collector's HTTP port, usually 4318)")
    return TracingPlan(exporter, tuple(warnings))


def shown_endpoint(env: Mapping[str, str]) -> str:
    """Where OTLP traces go, as the exporter reads the variables, without credentials or a query."""
    url = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if not url:
        url = (env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or DEFAULT_OTLP_ENDPOINT).rstrip("/") + "/v1/traces"
    try:
        parts = urlsplit(url)
        netloc = parts.hostname or ""
        if parts.port is not None:
            netloc += f":{parts.port}"
    except ValueError:
        return "(an endpoint that is not a URL)"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


_lock = threading.Lock()
_installed = False
_ours: TracerProvider | None = None  # the provider this module installed, flushed when a host stops


def install_from_env(environ: Mapping[str, str] | None = None) -> None:
    """Install the SDK's tracer provider once per process when the environment asks for export."""
    global _installed, _ours
    env = os.environ if environ is None else environ
    with _lock:
        if _installed:
            return
        _installed = True
        plan = plan_from_env(env)
        for warning in plan.warnings:
            log.warning("traces: %s", warning)
        if plan.exporter == "none":
            return
        if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
            log.info("traces: the process already has a tracer provider; the host's spans go to it")
            return
        try:
            provider = _sdk_provider(plan.exporter)
        except ImportError as exc:
            log.warning("traces: the environment asks for %s export, but %s is not installed: "
                        "pip install 'mcp-apps-host[otel]'; no traces are exported", plan.exporter,
                        exc.name or "the OpenTelemetry SDK")
            return
        trace.set_tracer_provider(provider)
        _ours = provider
        where = shown_endpoint(env) if plan.exporter == "otlp" else "standard output"
        log.info("traces: exported over %s to %s", "OTLP/HTTP" if plan.exporter == "otlp" else "console", where)


def _sdk_provider(exporter: Exporter) -> TracerProvider:
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

    resource = Resource.create({})  # OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES are read here
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: DEFAULT_SERVICE_NAME}))
    span_exporter: SpanExporter
    if exporter == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        span_exporter = OTLPSpanExporter()  # endpoint, headers, timeout and compression from OTEL_EXPORTER_OTLP_*
    else:
        span_exporter = ConsoleSpanExporter()
    provider = TracerProvider(resource=resource)  # the sampler from OTEL_TRACES_SAMPLER; shut down at exit
    provider.add_span_processor(BatchSpanProcessor(span_exporter))  # OTEL_BSP_* tune its batches
    return provider


async def flush(timeout: float = FLUSH_TIMEOUT_S) -> None:
    """Send the spans still batched (a host stopping); off the event loop, and never raises."""
    provider = _ours
    if provider is None:
        return
    try:
        done = await asyncio.to_thread(provider.force_flush, round(timeout * 1000))
    except Exception:  # a collector that is gone must not stop the host from stopping
        log.warning("traces: could not flush the last spans", exc_info=True)
        return
    if not done:
        log.warning("traces: the last spans were not all sent within %g s", timeout)
