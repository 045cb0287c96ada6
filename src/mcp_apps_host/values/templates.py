"""A view's template: the HTML behind a `ui://` URI, its hash and what it declared."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .csp import ViewCsp


@dataclass(frozen=True)
class Template:
    server: str
    uri: str
    html: str
    sha256: str
    csp: ViewCsp
    permissions: dict[str, Any] = field(default_factory=dict)
    domain: str | None = None
    prefers_border: bool | None = None
    warnings: tuple[str, ...] = ()  # what a static review found risky (shown next to the view)
    compat: str | None = None  # "openai": an OpenAI Apps SDK widget, run with the window.openai shim

    @property
    def size(self) -> int:
        return len(self.html.encode("utf-8"))

    def meta(self) -> dict[str, Any]:
        """What a stored template needs besides its HTML to render again the same way."""
        return {"csp": self.csp.to_json(), "permissions": self.permissions, "domain": self.domain,
                "prefersBorder": self.prefers_border, "compat": self.compat}

    @classmethod
    def from_stored(cls, row: dict[str, Any]) -> Template:
        """The inverse of storing ``html`` with :meth:`meta`."""
        meta = row.get("meta") or {}
        return cls(server=row["server"], uri=row["uri"], html=row["html"], sha256=row["sha256"],
                   csp=ViewCsp.from_meta(meta.get("csp")), permissions=meta.get("permissions") or {},
                   domain=meta.get("domain"), prefers_border=meta.get("prefersBorder"),
                   compat=meta.get("compat") if meta.get("compat") == "openai" else None)
