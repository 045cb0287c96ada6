"""`/metrics` on a listener of its own, off the console's origin: Prometheus scrapes it, a browser
session never reaches it. With a key, a scrape must bring ``Authorization: Bearer KEY``.

One process serves it. With several workers that is the parent, which starts no host of its own:
each worker writes its values to files in ``PROMETHEUS_MULTIPROC_DIR`` (a fresh folder the parent
makes before they start) and a scrape sums them (`prometheus_client.multiprocess`).
"""

from __future__ import annotations

import atexit
import hmac
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any, Final
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

from prometheus_client import REGISTRY, CollectorRegistry, make_wsgi_app, multiprocess

MULTIPROC_ENV: Final = "PROMETHEUS_MULTIPROC_DIR"
PATH: Final = "/metrics"

StartResponse = Callable[[str, list[tuple[str, str]]], Any]


def share_across_workers() -> str:
    """Before workers start: a fresh folder they write their values to (removed when this process exits).
    Call it before any worker imports prometheus_client: it picks its way of storing values then."""
    folder = tempfile.mkdtemp(prefix="mcp-apps-host-metrics-")
    os.environ[MULTIPROC_ENV] = folder
    atexit.register(shutil.rmtree, folder, True)
    return folder


def worker_exits() -> None:
    """In a worker: when it exits, its gauges of what it held (tabs, views, connections) stop counting."""
    if os.environ.get(MULTIPROC_ENV):
        atexit.register(multiprocess.mark_process_dead, os.getpid())


def _registry(workers_folder: str | None) -> CollectorRegistry:
    if workers_folder is None:
        return REGISTRY
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=workers_folder)  # type: ignore[no-untyped-call]
    return registry


def metrics_app(key: str | None, workers_folder: str | None = None) -> Callable[[dict[str, Any], StartResponse],
                                                                              Iterable[bytes]]:
    """The WSGI app: the metrics at `/metrics` (only to the key's bearer, if there is a key)."""
    scrape = make_wsgi_app(_registry(workers_folder))
    wanted = f"Bearer {key}".encode() if key else None

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != PATH:
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"not found: the metrics are at /metrics\n"]
        given = str(environ.get("HTTP_AUTHORIZATION", "")).encode()
        if wanted is not None and not hmac.compare_digest(given, wanted):
            start_response("401 Unauthorized", [("Content-Type", "text/plain"), ("WWW-Authenticate", "Bearer")])
            return [b"the metrics need Authorization: Bearer <metrics key>\n"]
        body: Iterable[bytes] = scrape(environ, start_response)
        return body

    return app


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes are not news (and the log must never hold a request's headers)."""


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True  # a scrape in progress does not hold up the host's exit

    def __init__(self, address: tuple[str, int], family: socket.AddressFamily) -> None:
        self.address_family = family
        super().__init__(address, _Quiet)


class MetricsServer:
    """The listener, bound at once (a port in use is reported before anything starts), served on a thread."""

    def __init__(self, host: str, port: int, key: str | None, workers_folder: str | None = None) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._server = _Server((host, port), family)  # raises OSError when it cannot listen
        self._server.set_app(metrics_app(key, workers_folder))
        self._thread = threading.Thread(target=self._server.serve_forever, name="metrics", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
