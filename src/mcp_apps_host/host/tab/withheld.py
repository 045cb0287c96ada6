"""A reply whose audit record the database could not take in time is not sent: the view is answered with
an error instead, so a view never holds an answer that is not on record."""

from __future__ import annotations

from ...errors import DatabaseUnavailable
from ...views.jsonrpc import INTERNAL_ERROR
from ...views.jsonrpc import error as error_reply
from . import frames as f
from .audit import Auditor


def is_reply(frame: f.HostFrame) -> bool:
    return isinstance(frame, f.ViewPost) and "id" in frame.message and (
        "result" in frame.message or "error" in frame.message)


def withhold(frame: f.HostFrame, error: DatabaseUnavailable, audit: Auditor) -> f.HostFrame:
    """The frame to send instead of ``frame``: a reply becomes an error reply (itself on record, as the
    rest, once the database takes writes again); anything else goes as it is."""
    if not isinstance(frame, f.ViewPost) or not is_reply(frame):
        return frame
    msg_id = frame.message["id"]
    audit("host->view", None, view=frame.view, msg_id=msg_id, decision="refused",
          reason=f"answered with an error instead: {error}")
    return f.ViewPost(view=frame.view, message=error_reply(msg_id, INTERNAL_ERROR, str(error)))
