"""`mcp-apps-host check` as CI runs it: over views made to fail one way each, and over every npm peer
and demo server. Its exit status, JUnit file, JSON and screenshots are what is checked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from harness import CHROMIUM, REPO, peer_stdio_command, write_sample_pdf

pytestmark = pytest.mark.browser

FIXTURES = REPO / "tests" / "fixtures" / "servers.py"
PNG = b"\x89PNG\r\n\x1a\n"


def run_check(tmp: Path, *args: str, timeout: float = 600) -> tuple[int, dict, ET.Element, Path, str]:
    junit, out = tmp / "check.xml", tmp / "shots"
    cmd = [sys.executable, "-m", "mcp_apps_host", "check", "--json", "--junit", str(junit), "--out", str(out),
           "--chromium", CHROMIUM, *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=tmp,
                          env=dict(os.environ, CI="true"))
    assert done.stdout.strip().startswith("{"), f"no JSON on stdout:\n{done.stdout}\n{done.stderr}"
    return done.returncode, json.loads(done.stdout), ET.parse(junit).getroot(), out, done.stderr


def cases(root: ET.Element) -> dict[str, ET.Element]:
    return {c.get("name", ""): c for c in root.iter("testcase")}


def failure(case: ET.Element) -> str:
    node = case.find("failure")
    return "" if node is None else (node.get("message") or "") + "\n" + (node.text or "")


def test_check_fails_each_broken_view_for_its_own_reason(tmp_path: Path) -> None:
    # --timeout is also the working views' time for their handshake and result: 15 s, for a busy machine.
    rc, doc, root, out, err = run_check(tmp_path, "--timeout", "15", "--server",
                                        f"fx={sys.executable} {FIXTURES} checks")
    assert rc == 1, err
    by_name = cases(root)
    assert sorted(by_name) == sorted(f"fx/{t}" for t in (
        "blank", "client-info", "csp-blocked", "early", "good", "no-initialized", "redraws", "size-loop"))
    for passing in ("fx/good", "fx/redraws"):
        assert by_name[passing].find("failure") is None, failure(by_name[passing])
    expected = {
        "fx/no-initialized": "never sent ui/notifications/initialized",
        "fx/client-info": "clientInfo",
        "fx/early": "posted tools/call before the handshake",
        "fx/csp-blocked": "CSP blocked http://127.0.0.1:9/data",
        "fx/blank": "drew nothing",
        "fx/size-loop": "size-changed loops",
    }
    for name, words in expected.items():
        assert words in failure(by_name[name]), f"{name}: {failure(by_name[name])}"
    assert "appCapabilities" in failure(by_name["fx/client-info"])
    assert "_meta.ui.csp.connectDomains" in failure(by_name["fx/csp-blocked"])
    # The JSON says the same, and every view has one PNG screenshot.
    assert {v["tool"]: v["passed"] for v in doc["views"]}["good"] is True
    assert doc["passed"] is False
    shots = sorted(out.glob("*.png"))
    assert len(shots) == 8, shots
    assert all(p.read_bytes().startswith(PNG) for p in shots)


def test_check_exits_zero_when_every_view_passes(tmp_path: Path) -> None:
    rc, doc, root, out, err = run_check(tmp_path, "--server", f"chart={sys.executable} -m mcp_apps_host.demo.chart")
    assert rc == 0, (doc, err)
    assert [c.get("name") for c in root.iter("testcase")] == ["chart/show-chart"]
    assert doc["views"][0]["readyMs"] is not None and doc["views"][0]["resultMs"] is not None
    assert (out / "chart__show-chart.png").read_bytes().startswith(PNG)


def test_check_over_the_npm_peers_and_the_demo_servers(tmp_path: Path) -> None:
    pdf = write_sample_pdf(tmp_path / "sample.pdf")
    peers = {
        "vanilla": ("mcp-server-basic-vanillajs",), "react": ("mcp-server-basic-react",),
        "budget": ("mcp-budget-allocator-server",), "segments": ("mcp-customer-segmentation-server",),
        "debug": ("mcp-server-debug", f"--log-file={tmp_path / 'debug.jsonl'}"), "pdf": ("mcp-pdf-server", str(pdf)),
        "map": ("mcp-map-server",), "video": ("mcp-video-resource-server",),
    }
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {
        name: {"command": "sh", "args": ["-c", f"exec {peer_stdio_command(*argv)}"]} for name, argv in peers.items()}}))
    rc, doc, root, _out, err = run_check(tmp_path, "--config", str(config), "--demo", "--timeout", "30",
                                         "--args", f'pdf/display_pdf={json.dumps({"url": pdf.as_uri()})}')
    by_name = cases(root)
    assert sorted(by_name) == sorted([
        "vanilla/get-time", "react/get-time", "budget/get-budget-data", "segments/get-customer-data",
        "debug/debug-tool", "pdf/display_pdf", "map/show-map", "video/play_video",
        "chart/show-chart", "forms/feedback-form", "table/browse-table"]), err
    # Offline, the map never loads its CDN script, and the video's resource read fails on the server.
    assert rc == 1
    map_failure = failure(by_name["map/show-map"])
    assert "never sent ui/initialize" in map_failure and "net::ERR_" in map_failure, map_failure
    video_failure = failure(by_name["video/play_video"])
    assert "resources/read videos://" in video_failure and "-32603" in video_failure, video_failure
    passing = {n: failure(c) for n, c in by_name.items() if n not in ("map/show-map", "video/play_video")}
    assert all(text == "" for text in passing.values()), {n: t for n, t in passing.items() if t}
    notes = {v["tool"]: v["notes"] for v in doc["views"]}
    assert any("app-only tools: read_pdf_bytes" in n or "read_pdf_bytes" in n for n in notes["display_pdf"])
