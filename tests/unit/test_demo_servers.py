"""The bundled demo MCP App servers, driven for real over stdio (and once over Streamable HTTP)."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from mcp_apps_host.demo import _common, table
from mcp_apps_host.demo.catalog import DEMO_SERVERS

APP_MIME = "text/html;profile=mcp-app"

# tool name -> "view" (has a template, default visibility), "app" (app-only) or None (no view).
EXPECTED_TOOLS: dict[str, dict[str, str | None]] = {
    "chart": {"show-chart": "view", "chart-data": "app", "slow-report": None},
    "forms": {"feedback-form": "view", "submit-feedback": "app", "list-feedback": None},
    "table": {"browse-table": "view", "table-page": "app", "restock": None},
}

# The standard MCP Apps theming variables (spec 2026-01-26, Theming).
STANDARD_VARIABLES = {
    *(f"--color-background-{n}" for n in
      ["primary", "secondary", "tertiary", "inverse", "ghost", "info", "danger", "success", "warning", "disabled"]),
    *(f"--color-text-{n}" for n in
      ["primary", "secondary", "tertiary", "inverse", "info", "danger", "success", "warning", "disabled", "ghost"]),
    *(f"--color-border-{n}" for n in
      ["primary", "secondary", "tertiary", "inverse", "ghost", "info", "danger", "success", "warning", "disabled"]),
    *(f"--color-ring-{n}" for n in ["primary", "secondary", "inverse", "info", "danger", "success", "warning"]),
    "--font-sans", "--font-mono",
    *(f"--font-weight-{n}" for n in ["normal", "medium", "semibold", "bold"]),
    *(f"--font-text-{n}-{p}" for n in ["xs", "sm", "md", "lg"] for p in ("size", "line-height")),
    *(f"--font-heading-{n}-{p}" for n in ["xs", "sm", "md", "lg", "xl", "2xl", "3xl"] for p in ("size", "line-height")),
    *(f"--border-radius-{n}" for n in ["xs", "sm", "md", "lg", "xl", "full"]),
    "--border-width-regular",
    *(f"--shadow-{n}" for n in ["hairline", "sm", "md", "lg"]),
}


def params(name: str) -> StdioServerParameters:
    command, *args = DEMO_SERVERS[name]
    return StdioServerParameters(command=command, args=args)


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.content and result.content[0].type == "text" and result.content[0].text
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def test_standard_variable_list_is_complete() -> None:
    assert len(STANDARD_VARIABLES) == 76


def test_catalog_starts_each_demo_module() -> None:
    assert set(DEMO_SERVERS) == set(EXPECTED_TOOLS)
    for name, argv in DEMO_SERVERS.items():
        assert argv == [sys.executable, "-m", f"mcp_apps_host.demo.{name}"]


def test_load_view_requires_the_marker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "app_bridge.js").write_text("window.mcpApp = {};\n")
    (tmp_path / "app_base.css").write_text("body { margin: 0; }\n")
    (tmp_path / "good.html").write_text("<!DOCTYPE html><!-- app-base --><body><!-- app-bridge --></body>")
    (tmp_path / "bad.html").write_text("<!DOCTYPE html><body></body>")
    monkeypatch.setattr(_common, "HERE", tmp_path)
    expected = ("<!DOCTYPE html><style>\nbody { margin: 0; }\n</style>"
                "<body><script>\nwindow.mcpApp = {};\n</script></body>")
    assert _common.load_view("good.html") == expected
    with pytest.raises(ValueError, match="marker"):
        _common.load_view("bad.html")


@pytest.mark.anyio
@pytest.mark.parametrize("name", sorted(EXPECTED_TOOLS))
async def test_tools_and_templates(name: str) -> None:
    async with Client(params(name)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == set(EXPECTED_TOOLS[name])
        uris = set()
        for tool_name, kind in EXPECTED_TOOLS[name].items():
            ui = (tools[tool_name].meta or {}).get("ui")
            if kind is None:
                assert ui is None, tool_name
                continue
            assert ui["resourceUri"].startswith("ui://")
            uris.add(ui["resourceUri"])
            if kind == "app":
                assert ui["visibility"] == ["app"]
            else:
                assert "model" in ui.get("visibility", ["model", "app"])
        assert len(uris) == 1  # the app-only tool belongs to the same view

        for uri in uris:
            contents = (await client.read_resource(uri)).contents
            assert len(contents) == 1
            content = contents[0]
            assert content.mime_type == APP_MIME
            html = content.text
            assert html.lstrip().lower().startswith("<!doctype html>")
            assert "<!-- app-bridge -->" not in html
            assert "window.mcpApp = {" in html and '"ui/initialize"' in html  # the bridge is inlined
            assert "mcpApp.connect(" in html
            assert not re.search(r"""\b(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", html, re.IGNORECASE)
            assert not re.search(r"<script[^>]*\bsrc=|<link\b|@import", html, re.IGNORECASE)
            used = set(re.findall(r"var\(\s*(--[\w-]+)", html))
            defined = set(re.findall(r"(--[\w-]+)\s*:", html))
            assert used - defined - STANDARD_VARIABLES == set(), "unknown CSS variables"
            assert used & STANDARD_VARIABLES, "the view should use the host's theme variables"


@pytest.mark.anyio
async def test_chart_tools() -> None:
    async with Client(params("chart")) as client:
        data = structured(await client.call_tool("show-chart", {"metric": "users", "months": 6}))
        assert data["metric"] == "users" and data["months"] == 6
        assert len(data["points"]) == 6
        assert all(isinstance(p["value"], float) and p["value"] > 0 for p in data["points"])
        assert data["summary"]["last"] == data["points"][-1]["value"]

        default = structured(await client.call_tool("show-chart", {}))
        assert default["metric"] == "revenue" and len(default["points"]) == 12

        app = structured(await client.call_tool("chart-data", {"metric": "latency", "months": 3}))
        assert app["metric"] == "latency" and len(app["points"]) == 3
        again = structured(await client.call_tool("chart-data", {"metric": "latency", "months": 3}))
        assert again["points"] == app["points"]

        assert (await client.call_tool("chart-data", {"metric": "weather"})).is_error
        assert (await client.call_tool("show-chart", {"months": 0})).is_error


@pytest.mark.anyio
async def test_slow_report_reports_progress() -> None:
    updates: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total, message))

    async with Client(params("chart")) as client:
        started = time.monotonic()
        result = await client.call_tool("slow-report", {"seconds": 1}, progress_callback=on_progress)
        elapsed = time.monotonic() - started
    structured(result)
    assert elapsed >= 0.9
    assert len(updates) >= 4
    assert [u[0] for u in updates] == sorted(u[0] for u in updates)
    assert updates[-1][0] == updates[-1][1] == 4
    assert all(message for _, _, message in updates)


