"""`ui/download-file`: one consent for every file a request names, then the files are saved.

An item is an embedded resource (the bytes are in the request) or a resource link: an
http(s) link is fetched by the person's browser, as if they had opened it; any other URI
names a resource of the view's own server, which the host reads for it (a view may read
those anyway). File names are the last segment of the URI (or the link's name), made safe.
"""

from __future__ import annotations

from typing import Any, Protocol
from urllib.parse import urlsplit

from ..values import protocol as M
from ..values.decisions import ConsentKind
from ..values.links import sanitize_filename
from . import jsonrpc as rpc
from .context import ViewSpec
from .effects import Download, Effect, SaveFiles
from .jsonrpc import Request

OCTET_STREAM = "application/octet-stream"


class Session(Protocol):
    spec: ViewSpec

    def reject(self, req: Request, code: int, reason: str) -> list[Effect]: ...

    def ask(self, req: Request, kind: ConsentKind, title: str, detail: str, on_allow: list[Effect], *,
            answer_later: bool = False, subject: str = "", can_remember: bool = False,
            reason: str = "needs the person's consent", extra: dict[str, Any] | None = None) -> list[Effect]: ...


def _item(block: Any, max_bytes: int) -> Download | str:
    """One file of the request, or what is wrong with it."""
    if not isinstance(block, dict):
        return "an item is not an object"
    mime = block.get("mimeType")
    if block.get("type") == "resource_link":
        uri = block.get("uri")
        if not isinstance(uri, str) or not uri or any(c.isspace() for c in uri):
            return 'a resource_link needs a "uri" (string)'
        name = block.get("name")
        filename = sanitize_filename(name if isinstance(name, str) and name.strip() else uri)
        mime = str(mime) if isinstance(mime, str) else OCTET_STREAM
        if urlsplit(uri).scheme in ("http", "https"):
            return Download(filename, mime, None, None, url=uri)
        return Download(filename, mime, None, None, resource_uri=uri)
    res = block.get("resource") if block.get("type") == "resource" else None
    if not isinstance(res, dict) or not isinstance(res.get("uri"), str):
        return 'an item must be an embedded resource (type "resource") or a resource_link'
    text, blob = res.get("text"), res.get("blob")
    if not isinstance(text, str) and not isinstance(blob, str):
        return "the resource has neither text nor blob"
    size = len(text.encode("utf-8")) if isinstance(text, str) else len(str(blob)) * 3 // 4
    if size > max_bytes:
        return f"{size} bytes is larger than max_download_bytes ({max_bytes})"
    mime = res.get("mimeType")
    return Download(sanitize_filename(res["uri"]), str(mime) if isinstance(mime, str) else OCTET_STREAM,
                    text if isinstance(text, str) else None, blob if isinstance(blob, str) else None)


def describe(file: Download, server: str) -> str:
    """One line of the consent dialog for ``file``."""
    if file.url is not None:
        return f"{file.filename} · {file.mime_type} · your browser downloads it from {file.url}"
    if file.resource_uri is not None:
        return f"{file.filename} · {file.mime_type} · read from server {server} ({file.resource_uri})"
    size = len(file.text.encode("utf-8")) if file.text is not None else len(file.blob or "") * 3 // 4
    return f"{file.filename} · {human_size(size)} · {file.mime_type}"


def download_file(s: Session, req: Request) -> list[Effect]:
    contents = req.params.get("contents")
    limit = s.spec.max_download_files
    if not isinstance(contents, list) or not contents:
        return s.reject(req, rpc.INVALID_PARAMS, 'ui/download-file needs "contents": an array of resources')
    if len(contents) > limit:
        return s.reject(req, rpc.REFUSED, f"ui/download-file: {len(contents)} files is more than "
                                          f"max_download_files ({limit})")
    files: list[Download] = []
    for n, block in enumerate(contents):
        item = _item(block, s.spec.max_download_bytes)
        if isinstance(item, str):
            code = rpc.REFUSED if "max_download_bytes" in item else rpc.INVALID_PARAMS
            return s.reject(req, code, f"{M.DOWNLOAD_FILE}: contents[{n}]: {item}")
        files.append(item)
    server = s.spec.server
    detail = "\n".join(describe(f, server) for f in files)
    title = f"{server} wants to save {'a file' if len(files) == 1 else f'{len(files)} files'}"
    subject = files[0].filename if len(files) == 1 else f"{len(files)} files"
    if all(f.url is None and f.resource_uri is None for f in files):
        return s.ask(req, "download", title, detail, list(files), subject=subject)
    return s.ask(req, "download", title, detail, [SaveFiles(req.id, tuple(files))], answer_later=True,
                 subject=subject)


def human_size(size: int) -> str:
    if size < 1024:
        return f"{size} bytes"
    value = size / 1024
    return f"{value:.1f} KB" if value < 1024 else f"{value / 1024:.1f} MB"


def read_as_file(file: Download, read_result: dict[str, Any], max_bytes: int) -> Download | str:
    """The file a `resources/read` result holds for ``file`` (a server resource link), or why not."""
    contents = read_result.get("contents")
    item = contents[0] if isinstance(contents, list) and contents and isinstance(contents[0], dict) else None
    if item is None:
        return f"{file.resource_uri}: resources/read returned no contents"
    text, blob = item.get("text"), item.get("blob")
    if not isinstance(text, str) and not isinstance(blob, str):
        return f"{file.resource_uri}: the resource has neither text nor blob"
    size = len(text.encode("utf-8")) if isinstance(text, str) else len(str(blob)) * 3 // 4
    if size > max_bytes:
        return f"{file.resource_uri}: {size} bytes is larger than max_download_bytes ({max_bytes})"
    mime = item.get("mimeType") if isinstance(item.get("mimeType"), str) else file.mime_type
    return Download(file.filename, str(mime), text if isinstance(text, str) else None,
                    blob if isinstance(blob, str) else None)

