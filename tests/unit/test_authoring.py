"""What app authors change live: a view's own host context and display mode, a fixed container, and
which paths `serve --watch` watches."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_view_session import make, note, posts, ready

import mcp_apps_host as vs
from mcp_apps_host.cli import _with_watch_paths
from mcp_apps_host.config.host import HostConfig
from mcp_apps_host.config.servers import ServerSpec, default_watch_paths, parse_config
from mcp_apps_host.errors import ConfigError


def test_host_context_changes_go_out_whole_per_key():
    s = ready(make())
    [msg] = posts(s.host_context_changed(platform="mobile", touch=True, container_width=400, container_height=300))
    assert msg["method"] == "ui/notifications/host-context-changed"
    assert msg["params"] == {"platform": "mobile", "deviceCapabilities": {"touch": True, "hover": True},
                             "containerDimensions": {"height": 300, "width": 400}}
    assert s.host_context()["platform"] == "mobile"


def test_a_fixed_container_dimension_is_not_moved_by_the_view():
    s = ready(make())
    s.host_context_changed(container_height=300)
    [resize] = s.receive(note("ui/notifications/size-changed", {"width": 500, "height": 900}))
    assert resize == vs.Resize(500, None)


def test_the_inspector_switches_only_to_a_declared_display_mode():
    s = make()
    s.receive(note("ui/notifications/sandbox-proxy-ready"))
    s.receive({"jsonrpc": "2.0", "id": 0, "method": "ui/initialize", "params": {
        "appInfo": {}, "appCapabilities": {"availableDisplayModes": ["inline", "pip"]}}})
    s.receive(note("ui/notifications/initialized"))
    [log] = s.switch_display_mode("fullscreen")
    assert isinstance(log, vs.Log) and "did not declare" in log.text and s.display_mode == "inline"
    effects = s.switch_display_mode("pip")
    assert effects == [vs.DisplayModeChanged("pip")] and s.display_mode == "pip"
    assert s.switch_display_mode("pip") == []


def test_watched_paths_come_from_the_config_else_the_servers_script(tmp_path: Path):
    script = tmp_path / "srv" / "server.py"
    script.parent.mkdir()
    script.write_text("")
    [spec] = parse_config({"mcpServers": {"a": {"command": "python", "args": [str(script)], "watch": "dist"}}})
    assert spec.watch == ("dist",)
    assert default_watch_paths(spec) == ("dist",)
    plain = ServerSpec(name="b", command="python", args=("-u", str(script), "--stdio"))
    assert default_watch_paths(plain) == (str(script.parent),)
    assert default_watch_paths(ServerSpec(name="c", command="npx", args=("-y", "pkg"))) == ()
    assert default_watch_paths(ServerSpec(name="d", url="http://127.0.0.1:1/mcp")) == ()
    with pytest.raises(ConfigError, match="watch must be a path or a list of paths"):
        parse_config({"mcpServers": {"a": {"command": "x", "watch": 3}}})


def test_watch_path_flags_name_a_configured_server():
    config = HostConfig(servers=(ServerSpec(name="a", command="x"),))
    assert _with_watch_paths(config, ["a=/src"]).servers[0].watch == ("/src",)
    with pytest.raises(ConfigError, match="--watch-path 'nope=/src'"):
        _with_watch_paths(config, ["nope=/src"])