@pytest.mark.anyio
async def test_slow_report_stops_when_cancelled(tmp_path: Path) -> None:
    updates: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append(progress)

    with open(tmp_path / "stderr.log", "w") as errlog:
        async with Client(stdio_client(params("chart"), errlog=errlog)) as client:
            async with anyio.create_task_group() as group:

                async def report() -> None:
                    await client.call_tool("slow-report", {"seconds": 10}, progress_callback=on_progress)
                    raise AssertionError("the report finished before it was cancelled")

                group.start_soon(report)
                # Cancelled once it has reported progress (its 40 steps take 10 s).
                with anyio.fail_after(30):
                    while not updates:
                        await anyio.sleep(0.02)
                group.cancel_scope.cancel()
            assert 1 <= len(updates) < 40
            # The server notices the cancellation and logs it; it stays usable.
            with anyio.fail_after(30):
                while "slow-report cancelled" not in (tmp_path / "stderr.log").read_text():
                    await anyio.sleep(0.05)
            structured(await client.call_tool("chart-data", {"months": 2}))


@pytest.mark.anyio
async def test_forms_submit_validates_and_stores() -> None:
    async with Client(params("forms")) as client:
        form = structured(await client.call_tool("feedback-form", {"name": "Ada", "rating": 4}))
        assert form["prefill"] == {"name": "Ada", "rating": 4, "comment": ""}
        assert form["count"] == 0

        bad = await client.call_tool("submit-feedback", {"name": "  ", "rating": 9, "comment": "x" * 1001})
        assert bad.is_error
        assert set(bad.structured_content["errors"]) == {"name", "rating", "comment"}
        assert "rating" in bad.content[0].text

        wrong_type = await client.call_tool("submit-feedback", {"name": "Ada", "rating": "lots"})
        assert wrong_type.is_error

        empty = structured(await client.call_tool("list-feedback", {}))
        assert empty["items"] == []  # rejected submissions are not stored

        ok = structured(
            await client.call_tool("submit-feedback", {"name": " Ada ", "rating": 5, "comment": "Nice"})
        )
        assert ok["entry"]["id"] == 1 and ok["entry"]["name"] == "Ada" and ok["count"] == 1
        structured(await client.call_tool("submit-feedback", {"name": "Grace", "rating": 2}))

        listed = await client.call_tool("list-feedback", {})
        items = structured(listed)["items"]
        assert [(i["name"], i["rating"], i["comment"]) for i in items] == [
            ("Ada", 5, "Nice"),
            ("Grace", 2, ""),
        ]
        assert structured(listed)["averageRating"] == 3.5
        assert "Ada" in listed.content[0].text and "Grace" in listed.content[0].text


