"""Building a host from its configuration: what is refused, and why."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mcp_apps_host.config.host import HostConfig
from mcp_apps_host.config.policies import ModelSettings
from mcp_apps_host.errors import ConfigError
from mcp_apps_host.host.process.build import build_agent, build_host
from mcp_apps_host.host.process.sandbox import Sandbox


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
