"""Demo MCP App "forms": a feedback form view whose submissions go through an app-only tool.

Run: python -m mcp_apps_host.demo.forms [--http PORT]
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

from mcp.server.apps import Apps
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from mcp_apps_host.demo._common import load_view, result, run
from mcp_apps_host.version import __version__

VIEW_URI = "ui://forms/feedback.html"
MAX_NAME = 80
MAX_COMMENT = 1000

# Submissions live as long as the server process; this is a demo, not a database.
FEEDBACK: list[dict[str, Any]] = []


def validate(name: str, rating: int, comment: str) -> dict[str, str]:
    """Field name -> problem, for every field that is not acceptable."""
    errors: dict[str, str] = {}
    if not name.strip():
        errors["name"] = "Please enter your name."
    elif len(name.strip()) > MAX_NAME:
        errors["name"] = f"Keep the name under {MAX_NAME} characters."
    if not 1 <= rating <= 5:
        errors["rating"] = "Choose a rating from 1 to 5 stars."
    if len(comment) > MAX_COMMENT:
        errors["comment"] = f"Keep the comment under {MAX_COMMENT} characters (it has {len(comment)})."
    return errors


def summary() -> dict[str, Any]:
    count = len(FEEDBACK)
    average = round(sum(f["rating"] for f in FEEDBACK) / count, 2) if count else None
    return {"count": count, "averageRating": average}


apps = Apps()
apps.add_html_resource(
    VIEW_URI,
    load_view("forms.html"),
    name="feedback-form",
    title="Feedback form",
    description="A feedback form (name, rating, comment)",
    prefers_border=True,
)


@apps.tool(
    resource_uri=VIEW_URI,
    name="feedback-form",
    annotations=ToolAnnotations(read_only_hint=True),
    title="Feedback form",
    description=(
        "Show the person a feedback form (name, 1-5 star rating, comment). Any fields given here are "
        "pre-filled; the person reviews and submits the form themselves."
    ),
)
def feedback_form(
    name: Annotated[str, Field(description="Pre-fill: the person's name")] = "",
    rating: Annotated[int | None, Field(ge=1, le=5, description="Pre-fill: rating 1-5")] = None,
    comment: Annotated[str, Field(description="Pre-fill: comment text")] = "",
) -> CallToolResult:
    prefill = {"name": name, "rating": rating, "comment": comment}
    text = "Showed a feedback form to the person. Nothing is recorded until they submit it."
    return result(text, {"prefill": prefill, **summary()})


@apps.tool(
    resource_uri=VIEW_URI,
    visibility=["app"],
    name="submit-feedback",
    description="Validate and record one feedback submission (called by the form view only).",
)
def submit_feedback(
    name: Annotated[str, Field(description="Name of the person giving feedback")] = "",
    rating: Annotated[int, Field(description="Rating from 1 to 5")] = 0,
    comment: Annotated[str, Field(description="Optional comment")] = "",
) -> CallToolResult:
    # Ranges are checked here rather than in the schema so the view gets a message per field.
    errors = validate(name, rating, comment)
    if errors:
        return result("Feedback not recorded: " + " ".join(errors.values()), {"errors": errors}, error=True)
    entry = {
        "id": len(FEEDBACK) + 1,
        "name": name.strip(),
        "rating": rating,
        "comment": comment.strip(),
        "submittedAt": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    FEEDBACK.append(entry)
    stats = summary()
    text = (
        f"Thanks, {entry['name']}! Feedback #{entry['id']} recorded ({rating}/5). "
        f"{stats['count']} response(s) so far, average {stats['averageRating']}/5."
    )
    return result(text, {"entry": entry, **stats})


mcp = MCPServer("forms", version=__version__, extensions=[apps])


@mcp.tool(
    name="list-feedback",
    annotations=ToolAnnotations(read_only_hint=True),
    title="List feedback",
    description="List the feedback submitted through the feedback form since the server started.",
)
def list_feedback() -> CallToolResult:
    stats = summary()
    if not FEEDBACK:
        return result("No feedback has been submitted yet.", {"items": [], **stats})
    lines = [f"{stats['count']} response(s), average rating {stats['averageRating']}/5:"]
    for f in FEEDBACK:
        comment = f" - {f['comment']}" if f["comment"] else ""
        lines.append(f"#{f['id']} {f['name']} rated {f['rating']}/5{comment}")
    return result("\n".join(lines), {"items": FEEDBACK, **stats})


def main() -> None:
    run(mcp)


if __name__ == "__main__":
    main()
