"""Roots: the directories a server may work in (MCP `roots/list`), from the config file
(`"roots": [...]` in an `mcpServers` entry) and from `--root [SERVER=]PATH` on the command line.

A root is a `file://` URI; a path is turned into one (relative paths from the config file's
folder, or from the current folder on the command line). A path that does not exist is
an error, so a typo does not silently give a server nothing.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlsplit

from ..errors import ConfigError


def root_uri(text: str, base: Path, where: str) -> str:
    """The `file://` URI of a root given as a URI or a path."""
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(f"{where}: a root must be a file:// URI or a path, not {text!r}")
    if text.startswith("file://"):
        parts = urlsplit(text)
        if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
            raise ConfigError(f"{where}: {text!r} is not a local file:// URI (file:///absolute/path)")
        return f"file://{parts.path}" if parts.netloc else text
    if "://" in text:
        raise ConfigError(f"{where}: {text!r}: roots are file:// URIs or paths")
    path = Path(text).expanduser()
    path = (path if path.is_absolute() else base / path).resolve()
    if not path.exists():
        raise ConfigError(f"{where}: {str(path)!r} does not exist")
    return path.as_uri()


def root_name(uri: str) -> str:
    """A short name for a root: its last path segment."""
    return unquote(urlsplit(uri).path.rstrip("/").rsplit("/", 1)[-1]) or "/"


def parse_roots(value: object, base: Path, where: str) -> tuple[str, ...]:
    """The `"roots"` of one `mcpServers` entry."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ConfigError(f'{where}: "roots" must be a list of file:// URIs or paths')
    return tuple(dict.fromkeys(root_uri(v, base, f"{where}.roots[{i}]") for i, v in enumerate(value)))