@pytest.mark.anyio
async def test_a_restock_changes_the_catalogue_its_tables_follow() -> None:
    product = table.PRODUCTS[0]
    async with Client(params("table")) as client:
        before = json.loads((await client.read_resource(table.CATALOGUE_URI)).contents[0].text)
        done = structured(await client.call_tool("restock", {"sku": product["sku"].lower(), "quantity": 5}))
        assert done == {"sku": product["sku"], "stock": product["stock"] + 5}
        page = structured(await client.call_tool("table-page", {"query": product["sku"]}))
        assert page["rows"][0]["stock"] == product["stock"] + 5
        after = json.loads((await client.read_resource(table.CATALOGUE_URI)).contents[0].text)
        assert after["stock"] == before["stock"] + 5
        unknown = await client.call_tool("restock", {"sku": "NOPE-0000", "quantity": 1})
        assert unknown.is_error and "NOPE-0000" in unknown.content[0].text


@pytest.mark.anyio
async def test_table_pages_sorts_and_filters() -> None:
    async with Client(params("table")) as client:
        first = structured(await client.call_tool("browse-table", {}))
        assert first["total"] == 200 and first["page"] == 1 and first["pages"] == 20
        assert [r["id"] for r in first["rows"]] == list(range(1, 11))
        # The data is generated from a fixed seed: the server process agrees with this one.
        assert first["rows"] == table.PRODUCTS[:10]

        args = {"page": 3, "pageSize": 7, "query": "", "sort": ""}
        page3 = structured(await client.call_tool("table-page", args))
        assert [r["id"] for r in page3["rows"]] == list(range(15, 22))

        rows = []
        for page in (1, 2):
            args = {"page": page, "pageSize": 100, "sort": "-price"}
            rows += structured(await client.call_tool("table-page", args))["rows"]
        prices = [r["price"] for r in rows]
        assert len(prices) == 200 and prices == sorted(prices, reverse=True)
        assert prices[0] == max(p["price"] for p in table.PRODUCTS)

        by_name = structured(await client.call_tool("table-page", {"page": 2, "pageSize": 5, "sort": "name"}))
        expected = sorted(table.PRODUCTS, key=lambda r: (r["name"], r["id"]))[5:10]
        assert by_name["rows"] == expected

        lamps = structured(await client.call_tool("table-page", {"page": 1, "pageSize": 50, "query": "LAMP"}))
        assert 0 < lamps["total"] < 200 and len(lamps["rows"]) == lamps["total"]
        assert all("lamp" in r["name"].lower() for r in lamps["rows"])
        assert lamps["total"] == sum("lamp" in r["name"].lower() for r in table.PRODUCTS)

        past_end = structured(await client.call_tool("table-page", {"page": 999, "pageSize": 10}))
        assert past_end["page"] == 20 and [r["id"] for r in past_end["rows"]] == list(range(191, 201))

        assert (await client.call_tool("table-page", {"sort": "-bogus"})).is_error
        assert (await client.call_tool("table-page", {"pageSize": 0})).is_error


@pytest.mark.anyio
async def test_each_table_is_named_by_a_fresh_view_uuid() -> None:
    # The view keeps its state in localStorage under _meta.viewUUID: one id per call, so each table is its own.
    async with Client(params("table")) as client:
        ids = [(await client.call_tool("browse-table", {})).meta["viewUUID"] for _ in range(2)]
        assert all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids) and ids[0] != ids[1], ids
        # A page the view asks for is not another view instance.
        assert "viewUUID" not in ((await client.call_tool("table-page", {})).meta or {})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.anyio
async def test_table_over_streamable_http() -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [*DEMO_SERVERS["table"], "--http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            assert proc.poll() is None, "server exited"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "server did not start listening"
                await anyio.sleep(0.1)

        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert tools["table-page"].meta["ui"]["visibility"] == ["app"]
            page = structured(await client.call_tool("table-page", {"page": 2, "pageSize": 10}))
            assert [r["id"] for r in page["rows"]] == list(range(11, 21))
            uri = tools["browse-table"].meta["ui"]["resourceUri"]
            assert (await client.read_resource(uri)).contents[0].mime_type == APP_MIME
    finally:
        proc.terminate()
        proc.wait(timeout=10)
