"""Building a host from its configuration: what is refused, and why."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from pathlib import Path

import pytest

from mcp_apps_host.config.host import HostConfig
from mcp_apps_host.config.policies import ModelSettings
from mcp_apps_host.errors import ConfigError
from mcp_apps_host.host.process import core
from mcp_apps_host.host.process.build import build_agent, build_host
from mcp_apps_host.host.process.sandbox import Sandbox
from mcp_apps_host.store.audit_events import AuditEvent


def test_a_model_whose_sdk_is_not_installed_is_named(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "anthropic", None)  # as if the extra were not installed
    with pytest.raises(ConfigError, match=r"pip install 'mcp-apps-host\[anthropic\]'"):
        build_agent(HostConfig(model=ModelSettings("anthropic:claude-x", "http://127.0.0.1:9")))


@pytest.mark.parametrize("template", ["http://{label}.localhost:8765", "http://127.0.0.1:8765"])
def test_the_sandbox_may_never_include_the_host_pages_origin(tmp_path: Path, template: str):
    config = HostConfig(database_url=f"sqlite:///{tmp_path}/h.db")
    with pytest.raises(ConfigError, match="never run on the host page's origin"):
        build_host(config, host_origin="http://127.0.0.1:8765" if "127" in template else "http://a.localhost:8765",
                   sandbox=Sandbox(template))


def test_a_sandbox_origin_template_admits_its_labels_only():
    sandbox = Sandbox("https://{label}.apps.example.com")
    label = sandbox.origin_for("shop").removeprefix("https://")
    assert label.startswith("shop-") and label.endswith(".apps.example.com")
    assert sandbox.host_allowed(label)
    assert sandbox.page_sources == ["https://*.apps.example.com"]
    for other in ("apps.example.com", "a.b.apps.example.com", "shop.apps.example.com.evil.test",
                  "console.example.com", f"{label}:8443", None):
        assert not sandbox.host_allowed(other), other


@pytest.mark.anyio
async def test_a_stop_step_that_never_ends_is_named_and_the_audit_trail_is_still_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture):
    monkeypatch.setattr(core, "STOP_STEP_S", 0.5)
    host = build_host(HostConfig(database_url=f"sqlite:///{tmp_path}/h.db"), host_origin="http://127.0.0.1:8765",
                      sandbox=Sandbox("http://{label}.localhost:8766"))
    await host.start()
    release = asyncio.Event()

    async def stuck() -> None:  # a server's connection that does not end (say it took its cancellation for another)
        await release.wait()

    stuck_task = asyncio.get_running_loop().create_task(stuck(), name="server:stuck")
    monkeypatch.setattr(host.servers, "stop", lambda: asyncio.shield(stuck_task))
    assert host.audit is not None
    host.audit.record_nowait(AuditEvent("host->server", method="tools/call", server="stuck"))
    try:
        async with asyncio.timeout(10):
            await host.stop()
    finally:
        release.set()
        await stuck_task
    with sqlite3.connect(tmp_path / "h.db") as db:
        assert db.execute("SELECT method, server FROM audit_events").fetchall() == [("tools/call", "stuck")]
    [said] = [r.getMessage() for r in caplog.records if "did not end" in r.getMessage()]
    assert "closing the servers' connections" in said and f"server:stuck at {__file__}:" in said, said
