"""Where a view is shown and how big: display modes (inline, fullscreen, pip) and size changes.

The part of `ViewSession` that answers the person's and the view's wishes about the view's place:
only modes the view declared, the container's measured size announced once per change, and a
view's own size clamped to the host's limits and, inline, to `inline_max_height`.
"""

from __future__ import annotations

import math
from typing import Any

from ..settings import Limits
from ..values import protocol as M
from ..values.protocol import DISPLAY_MODES
from . import jsonrpc as rpc
from .context import HostEnvironment
from .effects import DisplayModeChanged, Effect, Log, PostToView, Refused, Resize, ViewState


class DisplayControl:
    env: HostEnvironment
    limits: Limits
    state: ViewState
    app_capabilities: dict[str, Any]
    display_mode: str
    _announced: tuple[str, dict[str, Any]]  # the mode and container dimensions the view was last told of
    _told_cap: bool  # the view was told its inline height is capped

    def available_modes(self) -> list[str]:
        """The modes this view may be shown in: inline, and those it declared in
        appCapabilities.availableDisplayModes that the host supports."""
        declared = self.app_capabilities.get("availableDisplayModes")
        declared = declared if isinstance(declared, list) else []
        return [m for m in DISPLAY_MODES if m == "inline" or m in declared]

    def set_display_mode(self, mode: str) -> list[Effect]:
        """The person switched the mode (the view's header, Escape, the close control)."""
        return self.switch_display_mode(mode)

    def switch_display_mode(self, mode: str) -> list[Effect]:
        """The person's or the inspector's control: any mode the view declared. The page places the view
        and measures it; `container_measured` then tells the view (`host-context-changed`)."""
        if mode not in DISPLAY_MODES or self.state != ViewState.READY:
            return []
        available = self.available_modes()
        if mode not in available:
            declared = [m for m in available if m != "inline"]
            return [Log("warning", f"display mode {mode!r} not switched: the view did not declare it in "
                                   f"appCapabilities.availableDisplayModes ({declared or 'none'})")]
        if mode == self.display_mode:
            return []
        self.display_mode = mode
        return [DisplayModeChanged(mode)]

    def container_measured(self, mode: str, width: int, height: int) -> list[Effect]:
        """The page placed the view in ``mode`` and measured its container: the view hears the mode with
        the container's new dimensions in one `host-context-changed`."""
        if self.state != ViewState.READY or mode != self.display_mode:
            return []  # a measurement of a mode since left: the next one follows
        if mode == "inline":
            dims: dict[str, Any] = {"width": width, "maxHeight": self.limits.inline_max_height}
        else:
            dims = {"width": width, "height": height}
        if (mode, dims) == self._announced:
            return []
        first = self._announced[0] != mode
        self._announced = (mode, dims)
        params: dict[str, Any] = {"displayMode": mode, "containerDimensions": dims}
        if first:
            # The host draws its controls outside the view's frame, so nothing of the view is covered.
            params["safeAreaInsets"] = {"top": 0, "right": 0, "bottom": 0, "left": 0}
        return [PostToView(rpc.notification(M.HOST_CONTEXT_CHANGED, params))]

    def resized(self, params: dict[str, Any]) -> list[Effect]:
        """`ui/notifications/size-changed` from the view."""
        resize = size_changed(params, self.limits)
        if isinstance(resize, Resize) and (self.env.container_width or self.env.container_height):
            # A fixed dimension is the host's to set; the view may change only a flexible one.
            resize = Resize(None if self.env.container_width else resize.width,
                            None if self.env.container_height else resize.height)
        return self._capped(resize)

    def _capped(self, resize: Effect) -> list[Effect]:
        """Inline, a view grows with its content up to inline_max_height (its containerDimensions.maxHeight).
        Content sized with 100vh grows with its frame and asks again, for ever: the cap ends that loop, and
        the first time the view is told why in its log."""
        cap = self.limits.inline_max_height
        if (not isinstance(resize, Resize) or resize.height is None or resize.height <= cap
                or self.display_mode != "inline"):
            return [resize]
        effects: list[Effect] = [Resize(resize.width, cap)]
        if not self._told_cap:
            self._told_cap = True
            effects.append(Log("warning", f"the view asked for {resize.height} px, more than inline_max_height "
                                          f"({cap} px): shown at {cap} px. Content sized with 100vh grows with its "
                                          "frame and never settles; size it to its content, or scroll inside."))
        return effects


def size_changed(params: dict[str, Any], limits: Limits) -> Effect:
    """`ui/notifications/size-changed`, clamped to the host's limits."""
    def clamp(value: Any, limit: int) -> int | None:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return None
        return max(0, min(math.ceil(value), limit))

    width = clamp(params.get("width"), limits.max_view_width)
    height = clamp(params.get("height"), limits.max_view_height)
    if width is None and height is None:
        return Refused(M.SIZE_CHANGED, "size-changed without a numeric width or height")
    return Resize(width, height)
