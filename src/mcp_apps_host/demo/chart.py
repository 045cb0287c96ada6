"""Demo MCP App "chart": an interactive chart view, an app-only data tool and a slow, cancellable tool.

Run: python -m mcp_apps_host.demo.chart [--http PORT]
"""

from __future__ import annotations

import datetime as dt
import logging
import random
from typing import Annotated, Any, Literal

import anyio
from mcp.server.apps import Apps
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from mcp_apps_host.demo._common import load_view, result, run
from mcp_apps_host.version import __version__

log = logging.getLogger(__name__)

VIEW_URI = "ui://chart/chart.html"
Metric = Literal["revenue", "users", "latency"]
Months = Annotated[int, Field(ge=1, le=36, description="How many months back from this month")]

# base is the value in January 2024; growth is per month (latency improves, so it is negative).
METRICS: dict[str, dict[str, Any]] = {
    "revenue": {"label": "Revenue", "unit": "USD", "base": 42_000.0, "growth": 0.025, "noise": 0.08},
    "users": {"label": "Active users", "unit": "users", "base": 12_000.0, "growth": 0.04, "noise": 0.05},
    "latency": {"label": "p95 latency", "unit": "ms", "base": 240.0, "growth": -0.012, "noise": 0.12},
}


def _value(metric: str, month_index: int) -> float:
    spec = METRICS[metric]
    # Seeded per metric and calendar month, so a month keeps its value across calls and restarts.
    rng = random.Random(f"{metric}:{month_index}")
    trend = spec["base"] * (1 + spec["growth"]) ** (month_index - 2024 * 12)
    value = trend * (1 + spec["noise"] * rng.uniform(-1, 1))
    return float(round(value, 1 if metric == "latency" else 0))


def series(metric: str, months: int, today: dt.date | None = None) -> dict[str, Any]:
    """The last `months` calendar months of `metric`, oldest first, with a summary."""
    today = today or dt.date.today()
    end = today.year * 12 + today.month - 1
    points: list[dict[str, Any]] = []
    for index in range(end - months + 1, end + 1):
        month = dt.date(index // 12, index % 12 + 1, 1)
        label = month.strftime("%b %Y")
        points.append({"month": month.strftime("%Y-%m"), "label": label, "value": _value(metric, index)})
    values: list[float] = [p["value"] for p in points]
    first, last = values[0], values[-1]
    spec = METRICS[metric]
    return {
        "metric": metric,
        "label": spec["label"],
        "unit": spec["unit"],
        "months": months,
        "points": points,
        "summary": {
            "first": first,
            "last": last,
            "min": min(values),
            "max": max(values),
            "average": round(sum(values) / len(values), 1),
            "changePercent": round((last - first) / first * 100, 1),
            # For latency a drop is the good direction; the view colours the change with this.
            "higherIsBetter": spec["growth"] > 0,
        },
    }


def _fmt(value: float, unit: str) -> str:
    if unit == "USD":
        return f"${value:,.0f}"
    if unit == "ms":
        return f"{value:,.1f} ms"
    return f"{value:,.0f}"


def describe(data: dict[str, Any]) -> str:
    """Plain-text version of a series, for the model and for hosts without MCP Apps."""
    s, unit, points = data["summary"], data["unit"], data["points"]
    listing = "; ".join(f"{p['label']}: {_fmt(p['value'], unit)}" for p in points)
    span = f"{points[0]['label']} to {points[-1]['label']}"
    return (
        f"{data['label']} over the last {data['months']} months ({span}): "
        f"latest {_fmt(s['last'], unit)}, {s['changePercent']:+.1f}% over the period, "
        f"min {_fmt(s['min'], unit)}, max {_fmt(s['max'], unit)}, average {_fmt(s['average'], unit)}.\n"
        f"Monthly values: {listing}."
    )


apps = Apps()
apps.add_html_resource(
    VIEW_URI,
    load_view("chart.html"),
    name="chart",
    title="Metric chart",
    description="Interactive bar/line chart of a business metric",
    prefers_border=True,
)


@apps.tool(
    resource_uri=VIEW_URI,
    name="show-chart",
    annotations=ToolAnnotations(read_only_hint=True),
    title="Show metric chart",
    description=(
        "Show a monthly chart of a business metric (revenue, users or latency) for the last N months. "
        "The person can hover for values and switch metrics in the chart."
    ),
)
def show_chart(metric: Metric = "revenue", months: Months = 12) -> CallToolResult:
    data = series(metric, months)
    return result(describe(data), data)


@apps.tool(
    resource_uri=VIEW_URI,
    visibility=["app"],
    name="chart-data",
    annotations=ToolAnnotations(read_only_hint=True),
    description="Series for the chart view when the person switches metric (called by the view only).",
)
def chart_data(metric: Metric = "revenue", months: Months = 12) -> CallToolResult:
    data = series(metric, months)
    return result(f"{data['label']}: {len(data['points'])} monthly points.", data)


mcp = MCPServer("chart", version=__version__, extensions=[apps])


@mcp.tool(
    name="slow-report",
    annotations=ToolAnnotations(read_only_hint=True),
    title="Slow report",
    description=(
        "Build a report that takes a while (default 5 seconds), reporting progress about every "
        "quarter second. Useful to try progress display and cancellation."
    ),
)
async def slow_report(
    ctx: Context,
    seconds: Annotated[float, Field(gt=0, le=300, description="How long the report takes")] = 5,
) -> CallToolResult:
    tick = 0.25
    steps = max(1, round(seconds / tick))
    done = 0
    try:
        await ctx.report_progress(0, steps, "Starting the report")
        while done < steps:
            await anyio.sleep(tick)
            done += 1
            await ctx.report_progress(done, steps, f"Crunching numbers: step {done} of {steps}")
    except anyio.get_cancelled_exc_class():
        # Cancellation arrives as an exception at the next await; note it and let it propagate.
        log.info("slow-report cancelled after %d of %d steps", done, steps)
        raise
    data = {"seconds": seconds, "steps": steps, "finishedAt": dt.datetime.now(dt.UTC).isoformat()}
    return result(f"Report finished after {seconds:g} seconds ({steps} steps).", data)


def main() -> None:
    run(mcp)


if __name__ == "__main__":
    main()
